"""What a change stopped in the middle may have done: its backups (the running configuration,
in a file of its own before the first line is sent) tell it after Ctrl-C; its progress, noted
on the host's task as it goes (:class:`ChangeProgress`), tells a deadline that stops it."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.changes import INTERRUPTED, NOT_TOUCHED, note_change
from nornir_bench.core.exceptions import HostAbandoned
from nornir_bench.core.files import make_private_folder, records_folder
from nornir_bench.tasks.changes._change import Change, ConfigChangeFailed

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

    from nornir_bench.tasks.sessions._plan import Plan

__all__ = ["ChangeProgress", "abandoned_failure", "backup_writer", "noting"]


def backup_writer(host: Host, folder: str | os.PathLike[str] | None) -> Callable[[str], Path]:
    """Writes a host's running configuration to a new file of its own in ``folder`` (mode
    0600); its path."""

    def write(text: str) -> Path:
        base = Path(folder) if folder is not None else records_folder() / "backups"
        make_private_folder(base)  # the backups hold the devices' secrets
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        path = base / f"{host.name}-{stamp}.cfg"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        return path

    return write


_BACKUP_NAME = re.compile(r"(?P<host>.+)-\d{8}T\d{6}\.\d{6}Z\.cfg")


def abandoned_failure(
    host: str, params: Mapping[str, Any], since: float, *,
    holding: Callable[[str], str | None] | None = None,
) -> Exception:
    """What a change Ctrl-C stopped in flight on ``host`` (cancelled, or abandoned by a second
    press; run with ``params`` since ``since``, a ``time.time()``) may have done, told by its
    backup: written before the first line is sent, so without one in this run the device was
    not touched. ``holding``: what holds on the device, told from that backup's path (``None``:
    not known, "state unknown")."""
    folder = params.get("backup_dir")
    base = Path(folder) if folder is not None else records_folder() / "backups"
    made = []
    with contextlib.suppress(OSError):
        for path in base.iterdir():
            match = _BACKUP_NAME.fullmatch(path.name)
            if match and match["host"] == host and path.stat().st_mtime >= since:
                made.append(path)
    if not made:
        return HostAbandoned(
            "stopped in flight by Ctrl-C before its change was sent: not touched",
            change={"state": NOT_TOUCHED, "backup": None},
        )
    backup = str(max(made, key=lambda path: path.stat().st_mtime_ns))
    holds = None if holding is None else holding(backup)
    return ConfigChangeFailed(
        f"interrupted during change: {_unknown_or(holds)} backup at {backup}",
        state=INTERRUPTED, backup=backup,
    )


def _unknown_or(holds: str | None) -> str:
    """What holds on a device whose change stopped, before its backup is named."""
    return "state unknown," if holds is None else f"{holds};"


class ChangeProgress:
    """How far a change got: its backup, and whether lines were sent to the device; noted on
    the host's task as it goes (``core.changes``), for a deadline that stops it to say what
    the change may have done."""

    __slots__ = ("backup", "holds", "sending", "task")

    def __init__(self, task: Task) -> None:
        self.task = task
        self.backup: str | None = None
        self.sending = False
        self.holds: str | None = None  # what holds on the device if the change stops now
        note_change(task, NOT_TOUCHED)

    def sends(self, backup: str) -> None:
        """The backup is written: lines go to the device from now on."""
        self.backup = backup
        self.sending = True
        note_change(self.task, INTERRUPTED, backup)

    def holding(self, holds: str | None) -> None:
        """What holds on the device if the change stops from now on (``None``: not known),
        said by a deadline that stops it (``core.changes.note_change``)."""
        self.holds = holds
        note_change(self.task, INTERRUPTED, self.backup, holds=holds)

    def unknown_or_holds(self) -> str:
        """What holds on the device now, said before the backup (``...; backup at``), or
        that it is not known (``state unknown, backup at``)."""
        return _unknown_or(self.holds)

    def ended(self, state: str, backup: str | None) -> None:
        """The change ended as its result or error says: a deadline after it says so too."""
        note_change(self.task, state, backup)


def noting(plan: Plan[Change], progress: ChangeProgress) -> Plan[Change]:
    """``plan``, its end noted on the host's task (see :class:`ChangeProgress`)."""
    try:
        change = yield from plan
    except ConfigChangeFailed as failed:
        progress.ended(failed.state, failed.backup)
        raise
    progress.ended(change.state, change.backup)
    return change
