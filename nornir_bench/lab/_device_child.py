"""A device lab's process: ``python -m nornir_bench.lab._device_child INVENTORY``.

``nornir-bench lab INVENTORY`` (:func:`~nornir_bench.lab.emulator.run_lab`, its lines
included), stopped when its standard input closes: a pipe whose other end only the process
that started it holds (:class:`~nornir_bench.lab.device_process.DeviceLabProcess`), so it
stops when that process ends however it ends, SIGKILL included. SIGINT and SIGTERM stop it
too. Bad input is one line on standard error, exit status 2, as the command's.
"""

from __future__ import annotations

import signal
import sys
import threading

from nornir_bench.lab._errors import LabError
from nornir_bench.lab.emulator import run_lab

_EXIT_USAGE = 2


def main(inventory: str) -> int:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stop.set())

    def until_closed() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        stop.set()

    threading.Thread(target=until_closed, name="lab-owner", daemon=True).start()
    try:
        run_lab(inventory, stop=stop)
    except LabError as exc:
        print(f"nornir-bench: error: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
