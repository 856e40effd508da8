"""Secrets: ``${NAME}`` from the environment, and masking in text and in log records."""

from __future__ import annotations

import ast
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

import nornir_bench
from nornir_bench.core.secrets import (
    MASK,
    Redactor,
    SecretError,
    encoded_forms,
    expand_env,
    is_secret_key,
    mask_config_secrets,
)


def test_expand_env_fills_in_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NB_A", "alpha")
    assert expand_env("${NB_A}-${NB_A}", "x") == "alpha-alpha"
    assert expand_env("no reference, $NB_A stays", "x") == "no reference, $NB_A stays"


def test_an_unset_variable_is_named_with_where_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NB_UNSET", raising=False)
    with pytest.raises(
        SecretError, match=r"^hosts.yaml r1 password: environment variable NB_UNSET is not set$"
    ):
        expand_env("${NB_UNSET}", "hosts.yaml r1 password")


def test_secret_keys() -> None:
    assert all(map(is_secret_key, ["password", "enable_secret", "api_token", "Passphrase"]))
    assert not any(map(is_secret_key, ["username", "hostname", "port", 3]))


def test_the_redactor_masks_longest_first_and_inside_structures() -> None:
    redact = Redactor(["abc", "abcdef", ""])
    assert redact("x abcdef y abc") == f"x {MASK} y {MASK}"
    assert redact.value({"k": ["abc", ("abcdef",)], "abc": 1}) == {"k": [MASK, [MASK]], MASK: 1}


def test_the_redactor_masks_log_messages_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("nornir_bench.test_secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        Redactor(["pw-123"]).install([logger.name])
        logger.error("login %s failed", "pw-123")
        try:
            raise ValueError("bad pw-123")
        except ValueError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "pw-123" not in text
    assert f"login {MASK} failed" in text and f"ValueError: bad {MASK}" in text


def test_the_escaped_forms_of_a_secret_are_masked_too() -> None:
    secret = 'ab"c\\d é/+'
    redact = Redactor([secret])
    for text in (
        json.dumps({"message": f"login failed with {secret}"}),
        repr(["login", secret]),
        repr(secret.encode()),
        f"ssh://user:{quote(secret, safe='')}@host",
        f"https://host/?pw={quote_plus(secret)}",
    ):
        assert MASK in redact(text), text
        for form in encoded_forms(secret):
            assert form not in redact(text), (text, form)


def test_installed_filters_are_removed_after_the_block() -> None:
    handler = logging.StreamHandler(io.StringIO())
    logger = logging.getLogger("nornir_bench.test_secrets.installed")
    logger.addHandler(handler)
    try:
        for _ in range(3):  # a process running job after job
            with Redactor(["pw-123"]).installed([logger.name]):
                assert len(handler.filters) == 1
        assert handler.filters == []
    finally:
        logger.removeHandler(handler)


def test_a_quote_escaped_inside_a_longer_repr_is_masked() -> None:
    """repr escapes ' as \\' when the text around the secret holds both kinds of quote."""
    secret = "it's-s3cret"
    text = repr(f'"{secret}"')  # '"it\'s-s3cret"'
    assert secret.replace("'", "\\'") in text
    assert Redactor([secret])(text) == repr('"********"')


@pytest.mark.parametrize(
    ("line", "masked"),
    [
        ("username admin secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0",
         "username admin secret 5 ********"),
        ("enable secret s3cret", "enable secret ********"),
        (" neighbor 192.0.2.1 password hunter2", " neighbor 192.0.2.1 password ********"),
        ('+ neighbor 192.0.2.1 password "q\\"uo\\\\te"', "+ neighbor 192.0.2.1 password ********"),
        ("snmp-server community pub'lic RO", "snmp-server community ******** RO"),
        ("tacacs-server key k3y", "tacacs-server key ********"),
        ("  key-string a\\b", "  key-string ********"),
        ("username bob password 0 plain", "username bob password 0 ********"),
        ("ip route 203.0.113.0/24 Null0", "ip route 203.0.113.0/24 Null0"),
        ("no bgp network import-check", "no bgp network import-check"),
        (" neighbor 192.0.2.1 send-community both", " neighbor 192.0.2.1 send-community both"),
        ("line vty 0 4\n no password\n login", "line vty 0 4\n no password\n login"),
        ("set system login user ops authentication encrypted-password $6$x",
         "set system login user ops authentication encrypted-password ********"),
    ],
)
def test_secrets_in_configuration_text_are_masked(line: str, masked: str) -> None:
    assert mask_config_secrets(line) == masked
    assert Redactor()(line) == masked  # whatever a job shows, records or logs


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # the first and last lines, no newline at the end, keywords in any case
        ("PASSWORD one\nhostname r1\nsnmp-server Community two RO",
         "PASSWORD ********\nhostname r1\nsnmp-server Community ******** RO"),
        # two secrets on a line, a line holding a keyword but no setting, Windows line ends
        ("key chain k\r\n key-string 7 three secret four\r\n",
         "key chain k\r\n key-string 7 ******** secret ********\r\n"),
        # a character whose lowercase is two: the text is scanned whole
        ("description \u0130stanbul\nusername x secret 5 five\n",
         "description \u0130stanbul\nusername x secret 5 ********\n"),
        # a keyword inside a longer word, and the same line found by two keywords
        ("keychain\nusername a password secret-x\n",
         "keychain\nusername a password ********\n"),
    ],
)
def test_every_line_of_a_configuration_holding_a_secret_is_masked(text: str, masked: str) -> None:
    """The configuration is scanned only where a keyword is: none is missed on the first or
    last line, in capitals, beside another, or when lowercasing changes the text's length."""
    assert mask_config_secrets(text) == masked


def test_secrets_in_parsed_device_data_and_in_xml_are_masked_in_what_is_recorded() -> None:
    """A NETCONF read's result, parsed (a mapping) or as the XML the device sent: a user's
    password under its key, a secret element's text; a setting that is no secret kept."""
    data = {"system": {"authentication": {"user": [
        {"name": "ops", "password": "$0$s3cret", "shared-secret": 123456}]},
        "keep_secrets": True}}
    assert Redactor().value(data) == {"system": {"authentication": {"user": [
        {"name": "ops", "password": "********", "shared-secret": "********"}]},
        "keep_secrets": True}}
    xml = '<user><name>ops</name><password xmlns:x="y">$0$s3cret</password></user>'
    masked = '<user><name>ops</name><password xmlns:x="y">********</password></user>'
    assert Redactor()(xml) == masked


def test_the_terminal_is_masked_line_by_line_and_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A secret written in pieces (``print(..., end="")``), a progress bar's ``\\r`` line, a
    line left open, nested blocks; the streams as they were after."""
    import io
    import sys

    from nornir_bench.core.secrets import masked_terminal, terminal_secrets

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    with masked_terminal(["Hunter2"]):
        print("a Hunt", end="")
        print("er2 b")
        sys.stdout.write("bar Hunter2\r")
        sys.stdout.write("open Hunter2")
        with masked_terminal(["other"]):
            assert terminal_secrets() == ("Hunter2", "other")
            print(" other")
        assert terminal_secrets() == ("Hunter2",)
    assert sys.stdout is out and terminal_secrets() == ()
    assert out.getvalue() == "a ******** b\nbar ********\ropen ******** ********\n"


def _project_messages() -> Iterator[tuple[str, str]]:
    """Every text the package writes, with where it is: its string literals and f-strings
    (each placeholder as ``{}``), docstrings aside."""
    package = Path(nornir_bench.__file__).parent
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {  # docstrings, and the literal parts of f-strings (read with their f-string)
            id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        } | {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for part in node.values}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(
                    str(part.value) if isinstance(part, ast.Constant) else "{}"
                    for part in node.values
                )
            else:
                continue
            yield f"{path.relative_to(package.parent)}:{node.lineno}", text


def test_the_projects_own_messages_are_never_masked() -> None:
    """A secret is masked where one stands, not in what the project writes: every message
    holding ``password`` (or another secret's keyword) reads as written after masking."""
    messages = list(_project_messages())
    keywords = re.compile(r"\b(?:password|secret|community|key-string)\b", re.IGNORECASE)
    assert sum(bool(keywords.search(text)) for _, text in messages) >= 10  # the scan reads
    changed = [(where, text) for where, text in messages if Redactor(["pw-123"])(text) != text]
    assert changed == []


def test_the_host_key_refusals_read_as_written_after_masking() -> None:
    """The whole messages, as the terminal and the records show them: a device's key and a
    jump host's, unknown and changed."""
    import asyncssh

    from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown

    seen, known = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))
    for name in ("r1", "jump host 127.0.0.1:2222"):
        for exc in (
            HostKeyUnknown(name, "127.0.0.1:2201", seen, ["/root/.ssh/known_hosts"]),
            HostKeyMismatch(name, "127.0.0.1:2201", seen, [known]),
            HostKeyMismatch(name, "127.0.0.1:2201", seen, []),
        ):
            assert "; the password was not sent (" in str(exc)
            assert Redactor(["pw-123"])(str(exc)) == str(exc)
            assert Redactor(["pw-123"]).value({"message": repr(exc)}) == {"message": repr(exc)}
