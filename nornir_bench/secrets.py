"""Credentials from the environment, and keeping them out of everything a run writes.

A job file or an inventory may say ``password: ${ROUTER_PASSWORD}``: the value is read from the
environment when the job loads, so no secret has to sit in a file. Every password and secret the
run knows (from the environment or written literally) is then masked in whatever the run shows
or writes: the terminal, the JSON Lines records and nornir's log, where a device library's
exception or a task's own result might otherwise echo it.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nornir.core.inventory import Inventory

__all__ = ["MASK", "Redactor", "SecretError", "expand_env", "is_secret_key", "resolve_inventory"]

MASK = "********"

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Keys whose values are secrets wherever they appear: password, enable_secret, api_token, ...
_SECRET_KEY = re.compile(r"pass|secret|token|passphrase", re.IGNORECASE)


class SecretError(ValueError):
    """A ``${VAR}`` reference to an environment variable that is not set."""


def is_secret_key(key: object) -> bool:
    """Whether a setting named ``key`` holds a secret (``password``, ``secret``, ``token``...)."""
    return isinstance(key, str) and _SECRET_KEY.search(key) is not None


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
    ``password`` and string ``extras`` (netmiko's enable ``secret`` lives there). Host and group
    objects are changed in place, so inheritance hands the expanded values down.

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
            extras = options.extras
            if isinstance(extras, dict):
                for key, value in extras.items():
                    if isinstance(value, str):
                        extras[key] = expand_env(
                            value, f"{where} connection_options {plugin} {key}"
                        )
                        if is_secret_key(key):
                            secrets.add(extras[key])
    return secrets


def _resolve_credentials(owner: Any, where: str, secrets: set[str]) -> None:
    # The object's own value, not the one a host inherits from its groups or the defaults.
    for attribute in ("username", "password"):
        raw = object.__getattribute__(owner, attribute)
        if isinstance(raw, str):
            value = expand_env(raw, f"{where} {attribute}")
            setattr(owner, attribute, value)
            if attribute == "password":
                secrets.add(value)


class Redactor(logging.Filter):
    """Masks known secrets in text; also a ``logging`` filter for handlers.

    Args:
        secrets: the values to mask. Empty strings are ignored.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def value(self, obj: Any) -> Any:
        """``obj`` with every string inside it (through dicts, lists and tuples) masked."""
        if not self.secrets:
            return obj
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, Mapping):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(item) for item in obj]
        return obj

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
        propagated from its children; a handler's see them all)."""
        for name in loggers:
            for handler in logging.getLogger(name).handlers:
                if self not in handler.filters:
                    handler.addFilter(self)
