#!/usr/bin/env python3
"""The "how many threads are enough threads?" study on today's nornir.

    python scripts/script.py WORKERS RTT [--hosts N] [--runner NAME] [--jitter J] [--fail-rate F]

Runs one simulated round trip of RTT seconds on each of N synthetic hosts (default 10,000)
with the chosen runner (default ``threadpool``; nornir's own is ``threaded``) and prints one
summary line with the process's wall, user, sys and CPU %. ``--help`` lists every option.
"""

from nornir_bench.cli import script_entry

if __name__ == "__main__":
    script_entry()
