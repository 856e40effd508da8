"""Why a file could not be written, in words: what a user reads instead of an errno; the user's
state folder for what runs keep (records, configuration backups), and private folders made."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import resource
from pathlib import Path

__all__ = ["make_private_folder", "records_folder", "why_not_written"]


def why_not_written(exc: OSError, path: Path) -> str:
    """What kept ``path`` from being created or written, said in words.

    ``"/tmp/x is a file, not a folder"``, ``"file too large: the file-size limit is 1,024 bytes
    (ulimit -f)"``, ``"permission denied"`` ...; the error's own text for anything else.
    """
    number = exc.errno
    if number == errno.EFBIG:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit == resource.RLIM_INFINITY:
            return "file too large"
        return f"file too large: the file-size limit is {limit:,} bytes (ulimit -f)"
    if number in (errno.ENOTDIR, errno.EEXIST):
        for parent in path.parents:  # the nearest folder on the way that is not one
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file, not a folder"
    if number == errno.EISDIR:
        return "it is a folder, not a file"
    if number in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if number == errno.ENOSPC:
        return "no space left on its device"
    if number == errno.EDQUOT:
        return "the disk quota is used up"
    if number == errno.EROFS:
        return "the file system is read-only"
    return exc.strerror or str(exc)


def records_folder() -> Path:
    """Where records go by default: ``$XDG_STATE_HOME/nornir-bench/records``.

    As the XDG base directory specification says, ``$XDG_STATE_HOME`` counts only when it is
    an absolute path; else ``~/.local/state``. Records are a run's history, state kept between
    runs: not something to litter the current folder (a checkout) with.
    """
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "nornir-bench" / "records"


def make_private_folder(folder: Path) -> None:
    """Make ``folder`` and any missing parent, each readable by the user alone (``mkdir -p``
    would give the parents the umask's mode): records and backups hold what only the user
    should read. Folders already there are left as they are."""
    missing = [p for p in (folder, *folder.parents) if not p.is_dir()]
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another run made it meanwhile
            parent.mkdir(mode=0o700)


def locked_at_once(descriptor: int) -> bool:
    """Whether an exclusive ``flock`` on ``descriptor`` was taken without waiting: ``False``
    when another process holds one (released when the descriptor is closed).

    Raises:
        OSError: the lock could not be asked for at all (not a lock held elsewhere).
    """
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False
    return True
