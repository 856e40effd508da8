#!/usr/bin/env python3
"""nornir's own test suite, from a nornir checkout you have, with each runner swapped in.

    python scripts/nornir_suite/run.py --nornir-tests PATH
                                       [--runners threaded,threadpool,asyncio,processpool]

PATH is the ``tests`` folder of a checkout of the nornir version installed here (or the
checkout itself). Each runner's pass is a pytest session of its own, run from the checkout's
root as nornir's CI runs it, with runner_swap.py swapping the runner in (README.md). The
runners: any registered with nornir; by default ``threaded`` and nornir-bench's; ``nornir``
runs the tests as nornir runs them, the control. Prints ``runner: X passed of N`` per runner,
then each failed test and the first line of its message; exits 1 when a test failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTROL = "nornir"
REGISTERED = [entry.name for entry in metadata.entry_points(group="nornir.plugins.runners")]
"""The runners registered with nornir, in the order their packages list them."""
RUNNERS = ["threaded", *(name for name in REGISTERED if name not in ("serial", "threaded"))]
"""The runners by default: nornir's reference and those of the packages installed here."""

PYTEST_LOG_CAPTURE = (
    "nornir's own test, on any runner with pytest >= 9.1, whose log capture handler on "
    "nornir's logger keeps InitNornir from adding its own (README.md)"
)
KNOWN = {
    f"core/test_InitNornir.py::TestLogging::test_InitNornir_logging_{name}": PYTEST_LOG_CAPTURE
    for name in ("defaults", "to_console")
}
"""Tests known to fail, and why: said instead of their message when they do."""

LEFT_OUT = {
    "core/test_registered_plugins.py": (
        "asserts the plugins installed are exactly nornir's own and nornir-utils' (which it "
        "imports): with nornir-bench installed, its runners are registered too"
    ),
}
"""Test modules not run, and why: nothing of a runner's behaviour."""


@dataclass
class Outcome:
    """One runner's session: how many tests it had, and those that did not pass."""

    runner: str
    tests: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    """Test id -> the first line of its failure's message."""
    skipped: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return self.tests - len(self.failed) - len(self.skipped)


def run_session(runner: str, tests: Path, report: Path) -> Outcome:
    """nornir's tests in ``tests`` on ``runner``, in a pytest session of their own."""
    env = {
        **os.environ,
        "NORNIR_SUITE_RUNNER": runner,
        "NORNIR_SUITE_REPORT": str(report),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", str(tests), "-p", "runner_swap", "-q",
            "-p", "no:cacheprovider", f"--rootdir={tests.parent}",
            "--continue-on-collection-errors",
            *[f"--ignore={tests / module}" for module in LEFT_OUT],
            # warnings are errors, but for the one nornir's own configuration ignores
            "-W", "error",
            "-W", "ignore::nornir.core.exceptions.ConflictingConfigurationWarning",
        ],
        cwd=tests.parent, env=env, capture_output=True, text=True, check=False,
    )
    if not report.is_file():
        sys.exit(f"{runner}: pytest ended with {done.returncode} and no report:\n"
                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    outcome = Outcome(runner)
    for test, seen in json.loads(report.read_text(encoding="utf-8")).items():
        outcome.tests += 1
        if seen["outcome"] == "failed":
            lines = seen["message"].strip().splitlines()
            outcome.failed[test] = lines[0][:200] if lines else ""
        elif seen["outcome"] == "skipped":
            outcome.skipped.append(test)
    return outcome


def checkout_version(root: Path) -> str | None:
    """The version of nornir a checkout holds (its pyproject's), if it says."""
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r'^version = "([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nornir-tests", type=Path, required=True, metavar="PATH",
                        help="the tests folder of a nornir checkout, or the checkout")
    parser.add_argument("--runners", default=",".join(RUNNERS),
                        help=f"comma-separated, among {', '.join((CONTROL, *REGISTERED))} "
                        "(default: %(default)s)")
    args = parser.parse_args()
    tests = args.nornir_tests.resolve()
    if (tests / "tests" / "conftest.py").is_file():
        tests = tests / "tests"
    if not (tests / "conftest.py").is_file():
        parser.error(f"{args.nornir_tests}: not the tests folder of a nornir checkout")
    runners = [name for name in args.runners.split(",") if name]
    unknown = sorted(set(runners) - {CONTROL, *REGISTERED})
    if unknown:
        parser.error(f"unknown runners {unknown}: choose among {CONTROL}, {', '.join(REGISTERED)}")
    checkout, installed = checkout_version(tests.parent), metadata.version("nornir")
    if checkout not in (None, installed):
        parser.error(f"the checkout is of nornir {checkout}, nornir {installed} is installed: "
                     "its tests would run another nornir than the runners were installed with")

    for module, why in LEFT_OUT.items():
        print(f"left out: {module}: {why}")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="nornir-suite-") as folder:
        for runner in runners:
            outcome = run_session(runner, tests, Path(folder) / f"{runner}.json")
            skipped = f" ({len(outcome.skipped)} skipped)" if outcome.skipped else ""
            print(f"{runner}: {outcome.passed} passed of {outcome.tests}{skipped}", flush=True)
            outcomes.append(outcome)
    for outcome in outcomes:
        for test, message in outcome.failed.items():
            why = f"known: {KNOWN[test]}" if test in KNOWN else message
            print(f"  {outcome.runner}: {test} failed: {why}")
    sys.exit(1 if any(outcome.failed for outcome in outcomes) else 0)


if __name__ == "__main__":
    main()
