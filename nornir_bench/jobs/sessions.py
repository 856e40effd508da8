"""A session log per device: ``nornir-bench run --session-logs`` (or the job's
``output: {session_logs: true}``) writes each host's CLI session, as the device library saw
it, to ``RECORDS/sessions/HOST.log`` (``RECORDS``: the records file without ``.jsonl``).

The drivers log themselves: netmiko's ``session_log`` and scrapli's ``channel_log``, set in
each host's connection options (``extras``, merged over what the inventory gives), appending,
so a job of steps on both libraries keeps both in one file. Hosts sent to processpool or Dask
workers carry their options with them and write there: on this machine, the same files; a Dask
cluster elsewhere writes on its own machines, to the same path (a shared folder, or collected
from each worker).

The folder is readable by the user alone (0700). When the job ends, each log is masked (the
job's secrets, and secrets in configuration text) and left readable by the user alone (0600);
until then the folder's mode keeps the raw text from others. A host's record names its log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nornir.core.inventory import ConnectionOptions

if TYPE_CHECKING:
    from nornir.core import Nornir

    from nornir_bench.core.secrets import Redactor

__all__ = ["LOGGED_BY", "log_sessions", "mask_session_logs", "sessions_folder"]

LOGGED_BY = {
    "netmiko": {"session_log": None, "session_log_file_mode": "append"},
    "scrapli_async": {"channel_log": None, "channel_log_mode": "append"},
    "scrapli": {"channel_log": None, "channel_log_mode": "append"},
}
"""The connection plugins whose drivers log a session, and the ``extras`` that make them
(``None``: the log's path)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
logger = logging.getLogger(__name__)


def sessions_folder(records: Path) -> Path:
    """Where the session logs of the run recording to ``records`` go."""
    return records.resolve().with_suffix("") / "sessions"


def log_sessions(nr: Nornir, folder: Path) -> dict[str, str]:
    """Make every host of ``nr`` log its sessions to ``folder``/HOST.log; the log of each."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    logs: dict[str, str] = {}
    for name, host in nr.inventory.hosts.items():
        path = str(folder / f"{_UNSAFE.sub('_', name)}.log")
        logs[name] = path
        for plugin, extras in LOGGED_BY.items():
            given = host.get_connection_parameters(plugin)
            host.connection_options[plugin] = ConnectionOptions(
                hostname=given.hostname, port=given.port, username=given.username,
                password=given.password, platform=given.platform,
                extras={**(given.extras or {}),
                        **{key: path if value is None else value for key, value in
                           extras.items()}},
            )
    return logs


def mask_session_logs(logs: Mapping[str, str], redact: Redactor) -> None:
    """Mask each log that was written, line by line, into a file readable by the user alone
    that replaces it. A log that cannot be (a full disk) is left as it is, readable by the user
    alone, and said in a warning; the others are masked all the same."""
    for path in map(Path, logs.values()):
        if not path.exists():
            continue
        written: str | None = None
        try:
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
            ) as masked, path.open(encoding="utf-8", errors="replace", newline="") as raw:
                written = masked.name
                os.chmod(written, 0o600)
                for line in raw:
                    masked.write(redact(line))
            os.replace(written, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.chmod(path, 0o600)
            if written is not None:
                with contextlib.suppress(OSError):
                    os.unlink(written)
            logger.warning("session log %s not masked: %s", path, exc.strerror or exc)
