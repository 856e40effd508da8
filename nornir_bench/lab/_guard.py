"""A router lab's guard: ``python -m nornir_bench.lab._guard NAME OWNER``.

Started by the lab in a session of its own, it waits for its standard input to close: a pipe
whose other end only the lab process holds, so it closes when that process ends however it
ends (SIGKILL and the OOM killer included). The guard then removes whatever the lab's state
file still records; after a lab that stopped cleanly nothing is left to remove. A state of
another owner (process OWNER's successor under the name, which removed what it left) is not
its to remove.
"""

from __future__ import annotations

import signal
import sys

from nornir_bench.lab._system import labs_locked, read_state, teardown


def main(name: str, owner: int) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the lab's teardown must not be cut short
    while sys.stdin.buffer.read(4096):
        pass
    with labs_locked():
        state = read_state(name)
        if state is not None and state.owner == owner:
            teardown(state)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
