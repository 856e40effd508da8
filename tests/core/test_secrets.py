"""Secrets: ``${NAME}`` from the environment, and masking in text and in log records."""

from __future__ import annotations

import io
import json
import logging
from urllib.parse import quote, quote_plus

import pytest

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
    ],
)
def test_secrets_in_configuration_text_are_masked(line: str, masked: str) -> None:
    assert mask_config_secrets(line) == masked
    assert Redactor()(line) == masked  # whatever a job shows, records or logs


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
