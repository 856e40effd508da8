"""This machine, as ``advise`` and the process runners see it: the CPUs this process may use,
and which devices are this machine itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nornir_bench.bench.machine import on_this_machine


def test_loopback_localhost_and_this_machines_addresses_are_here_names_are_not_looked_up() -> None:
    addresses = ["127.0.0.1", "127.3.2.1", "localhost", "::1", "0.0.0.0", "192.0.2.1",
                 "2001:db8::1", "router1.example", "", None, 22, "127.0.0.1"]
    # 0.0.0.0 binds (any of this machine's); TEST-NET and documentation addresses cannot be
    # bound here; a name other than localhost is not resolved.
    assert on_this_machine(addresses) == ["127.0.0.1", "127.3.2.1", "localhost", "::1",
                                          "0.0.0.0"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_process_limited_to_one_cpu_sizes_its_pools_and_advice_by_it() -> None:
    """``taskset -c 0``: the process runners default to one process, and advise's machine has
    one CPU, however many the machine has (``os.cpu_count``)."""
    code = (
        "import os\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from nornir_bench.bench.machine import machine_limits\n"
        "from nornir_bench.runners.processpool import ProcessPoolRunner\n"
        "from nornir_bench.runners.dask import DaskRunner\n"
        "print(machine_limits().cpus, ProcessPoolRunner().num_procs, DaskRunner().num_procs)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["1", "1", "1"]
