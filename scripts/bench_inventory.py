#!/usr/bin/env python3
"""Inventory load benchmark: ``synthetic`` against nornir's own ``SimpleInventory``.

    python scripts/bench_inventory.py [--repeat 5] [--million]

- ``synthetic`` with 10,000 hosts against ``SimpleInventory`` loading 1,000 hosts of the same
  shape (name, platform, one of 10 groups, a small data dict) from YAML files written to a
  temporary folder; the issue's target: the first faster than the second.
- ``--million``: 1,000,000 synthetic hosts in a fresh process; load time and the process's
  peak RSS (ru_maxrss), before and after the load.

Times are the ``load()`` call (what ``InitNornir`` spends on the inventory), median of
``--repeat`` after one warm-up.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nornir.plugins.inventory.simple import SimpleInventory
from ruamel.yaml import YAML

from nornir_bench import SyntheticInventory

SHAPE = {
    "hosts": 10_000, "groups": 10, "platform": "cisco_ios", "data": {"site": "lab", "role": "edge"}
}


def write_simple_inventory(folder: Path, hosts: int) -> Path:
    """A SimpleInventory of ``hosts`` hosts shaped like SHAPE's synthetic hosts."""
    yaml = YAML(typ="safe")
    groups = {f"group{g}": {"data": {}} for g in range(SHAPE["groups"])}
    host_entries = {
        f"dev{i}": {
            "platform": SHAPE["platform"],
            "groups": [f"group{i % SHAPE['groups']}"],
            "data": dict(SHAPE["data"]),
        }
        for i in range(hosts)
    }
    with open(folder / "hosts.yaml", "w", encoding="utf-8") as f:
        yaml.dump(host_entries, f)
    with open(folder / "groups.yaml", "w", encoding="utf-8") as f:
        yaml.dump(groups, f)
    return folder


def median_load(load: object, repeat: int) -> tuple[float, float, float]:
    load()  # type: ignore[operator]  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        load()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples), max(samples)


def million() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    inventory = SyntheticInventory(hosts=1_000_000, groups=10).load()
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert len(inventory.hosts) == 1_000_000
    print(
        f"synthetic 1,000,000 hosts: load {elapsed:.2f} s, peak RSS {after / 1024:.0f} MiB "
        f"(process before load {before / 1024:.0f} MiB; "
        f"{(after - before) * 1024 / 1_000_000:.0f} bytes/host)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--million", action="store_true", help="also load 1,000,000 hosts")
    parser.add_argument("--million-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.million_only:
        million()
        return

    synthetic = SyntheticInventory(**SHAPE)  # type: ignore[arg-type]
    syn = median_load(synthetic.load, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_simple_inventory(Path(tmp), 1_000)
        simple = SimpleInventory(
            host_file=str(folder / "hosts.yaml"), group_file=str(folder / "groups.yaml")
        )
        sim = median_load(simple.load, args.repeat)
    for label, (median, low, high) in [
        ("synthetic       10,000", syn), ("SimpleInventory  1,000", sim)
    ]:
        print(f"{label} hosts: {median * 1e3:7.1f} ms (min {low * 1e3:.1f}, max {high * 1e3:.1f})")
    print(f"synthetic 10k / SimpleInventory 1k = {syn[0] / sim[0]:.2f} (target < 1)")
    if args.million:
        # A fresh process, so its peak RSS is the load's and nothing else's.
        subprocess.run([sys.executable, __file__, "--million-only"], check=True)


if __name__ == "__main__":
    main()
