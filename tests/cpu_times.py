"""Where the suite's CPU goes: ``python3 -m pytest -p tests.cpu_times`` writes each test's CPU
seconds (setup, call and teardown together) to ``test-cpu.tsv``, or to ``$TEST_CPU_FILE``.

A test's CPU is its process's user and system time over the test, and that of the child
processes it waited for. A process a fixture keeps (a lab, a cluster) counts where it is
waited for: in the teardown of the test that ended the fixture. Under pytest-xdist, each
worker appends its own lines. docs/testing.md gives the figures of a run.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Generator
from pathlib import Path

import pytest


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    began = _cpu()
    yield
    spent = _cpu() - began
    path = Path(os.environ.get("TEST_CPU_FILE", "test-cpu.tsv"))
    with path.open("a", encoding="utf-8") as out:
        out.write(f"{spent:.3f}\t{item.nodeid}\n")
