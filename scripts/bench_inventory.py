#!/usr/bin/env python3
"""Inventory load benchmark: ``synthetic`` against nornir's own ``SimpleInventory``.

    python scripts/bench_inventory.py [--repeat 5] [--million] [--quick] [--record PATH]

- ``synthetic`` with 10,000 hosts against ``SimpleInventory`` loading 1,000 hosts of the same
  shape (name, platform, one of 10 groups, a small data dict) from YAML files written to a
  temporary folder; the issue's target: the first faster than the second.
- ``--million``: 1,000,000 synthetic hosts in a fresh process
  (:mod:`harness.children.million_inventory`); load time and the process's peak RSS
  (ru_maxrss), before and after the load.

Times are the ``load()`` call (what ``InitNornir`` spends on the inventory), median of
``--repeat`` after one warm-up. ``--quick``: a tenth of the hosts, 1 repeat (``--million``:
10,000 hosts).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from nornir.plugins.inventory.simple import SimpleInventory
from ruamel.yaml import YAML

import harness
from harness.child import run_child
from harness.timing import timed
from nornir_bench import SyntheticInventory

PARSER = harness.parser(__doc__)
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--million", action="store_true", help="also load 1,000,000 hosts")

SHAPE: dict[str, Any] = {
    "hosts": 10_000, "groups": 10, "platform": "cisco_ios", "data": {"site": "lab", "role": "edge"}
}
MILLION_SECONDS = 1800.0


def write_simple_inventory(folder: Path, hosts: int) -> Path:
    """A SimpleInventory of ``hosts`` hosts shaped like SHAPE's synthetic hosts."""
    yaml = YAML(typ="safe")
    groups: dict[str, Any] = {f"group{g}": {"data": {}} for g in range(SHAPE["groups"])}
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


def main(bench: harness.Bench) -> None:
    repeat = bench.args.repeat or (1 if bench.quick else 5)
    share = 10 if bench.quick else 1
    many, few = SHAPE["hosts"] // share, 1_000 // share
    synthetic = SyntheticInventory(**{**SHAPE, "hosts": many})
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_simple_inventory(Path(tmp), few)
        simple = SimpleInventory(
            host_file=str(folder / "hosts.yaml"), group_file=str(folder / "groups.yaml")
        )
        loads = harness.alternate({"synthetic": lambda: timed(synthetic.load)[1],
                                   "simple": lambda: timed(simple.load)[1]}, repeat, warm=True)
    syn, sim = harness.Spread.of(loads["synthetic"], 1e3), harness.Spread.of(loads["simple"], 1e3)
    for label, spread in [(f"synthetic       {many:>6,}", syn),
                          (f"SimpleInventory {few:>6,}", sim)]:
        print(f"{label} hosts: {spread.median:7.1f} ms (min {spread.low:.1f}, max "
              f"{spread.high:.1f})")
    print(f"synthetic {many // 1000}k / SimpleInventory {few / 1000:g}k = "
          f"{syn.median / sim.median:.2f} (target < 1)")
    bench.record({"synthetic_ms": syn.values, "simple_ms": sim.values}, synthetic_hosts=many,
                 simple_hosts=few)
    if bench.args.million:
        hosts = 10_000 if bench.quick else 1_000_000
        # A fresh process, so its peak RSS is the load's and nothing else's.
        got = run_child("harness.children.million_inventory", {"hosts": hosts},
                        timeout=MILLION_SECONDS)
        before, after = got["before_kib"], got["after_kib"]
        print(
            f"synthetic {hosts:,} hosts: load {got['seconds']:.2f} s, peak RSS "
            f"{after / 1024:.0f} MiB (process before load {before / 1024:.0f} MiB; "
            f"{(after - before) * 1024 / hosts:.0f} bytes/host)"
        )
        bench.record(got, hosts=hosts)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
