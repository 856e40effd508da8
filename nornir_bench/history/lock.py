"""One run at a time (a backup, or a change committing its history) writes a repository: an
exclusive ``flock`` on a file in its git folder, which the kernel lets go however the holder
ends (SIGKILL included), so no lock is ever stale.

The holder writes who it is (process, machine, since when) in the file, so that a backup that
will not wait can say who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from nornir_bench.core.files import locked_at_once
from nornir_bench.history.repository import RepositoryError

__all__ = ["LOCK_FILE", "RepositoryBusy", "holding"]

LOCK_FILE = "nornir-bench-backup.lock"


class RepositoryBusy(RepositoryError):
    """Another run (a backup or a change) holds the repository, and this one was told not
    to wait."""


@contextlib.contextmanager
def holding(
    repo: Path, git_dir: Path, *, wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """The repository's lock for the block.

    Args:
        repo: the repository, as the user named it (for messages).
        git_dir: its git folder, where the lock file is.
        wait: wait for the holder to finish; else raise :class:`RepositoryBusy`.
        on_wait: told who holds it, once, before waiting.

    Raises:
        RepositoryBusy: held by another backup or change, and ``wait`` is false.
    """
    path = git_dir / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise RepositoryError(f"--repo {repo}: cannot open its lock: {exc.strerror}") from None
    try:
        if not locked_at_once(descriptor):
            holder = _holder(descriptor)
            if not wait:
                raise RepositoryBusy(
                    f"--repo {repo}: another backup or change is writing it ({holder}); --no-wait: "
                    "not waiting"
                ) from None
            if on_wait is not None:
                on_wait(f"waiting for the backup or change writing {repo} ({holder})")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with contextlib.suppress(OSError):  # who holds it is a courtesy: a full disk refuses it
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"pid {os.getpid()} on {socket.gethostname()} since "
                      f"{since}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # the lock goes with the last descriptor


def _holder(descriptor: int) -> str:
    said = os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip()
    return said or "a process that has not said who it is yet"
