"""The nornir SimpleInventory that reaches a lab's devices, and their known hosts, as text
(:func:`render_inventory`) or written to a folder (:func:`write_inventory`).
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from nornir_bench.core.wording import hosts_text as _hosts
from nornir_bench.lab._errors import LabError
from nornir_bench.lab.devices import LabDevice

__all__ = [
    "INVENTORY_FILES",
    "fakenos_host_key",
    "known_hosts_text",
    "render_inventory",
    "write_inventory",
    "write_known_hosts",
]

INVENTORY_FILES = ("hosts.yaml", "groups.yaml", "defaults.yaml")
"""The files of a nornir SimpleInventory, in the order nornir names its options."""


def render_inventory(
    devices: Sequence[LabDevice],
    known_hosts: str | None = None,
    jump_host: Mapping[str, Any] | None = None,
    jump_known: str = "",
    config_platform: str | None = None,
) -> dict[str, str]:
    """The nornir SimpleInventory that reaches ``devices``, as YAML text per file name.

    ``groups.yaml`` has one group per platform, named after it and carrying ``platform``;
    ``defaults.yaml`` holds the first device's credentials, and a host whose credentials
    differ carries its own. With ``known_hosts`` (a path), ``defaults.yaml`` names it as the
    known-hosts file (data ``known_hosts``), and ``known_hosts`` is its text: each device's
    host key, so that their keys are checked (``host_key_checking: strict``, the default).
    ``jump_host``: the defaults' bastion (data ``jump_host``), ``jump_known`` its key's line.
    ``config_platform``: the devices' configuration dialect (``frr``), when their platform
    is only how to log in (``tasks.dialects.dialects``).
    """
    if not devices:
        raise LabError("an inventory needs at least one device")
    username, password = devices[0].username, devices[0].password
    hosts: dict[str, dict[str, Any]] = {}
    for device in devices:
        host: dict[str, Any] = {
            "hostname": device.address,
            "port": device.port,
            "groups": [device.platform],
        }
        if (device.username, device.password) != (username, password):
            host.update(username=device.username, password=device.password)
        hosts[device.name] = host
    groups = {p: {"platform": p} for p in dict.fromkeys(d.platform for d in devices)}
    header = f"# nornir SimpleInventory of a nornir-bench lab ({_hosts(len(devices))})\n"
    defaults: dict[str, Any] = {"username": username, "password": password}
    files = {"hosts.yaml": header + _dump(hosts), "groups.yaml": header + _dump(groups)}
    data: dict[str, Any] = {}
    if known_hosts is not None:
        data["known_hosts"] = known_hosts
        files["known_hosts"] = jump_known + known_hosts_text(devices)
    if jump_host is not None:
        data["jump_host"] = dict(jump_host)
    if config_platform is not None:
        data["config_platform"] = config_platform
    if data:
        defaults["data"] = data
    files["defaults.yaml"] = header + _dump(defaults)
    return files


def known_hosts_text(devices: Sequence[LabDevice]) -> str:
    """The known-hosts lines of ``devices``' SSH host keys, one per address and port."""
    lines = (f"[{d.address}]:{d.port} {d.host_key or fakenos_host_key()}\n" for d in devices)
    return "".join(dict.fromkeys(lines))


def write_known_hosts(devices: Sequence[LabDevice], folder: str | os.PathLike[str]) -> Path:
    """``devices``' host keys written to ``known_hosts`` in ``folder``; its path.

    Raises:
        LabError: it cannot be written.
    """
    path = Path(folder) / "known_hosts"
    try:
        path.write_text(known_hosts_text(devices), encoding="utf-8")
    except OSError as exc:
        raise LabError(f"cannot write the known hosts to {os.fspath(path)!r}: "
                       f"{exc.strerror}") from exc
    return path


@functools.cache
def fakenos_host_key() -> str:
    """The SSH host key every FakeNOS device shows (FakeNOS's default), as OpenSSH writes it."""
    import paramiko  # type: ignore[import-untyped]
    from fakenos.plugins.servers.ssh_server_paramiko import DEFAULT_SSH_KEY

    key = paramiko.RSAKey(file_obj=io.StringIO(DEFAULT_SSH_KEY))
    return f"{key.get_name()} {key.get_base64()}"


def write_inventory(
    devices: Sequence[LabDevice],
    directory: str | os.PathLike[str],
    jump_host: Mapping[str, Any] | None = None,
    jump_known: str = "",
    config_platform: str | None = None,
) -> list[Path]:
    """Write :func:`render_inventory`'s files into ``directory`` (created if missing), with
    the devices' host keys in its ``known_hosts`` (and a bastion's, ``jump_known``).

    Returns:
        The paths written, in the order of :data:`INVENTORY_FILES`, then ``known_hosts``.
    """
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        known = os.fspath((folder / "known_hosts").absolute())
        for name, text in sorted(
            render_inventory(devices, known, jump_host, jump_known, config_platform).items(),
            key=lambda item: _order(item[0]),
        ):
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    except OSError as exc:
        where = os.fspath(directory)
        raise LabError(f"cannot write the inventory to {where!r}: {exc.strerror}") from exc
    return written


def _order(name: str) -> int:
    return INVENTORY_FILES.index(name) if name in INVENTORY_FILES else len(INVENTORY_FILES)


def _dump(data: dict[str, Any]) -> str:
    """Block-style YAML in insertion order, with lists inline (``groups: [cisco_ios]``)."""
    yaml = YAML()
    text = io.StringIO()
    yaml.dump(_inline_lists(data), text)
    return text.getvalue()


def _inline_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return CommentedMap((k, _inline_lists(v)) for k, v in value.items())
    if isinstance(value, list):
        inline = CommentedSeq(value)
        inline.fa.set_flow_style()
        return inline
    return value
