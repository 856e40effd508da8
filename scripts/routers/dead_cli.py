"""--dead-cli: r1's CLI (its session's vtysh) killed with SIGKILL in the middle of a change,
``--repeat`` times per driver; the seconds from the kill to the host's failure
(:mod:`harness.children.dead_cli`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import harness
from harness.lab import Lab
from harness.records import load_text
from nornir_bench.lab import write_inventory
from routers.fleet import one_run

__all__ = ["dead_cli_part"]

DEAD_CLI_LINES = 150
DEAD_CLI_TARGET = 2.0  # seconds from the CLI's death to the host's failure, at most


def dead_cli_part(bench: harness.Bench, lab: Lab, folder: Path, repeat: int,
                  child_seconds: float) -> None:
    """r1's CLI killed in the middle of a change, ``repeat`` times per driver: the seconds
    from the kill to the host's failure."""
    from nornir_bench.tasks.changes.config import DEFAULT_CONFIG_TIMEOUT

    print(f"\n### A CLI killed mid-change: r1's vtysh, {DEAD_CLI_LINES} lines, each exchange "
          f"given {DEFAULT_CONFIG_TIMEOUT:g} s, {repeat} times per driver (load {load_text()})\n")
    inventory = folder / "dead-cli"
    write_inventory(lab.devices()[:1], inventory, config_platform="frr")
    before = lab.configs(["r1"])
    print(f"| driver | failed within {DEAD_CLI_TARGET:g} s | from the kill to the failure: "
          "median s | min s | max s | failed with |")
    print("|---|---:|---:|---:|---:|---|")
    try:
        for driver, runner in (("netmiko", "threadpool"), ("scrapli", "asyncio")):
            seconds: list[float] = []
            said: Counter[str] = Counter()
            for _ in range(repeat):
                spec = {"driver": driver, "runner": runner, "options": {"num_workers": 1},
                        "inventory": str(inventory), "lab": lab.name, "sshd": lab.sshd_pid,
                        "backups": str(folder / "backups"), "timeout": DEFAULT_CONFIG_TIMEOUT,
                        "lines": DEAD_CLI_LINES}
                run = one_run(spec, child_seconds, module="harness.children.dead_cli")
                lab.put_back(before)
                lab.sessions_gone()
                if "error" in run:
                    said[run["error"]] += 1
                    continue
                seconds.append(run["seconds"])
                said[run["failure"]] += 1
            fast = sum(s <= DEAD_CLI_TARGET for s in seconds)
            spread = harness.Spread.of(seconds).cells() if seconds else "n/a | n/a | n/a"
            kinds = "; ".join(f"{kind} {count}" for kind, count in said.most_common())
            print(f"| {driver} ({runner}) | {fast}/{repeat} "
                  f"({'met' if fast == repeat else 'MISSED'}) | {spread} | {kinds} |")
            bench.record({"seconds": seconds, "failures": dict(said)}, part="dead-cli",
                         driver=driver, runner=runner, lines=DEAD_CLI_LINES)
    finally:
        lab.put_back(before)
