"""A job's SSH host-key settings: read from the job file, applied to its inventory, checked
before any device is touched (tasks/sessions/host_keys.py checks each login).

The job file may say ``host_key_checking: strict | accept-new | off`` and ``known_hosts: PATH``
(relative to the job file); the inventory's own settings (host, groups, defaults ``data``)
come first. A relative ``known_hosts`` in a SimpleInventory file is relative to that file.
What the run trusted for the user is said once: hosts not checked (``off``) as it starts, new
keys recorded (``accept-new``) as it ends.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.accepted_keys import accepted_keys
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.known_hosts import KNOWN_HOSTS, run_files, snapshot
from nornir_bench.core.secrets import expand_env
from nornir_bench.core.wording import hosts_named, hosts_text
from nornir_bench.tasks.sessions.host_keys import SETTING, not_allowed, policy_of, trust_of
from nornir_bench.tasks.sessions.jump_hosts import JUMP_HOST, JumpHostError, jump_from

if TYPE_CHECKING:
    from nornir.core import Nornir
    from ruamel.yaml.comments import CommentedMap

    from nornir_bench.jobs._job_file import JobFile

__all__ = [
    "HostKeySettings",
    "apply_host_keys",
    "read_host_keys",
    "said_accepted",
    "say_unchecked",
]

JOB_KEYS = (SETTING, KNOWN_HOSTS)
CONNECTIONS = ("netmiko", "scrapli_async", "ncclient")  # the device tasks' connections


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
    defaults, hosts = nr.inventory.defaults, nr.inventory.hosts
    if settings.checking is not None:
        defaults.data.setdefault(SETTING, settings.checking)
    if settings.known_hosts is not None:
        defaults.data.setdefault(KNOWN_HOSTS, os.fspath(settings.known_hosts))
    options = inventory.get("options") or {}
    folders = {kind: _folder(options.get(f"{kind}_file")) for kind in ("defaults", "group",
                                                                        "host")}
    secrets: set[str] = set()
    read = object.__getattribute__  # not nornir's Host.__getattribute__: a million hosts
    for kind, what, holder in _holders(nr):
        data, connections = read(holder, "data"), read(holder, "connection_options")
        if data:
            if SETTING in data:
                policy_of(data[SETTING], what)
            path = data.get(KNOWN_HOSTS)
            if isinstance(path, (str, os.PathLike)):
                folder = folders[kind]
                if folder is not None and not os.path.isabs(path):
                    data[KNOWN_HOSTS] = os.fspath(folder / path)
            if JUMP_HOST in data:
                secrets |= _jump_host(data, what, hosts)
        for name, params in (connections or {}).items():
            if SETTING in (params.extras or {}):
                policy_of(params.extras[SETTING], f"{what}: connection_options.{name}")
    snapshot(run_files(defaults, nr.inventory.groups.values(), hosts.values()))  # readable?
    return secrets


def _jump_host(data: dict[str, Any], what: str, hosts: Any) -> set[str]:
    """``data``'s ``jump_host`` checked, an inventory host's name turned into its address
    and credentials; its password, a secret."""
    named = data[JUMP_HOST]
    if isinstance(named, str):
        bastion = hosts.get(named)
        if bastion is None:
            raise JumpHostError(
                f"{what}: jump_host {named!r} is not in the inventory; name one of its "
                "hosts, or give {host: ADDRESS, port: PORT, username: USER, password: ...}"
            )
        data[JUMP_HOST] = named = {
            "name": named,
            "host": bastion.hostname or bastion.name, "port": bastion.port or 22,
            "username": bastion.username, "password": bastion.password,
        }
    elif isinstance(named, dict) and isinstance(named.get("password"), str):
        named["password"] = expand_env(named["password"], f"{what} jump_host password")
    jump = jump_from(named, what)
    return {jump.password} if jump.password else set()


def say_unchecked(nr: Nornir, say: Callable[[str], None]) -> None:
    """One line told to ``say`` when some of the run's hosts are not checked
    (``host_key_checking: off``)."""
    by_groups: dict[tuple[int, ...], str] = {}  # hosts without settings of their own
    read = object.__getattribute__  # not nornir's Host.__getattribute__: a million hosts
    off = 0
    for host in nr.inventory.hosts.values():
        if SETTING in read(host, "data") or read(host, "connection_options"):
            policy = _policy(host)
        else:
            groups = tuple(map(id, read(host, "groups")))
            policy = by_groups.get(groups) or by_groups.setdefault(groups, _policy(host))
        off += policy == "off"
    if off:
        say(
            f"warning: host_key_checking is off for {hosts_text(off)}: any server answering at "
            "their addresses is sent their passwords"
        )


@contextlib.contextmanager
def said_accepted(say: Callable[[str], None]) -> Iterator[None]:
    """One line told to ``say`` as the block ends when its run recorded new SSH host keys
    (``accept-new``), in this process or its workers; each key is in the log too."""
    with accepted_keys() as accepted:
        try:
            yield
        finally:
            keys = accepted.keys
            if keys:
                names = sorted({key.name for key in keys})
                files = ", ".join(sorted({key.recorded_in for key in keys}))
                say(f"accepted the new SSH host keys of {hosts_named(names)}, recorded in "
                    f"{files}")


def _policy(host: Any) -> str:
    """``off`` if either driver's login of ``host`` is not checked, as it will see it."""
    policies = {trust_of(host, connection).policy for connection in CONNECTIONS}
    return "off" if "off" in policies else next(iter(policies))


def _holders(nr: Nornir) -> Iterable[tuple[str, str, Any]]:
    inventory = nr.inventory
    yield "defaults", "defaults", inventory.defaults
    yield from (("group", f"group {name}", group) for name, group in inventory.groups.items())
    yield from (("host", f"host {name}", host) for name, host in inventory.hosts.items())


def _folder(file: object) -> Path | None:
    """The folder of the inventory ``file`` (a relative ``known_hosts`` in it is relative to
    it), if the inventory plugin has one."""
    return Path(file).parent if isinstance(file, (str, os.PathLike)) else None
