"""The secrets of a job's inventory: ``${NAME}`` expanded in its credentials, and collected.

A job's inventory may say ``password: ${ROUTER_PASSWORD}`` for a host, a group or the defaults,
and hide an enable secret deep in a connection plugin's ``extras``: :func:`resolve_inventory`
expands them all once the inventory is loaded and returns every secret it found, for the run's
:class:`~nornir_bench.core.secrets.Redactor` to mask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nornir_bench.core.secrets import expand_env, is_secret_key, secret_text

if TYPE_CHECKING:
    from nornir.core.inventory import Inventory

__all__ = ["resolve_inventory"]


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
