"""Secrets: ``${NAME}`` from the environment, and masking in text and in log records."""

from __future__ import annotations

import io
import logging

import pytest

from nornir_bench.secrets import MASK, Redactor, SecretError, expand_env, is_secret_key


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
