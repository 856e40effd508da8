"""Credentials from the environment, and keeping them out of everything a run writes.

A job file or an inventory may say ``password: ${ROUTER_PASSWORD}``: the value is read from the
environment when the job loads, so no secret has to sit in a file. Every password and secret the
run knows (from the environment or written literally) is then masked in whatever the run shows
or writes: the terminal, the JSON Lines records and every log handler the job's logging
configuration creates, where a device library's exception or a task's own result might
otherwise echo it. Values are masked before they are encoded; and since a secret may reach a
log line already encoded (``%r`` of it, a URL, a JSON document), the escaped forms it takes
there are masked too.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from nornir_bench.core.exceptions import NornirBenchError

if TYPE_CHECKING:
    from nornir.core.inventory import Inventory

__all__ = [
    "MASK",
    "Redactor",
    "SecretError",
    "encoded_forms",
    "expand_env",
    "is_secret_key",
    "resolve_inventory",
    "secret_text",
]

MASK = "********"

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Keys whose values are secrets wherever they appear: password, enable_secret, api_token, ...
_SECRET_KEY = re.compile(r"pass|secret|token|passphrase", re.IGNORECASE)


class SecretError(NornirBenchError, ValueError):
    """A ``${VAR}`` reference to an environment variable that is not set."""


def is_secret_key(key: object) -> bool:
    """Whether a setting named ``key`` holds a secret (``password``, ``secret``, ``token``...)."""
    return isinstance(key, str) and _SECRET_KEY.search(key) is not None


def secret_text(value: object) -> str | None:
    """The text to mask for ``value`` found under a secret key, if it can be a secret.

    A string, or a number: YAML reads ``password: 123456`` as one, and the device gets its
    text. Any number, ``.inf`` too: this decides what is masked, not what is allowed.
    ``true`` and ``false`` are no secret.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def expand_env(text: str, where: str) -> str:
    """``text`` with each ``${NAME}`` replaced by the environment variable ``NAME``.

    Raises:
        SecretError: naming ``where`` and the variable, when it is not set.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise SecretError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _REFERENCE.sub(value, text) if "${" in text else text


def resolve_inventory(inventory: Inventory) -> set[str]:
    """Expand ``${NAME}`` in the credentials of the inventory's defaults, groups and hosts.

    Covers ``username``, ``password`` and each ``connection_options`` entry's ``username``,
    ``password`` and ``extras``, at any depth (netmiko's enable ``secret``, NAPALM's
    ``optional_args.secret``). Host and group objects are changed in place, so inheritance
    hands the expanded values down. A password written as a number (``password: 123456``)
    is masked too.

    Returns:
        Every password and secret found, expanded or literal, for :class:`Redactor`.

    Raises:
        SecretError: for a variable that is not set, naming the host or group.
    """
    secrets: set[str] = set()
    owners: list[tuple[str, Any]] = [("inventory defaults", inventory.defaults)]
    owners += [(f"inventory group {name}", group) for name, group in inventory.groups.items()]
    owners += [(f"inventory host {name}", host) for name, host in inventory.hosts.items()]
    for where, owner in owners:
        _resolve_credentials(owner, where, secrets)
        for plugin, options in (owner.connection_options or {}).items():
            _resolve_credentials(options, f"{where} connection_options {plugin}", secrets)
            if isinstance(options.extras, dict):
                _resolve_extras(options.extras, f"{where} connection_options {plugin}", secrets)
    return secrets


# Extras are a plugin's own settings, rarely more than a few levels deep; deeper is not walked.
_MAX_EXTRAS_DEPTH = 16


def _resolve_extras(
    extras: dict[Any, Any], where: str, secrets: set[str], secret: bool = False, depth: int = 0
) -> None:
    """Expand ``${NAME}`` in every string of ``extras``, collecting those under a secret key
    (``secret``, ``password``... at any level: ``optional_args: {secret: ...}``)."""
    if depth > _MAX_EXTRAS_DEPTH:
        return
    for key, value in extras.items():
        under_secret = secret or is_secret_key(key)
        if isinstance(value, str):
            value = extras[key] = expand_env(value, f"{where} {key}")
        if isinstance(value, dict):
            _resolve_extras(value, f"{where} {key}", secrets, under_secret, depth + 1)
        elif under_secret and (text := secret_text(value)) is not None:
            secrets.add(text)


def _resolve_credentials(owner: Any, where: str, secrets: set[str]) -> None:
    # The object's own value, not the one a host inherits from its groups or the defaults.
    for attribute in ("username", "password"):
        value = object.__getattribute__(owner, attribute)
        if isinstance(value, str):
            value = expand_env(value, f"{where} {attribute}")
            setattr(owner, attribute, value)
        if attribute == "password" and (text := secret_text(value)) is not None:
            secrets.add(text)


def encoded_forms(secret: str) -> set[str]:
    """``secret`` as it appears in text that encoded it: as is, inside a JSON string, inside
    a Python ``repr`` (of the string, or of its UTF-8 bytes), URL-encoded."""
    escaped = secret.replace("\\", "\\\\")
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        # repr quotes with ' and escapes a ' inside when the text holds both kinds of quote
        escaped.replace("'", "\\'"),
        escaped.replace('"', '\\"'),
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
    }
    return {form for form in forms if form}


class Redactor(logging.Filter):
    """Masks known secrets in text and in values; also a ``logging`` filter for handlers.

    Args:
        secrets: the values to mask, in any of their :func:`encoded_forms`. Empty strings are
            ignored.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        forms = {form for secret in secrets if secret for form in encoded_forms(secret)}
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted(forms, key=len, reverse=True)
        self._handlers: list[logging.Handler] = []

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def value(self, obj: Any) -> Any:
        """``obj`` with every string inside it (through dicts, lists, tuples and sets) masked,
        before anything encodes it: encoding may escape a secret past recognition."""
        if not self.secrets:
            return obj
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, Mapping):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple, set, frozenset)):
            return [self.value(item) for item in obj]
        return obj

    def json_default(self, obj: Any) -> Any:
        """For ``json.dumps(default=...)``: a value JSON cannot hold, as its masked ``repr``."""
        return self(repr(obj))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            record.msg = self(record.getMessage())
            record.args = None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = self(record.exc_text)
        return True

    def install(self, loggers: Iterable[str] = ("", "nornir")) -> None:
        """Add this filter to every handler of ``loggers`` (filters on a logger miss records
        propagated from its children; a handler's see them all).

        nornir's logging configuration gives each logger it names (``logging.loggers``) its
        own file handler: pass them all.
        """
        for name in ("", *loggers):
            for handler in logging.getLogger(name).handlers:
                if self not in handler.filters:
                    handler.addFilter(self)
                    self._handlers.append(handler)

    def uninstall(self) -> None:
        """Remove this filter from the handlers :meth:`install` added it to."""
        for handler in self._handlers:
            handler.removeFilter(self)
        self._handlers.clear()

    @contextmanager
    def installed(self, loggers: Iterable[str] = ("", "nornir")) -> Iterator[Redactor]:
        """:meth:`install` for the block, then :meth:`uninstall`: a process running job after
        job does not pile filters up on long-lived handlers."""
        self.install(loggers)
        try:
            yield self
        finally:
            self.uninstall()
