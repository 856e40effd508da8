"""A child program for tests/history/test_backup_faults.py: ``nornir-bench backup`` that stops
at a point of its write and waits there to be killed, having said ``paused`` on its output.

    python -m tests.history.paused_backup POINT ARGS...

POINT: ``file`` (a changed host's file written beside its place, not yet renamed into it),
``index`` (the commit made and the branch moved, the new index written, not yet git's).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from nornir_bench.cli.main import main
from nornir_bench.history import repository


def pause() -> None:
    print("paused", flush=True)
    threading.Event().wait()  # until killed


def main_paused(point: str, argv: list[str]) -> int:
    if point == "file":
        real_replace = os.replace

        def replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            if str(source).endswith(repository._PART):
                pause()
            real_replace(source, target, *args, **kwargs)

        repository.os.replace = replace  # type: ignore[attr-defined]
    elif point == "index":
        real_record = repository.ConfigRepository._record
        real_os_replace = os.replace

        def record(self: repository.ConfigRepository, *args: Any) -> Any:
            def replace(source: Any, target: Any) -> None:
                if str(target).endswith("index"):
                    pause()
                real_os_replace(source, target)

            repository.os.replace = replace  # type: ignore[attr-defined]
            return real_record(self, *args)

        repository.ConfigRepository._record = record  # type: ignore[method-assign]
    else:
        raise SystemExit(f"no such point {point!r}: file or index")
    return main(argv)


if __name__ == "__main__":
    sys.exit(main_paused(sys.argv[1], sys.argv[2:]))
