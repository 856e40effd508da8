"""A job's SSH host-key settings: read from the job file, applied to its inventory, checked
before any device is touched (tasks/host_keys.py checks each login).

The job file may say ``host_key_checking: strict | accept-new | off`` and ``known_hosts: PATH``
(relative to the job file); the inventory's own settings (host, groups, defaults ``data``)
come first. A relative ``known_hosts`` in a SimpleInventory file is relative to that file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.known_hosts import KNOWN_HOSTS, run_files, snapshot
from nornir_bench.core.secrets import expand_env
from nornir_bench.core.wording import hosts_text
from nornir_bench.tasks.host_keys import HOST_KEY_CHECKING, SETTING, not_allowed, policy_of
from nornir_bench.tasks.jump_hosts import JUMP_HOST, JumpHostError, jump_host_of

if TYPE_CHECKING:
    from nornir.core import Nornir
    from ruamel.yaml.comments import CommentedMap

    from nornir_bench.jobs._job_file import JobFile

__all__ = ["HostKeySettings", "apply_host_keys", "read_host_keys", "say_unchecked"]

JOB_KEYS = (SETTING, KNOWN_HOSTS)


@dataclass(frozen=True)
class HostKeySettings:
    """The job file's ``host_key_checking`` and ``known_hosts``, if it gives them."""

    checking: str | None = None
    known_hosts: Path | None = None


def read_host_keys(job: JobFile, root: CommentedMap) -> HostKeySettings:
    """The job file's host-key settings, checked (``JobError`` in one line)."""
    checking = None
    if SETTING in root:
        try:
            checking = policy_of(root[SETTING], SETTING)
        except NornirBenchError:
            raise job.error(root, SETTING, not_allowed(root[SETTING])) from None
    known = None
    if KNOWN_HOSTS in root:
        known = job.relative(job.string(root, KNOWN_HOSTS, KNOWN_HOSTS))
    return HostKeySettings(checking, known)


def apply_host_keys(
    nr: Nornir, settings: HostKeySettings, inventory: dict[str, Any]
) -> set[str]:
    """The job's settings under the inventory's own; relative ``known_hosts`` made absolute;
    every ``host_key_checking`` checked and every known-hosts file read; each ``jump_host``
    named by an inventory host turned into its address and credentials: before any login.

    Args:
        inventory: the job's inventory settings (a SimpleInventory's file paths).

    Returns:
        The jump hosts' passwords, secrets to mask.

    Raises:
        NornirBenchError: a value not allowed, a known-hosts file that cannot be read, a jump
            host not in the inventory.
    """
    defaults, groups, hosts = nr.inventory.defaults, nr.inventory.groups, nr.inventory.hosts
    if settings.checking is not None:
        defaults.data.setdefault(SETTING, settings.checking)
    if settings.known_hosts is not None:
        defaults.data.setdefault(KNOWN_HOSTS, os.fspath(settings.known_hosts))
    options = inventory.get("options") or {}
    for holders, key in (
        ([defaults], "defaults_file"),
        (groups.values(), "group_file"),
        (hosts.values(), "host_file"),
    ):
        _absolute(holders, options.get(key))
    for what, holder in _holders(nr):
        if SETTING in (holder.data or {}):
            policy_of(holder.data[SETTING], what)
        for name, params in (holder.connection_options or {}).items():
            if SETTING in (params.extras or {}):
                policy_of(params.extras[SETTING], f"{what}: connection_options.{name}")
    snapshot(run_files(defaults, groups.values(), hosts.values()))
    return _resolve_jump_hosts(nr)


def _resolve_jump_hosts(nr: Nornir) -> set[str]:
    hosts, secrets = nr.inventory.hosts, set()
    for what, holder in _holders(nr):
        named = (holder.data or {}).get(JUMP_HOST)
        if isinstance(named, str):
            bastion = hosts.get(named)
            if bastion is None:
                raise JumpHostError(
                    f"{what}: jump_host {named!r} is not in the inventory; name one of its "
                    "hosts, or give {host: ADDRESS, port: PORT, username: USER, password: ...}"
                )
            holder.data[JUMP_HOST] = {
                "name": named,
                "host": bastion.hostname or bastion.name, "port": bastion.port or 22,
                "username": bastion.username, "password": bastion.password,
            }
        elif isinstance(named, dict) and isinstance(named.get("password"), str):
            named["password"] = expand_env(named["password"], f"{what} jump_host password")
    for host in hosts.values():
        jump = jump_host_of(host)
        if jump is not None and jump.password:
            secrets.add(jump.password)
    return secrets


def say_unchecked(nr: Nornir, say: Callable[[str], None]) -> None:
    """One line told to ``say`` when some of the run's hosts are not checked
    (``host_key_checking: off``)."""
    off = sum(1 for host in nr.inventory.hosts.values() if _policy(host) == "off")
    if off:
        say(
            f"warning: host_key_checking is off for {hosts_text(off)}: any server answering at "
            "their addresses is sent their passwords"
        )


def _policy(host: Any) -> str:
    for params in (host.connection_options or {}).values():
        if SETTING in (params.extras or {}):
            return policy_of(params.extras[SETTING], host.name)
    return policy_of(host.get(SETTING, HOST_KEY_CHECKING[0]), host.name)


def _holders(nr: Nornir) -> Iterable[tuple[str, Any]]:
    inventory = nr.inventory
    yield "defaults", inventory.defaults
    yield from ((f"group {name}", group) for name, group in inventory.groups.items())
    yield from ((f"host {name}", host) for name, host in inventory.hosts.items())


def _absolute(holders: Iterable[Any], file: object) -> None:
    """A relative ``known_hosts`` in ``holders``' data, made relative to the inventory
    ``file`` they were read from (if known)."""
    if not isinstance(file, (str, os.PathLike)):
        return
    folder = Path(file).parent
    for holder in holders:
        path = (holder.data or {}).get(KNOWN_HOSTS)
        if isinstance(path, (str, os.PathLike)) and not os.path.isabs(path):
            holder.data[KNOWN_HOSTS] = os.fspath(folder / path)
