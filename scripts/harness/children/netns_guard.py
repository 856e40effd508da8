"""A guard for network namespaces (scripts/bench_sites.py): it reads its standard input, a pipe
only the script holds, and once that closes (the script ended, however) it kills what runs in
each namespace named on its command line and removes the namespace."""

from __future__ import annotations

import subprocess
import sys


def guard(names: list[str]) -> None:
    sys.stdin.read()
    for name in names:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                              text=True).stdout
        for pid in pids.split():
            subprocess.run(["kill", "-9", pid], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


if __name__ == "__main__":
    guard(sys.argv[1:])
