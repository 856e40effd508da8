"""The secrets of a job's inventory: ``${NAME}`` expanded in its credentials, passwords read
from a command, and collected.

A job's inventory may say ``password: ${ROUTER_PASSWORD}`` for a host, a group or the defaults,
hide an enable secret deep in a connection plugin's ``extras``, or give
``data: {password_command: pass show net/ro}`` (a password manager's command; its first line is
the password), and so for any secret of the extras or of a ``jump_host``
(``secret_command``, ``password_command``): :func:`resolve_inventory` expands them all once
the inventory is loaded, before any device is touched, and returns every secret it found, for
the run's :class:`~nornir_bench.core.secrets.Redactor` to mask.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import TYPE_CHECKING, Any

from nornir_bench.core.secrets import SecretError, expand_env, is_secret_key, secret_text

if TYPE_CHECKING:
    from nornir.core.inventory import Inventory

__all__ = ["PASSWORD_COMMAND", "resolve_inventory"]

PASSWORD_COMMAND = "password_command"
"""The inventory data key of a command whose output's first line is the password."""

_COMMAND = "_command"  # a secret's KEY_command: the command printing it

COMMAND_SECONDS = 60.0
"""How long a password command may take (a password manager waiting for a PIN does not
answer: the job stops, in one line)."""


def resolve_inventory(inventory: Inventory) -> set[str]:
    """Expand ``${NAME}`` in the credentials of the inventory's defaults, groups and hosts.

    Covers ``username``, ``password`` and each ``connection_options`` entry's ``username``,
    ``password`` and ``extras``, at any depth (netmiko's enable ``secret``, NAPALM's
    ``optional_args.secret``). Host and group objects are changed in place, so inheritance
    hands the expanded values down. A password written as a number (``password: 123456``)
    is masked too.

    A ``password_command`` in a host's, group's or the defaults' own ``data`` sets that
    object's ``password`` (its own one, if given, wins): the command runs once per distinct
    command, without a shell, standard input closed.

    Returns:
        Every password and secret found, expanded or literal, for :class:`Redactor`.

    Raises:
        SecretError: for a variable that is not set, or a password command that fails (not
            found, a non-zero exit, no output, past ``COMMAND_SECONDS``), naming the host or
            group and never the command's output.
    """
    secrets: set[str] = set()
    owners: list[tuple[str, Any]] = [("inventory defaults", inventory.defaults)]
    owners += [(f"inventory group {name}", group) for name, group in inventory.groups.items()]
    owners += [(f"inventory host {name}", host) for name, host in inventory.hosts.items()]
    from nornir_bench.tasks.sessions.jump_hosts import JUMP_HOST

    commands = _Commands()
    for where, owner in owners:
        _password_from_command(owner, where, commands)
        _resolve_credentials(owner, where, secrets)
        for plugin, options in (owner.connection_options or {}).items():
            _resolve_credentials(options, f"{where} connection_options {plugin}", secrets)
            if isinstance(options.extras, dict):
                _resolve_extras(
                    options.extras, f"{where} connection_options {plugin}", secrets, commands
                )
        jump = (owner.data or {}).get(JUMP_HOST)
        if isinstance(jump, dict):
            _resolve_extras(jump, f"{where} data {JUMP_HOST}", secrets, commands)
    return secrets


class _Commands:
    """The password commands of one job, each distinct command run once."""

    def __init__(self) -> None:
        self.outputs: dict[str, str] = {}

    def output(self, command: object, where: str) -> str:
        if not isinstance(command, str) or not command.strip():
            raise SecretError(
                f"{where}: must be a command line (text), got {type(command).__name__}"
            )
        if command not in self.outputs:
            self.outputs[command] = _run_password_command(command, where)
        return self.outputs[command]


# Extras are a plugin's own settings, rarely more than a few levels deep; deeper is not walked.
_MAX_EXTRAS_DEPTH = 16


def _resolve_extras(
    extras: dict[Any, Any],
    where: str,
    secrets: set[str],
    commands: _Commands,
    secret: bool = False,
    depth: int = 0,
) -> None:
    """Expand ``${NAME}`` in every string of ``extras``, collecting those under a secret key
    (``secret``, ``password``... at any level: ``optional_args: {secret: ...}``); a secret's
    ``KEY_command`` (``secret_command: pass show net/enable``) sets ``KEY`` unless given."""
    if depth > _MAX_EXTRAS_DEPTH:
        return
    for key in [k for k in extras if isinstance(k, str) and k.endswith(_COMMAND)]:
        named = key[: -len(_COMMAND)]
        if is_secret_key(named) and extras.get(named) is None:
            extras[named] = commands.output(extras[key], f"{where} {key}")
    for key, value in extras.items():
        under_secret = secret or is_secret_key(key)
        if isinstance(value, str):
            value = extras[key] = expand_env(value, f"{where} {key}")
        if isinstance(value, dict):
            _resolve_extras(value, f"{where} {key}", secrets, commands, under_secret, depth + 1)
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


def _password_from_command(owner: Any, where: str, commands: _Commands) -> None:
    """``owner``'s password from its own ``password_command``, unless it has its own
    password."""
    command = (owner.data or {}).get(PASSWORD_COMMAND)
    if command is None or object.__getattribute__(owner, "password") is not None:
        return
    owner.password = commands.output(command, f"{where} {PASSWORD_COMMAND}")


def _run_password_command(command: str, where: str) -> str:
    """The first line of what ``command`` prints; its output is never in an error."""
    try:
        argv = shlex.split(command)
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=COMMAND_SECONDS,
            check=False,
        )
    except ValueError as exc:  # shlex: an unclosed quote
        raise SecretError(f"{where} {command!r}: {exc}") from None
    except FileNotFoundError:
        raise SecretError(f"{where} {command!r}: no such command: {argv[0]}") from None
    except subprocess.TimeoutExpired:
        raise SecretError(
            f"{where} {command!r}: no answer within {COMMAND_SECONDS:g} s"
        ) from None
    except OSError as exc:
        raise SecretError(f"{where} {command!r}: cannot run it: {exc.strerror}") from None
    if done.returncode != 0:
        raise SecretError(
            f"{where} {command!r}: exited with status {done.returncode} (its output is not "
            "shown: it may hold a secret)"
        )
    first = done.stdout.decode("utf-8", errors="replace").split("\n", 1)[0].rstrip("\r")
    if not first:
        raise SecretError(f"{where} {command!r}: printed no password")
    return first
