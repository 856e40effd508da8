"""Why a file could not be written, in words: what a user reads instead of an errno; and the
user's state folder for what runs keep (records, configuration backups)."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

__all__ = ["records_folder", "why_not_written"]


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
