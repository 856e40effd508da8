"""The guard of a test's Dask cluster: ``python -m tests.dask_guard OWNER FOLDER``.

tests/dask_cluster.py starts it first, in a process group of its own, and then the cluster's
scheduler and workers in that group: whatever they start (the nannies' worker processes, their
resource trackers) is in it too, as Dask never leaves its group. The guard waits for its
owner, the process that started it (pytest), to end, however it ends (SIGKILL and the OOM
killer included), then ends the group: SIGTERM (Dask's tools close gracefully, nannies their
workers), SIGKILL to what is left after :data:`STOP_SECONDS`, the guard with it; it removes
the cluster's folder first. A cluster its owner stops (``DaskCluster.stop``) ends its guard
too. Linux only (``pidfd_open``, ``/proc``), as the tests are.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import sys
import time

STOP_SECONDS = 10.0
"""How long the cluster's processes may take to end after SIGTERM before they are killed."""


def wait_for_end_of(owner: int) -> None:
    """Return once process ``owner``, this process's parent, has ended."""
    try:
        descriptor = os.pidfd_open(owner)
    except ProcessLookupError:
        return
    try:
        # Opened while the owner was still this process's parent: the descriptor is the
        # owner's, not a later process's given its number.
        if os.getppid() == owner:
            select.select([descriptor], [], [])
    finally:
        os.close(descriptor)


def members(group: int) -> list[int]:
    """The live processes of process group ``group`` but this one (zombies are not)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as file:
                state, _, pgrp = file.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):  # ended since listed
            continue
        if int(pgrp) == group and state != "Z":
            found.append(int(entry))
    return found


def end_group(folder: str) -> None:
    """End this process's group, the cluster: SIGTERM, then SIGKILL to what is left (and to
    this process); the cluster's folder removed in between."""
    group = os.getpgrp()
    os.killpg(group, signal.SIGTERM)
    ends = time.monotonic() + STOP_SECONDS
    while members(group) and time.monotonic() < ends:
        time.sleep(0.05)
    shutil.rmtree(folder, ignore_errors=True)
    os.killpg(group, signal.SIGKILL)


def main(owner: int, folder: str) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the group's end must not be cut short
    wait_for_end_of(owner)
    end_group(folder)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
