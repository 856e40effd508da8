"""A command run on a repository whose disk is full: a 1 MiB tmpfs in a mount namespace of
the command's own (gone with its process), a copy of the repository in it, the rest filled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.waiting import HANG_GUARD


def on_full_disk(
    seed: Path, full: Path, after: Path, *command: str
) -> subprocess.CompletedProcess[str]:
    """``nornir-bench COMMAND... --repo FULL`` with ``seed`` copied to ``full``, a full disk;
    what it left in the repository copied to ``after`` once the filler is removed."""
    for folder in (full, after):
        folder.mkdir()
    args = " ".join(str(arg) for arg in command)
    script = (
        f"mount -t tmpfs -o size=1m tmpfs {full} && cp -a {seed}/. {full}/ && "
        f"(dd if=/dev/zero of={full}/filler bs=4k 2>/dev/null; true) && "
        f"{sys.executable} -m nornir_bench {args} --repo {full}; status=$?; "
        f"rm {full}/filler; cp -a {full}/. {after}/; exit $status"
    )
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           script], cwd=seed.parent, capture_output=True, text=True,
                          timeout=HANG_GUARD, check=False)
