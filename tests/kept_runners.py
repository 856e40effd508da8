"""processpool runners kept for a test module, as a user keeps one between runs.

A processpool runner starts a fork server (a fresh interpreter: about 0.3 s of CPU) and its
workers at its first run, and keeps them for the next (``keep_workers``, its default). A
module running many processpool cases takes its runner from :data:`KEPT`: one per set of
options, started once, used by the tests that ask for those options, and closed when the
module ends (tests/conftest.py's ``kept_runners_closed`` checks that every process they had
is gone then). A test whose subject is a runner's start, stop, crash or signals builds a
runner of its own.

Between tests a kept runner holds no connection: one that a test left holding connections is
closed (its next run starts it again), as nothing of one test's hosts may reach another's.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from nornir_bench.runners.processpool import ProcessPoolRunner

__all__ = ["KEPT", "KeptRunners"]


class KeptRunners:
    """The processpool runners of the module running now, one per set of options.

    Args:
        most: runners kept at once; past it, the one used longest ago is closed (each holds
            a fork server and its workers).
    """

    def __init__(self, most: int) -> None:
        self.most = most
        self._runners: OrderedDict[str, ProcessPoolRunner] = OrderedDict()
        self.had: set[int] = set()  # every process a runner kept in this module has had

    def runner(self, options: Mapping[str, Any]) -> ProcessPoolRunner:
        """The kept runner of ``options`` (built at its first use)."""
        key = repr(sorted(options.items()))
        runner = self._runners.pop(key, None) or ProcessPoolRunner(**options)
        self._runners[key] = runner
        while len(self._runners) > self.most:
            _, oldest = self._runners.popitem(last=False)
            self._close(oldest)
        return runner

    def pids(self) -> set[int]:
        """The processes of the kept runners now: their fork servers and workers."""
        found = set()
        for runner in self._runners.values():
            found |= _processes(runner)
        self.had |= found
        return found

    def between_tests(self) -> None:
        """Close the kept runners that hold a host's connection: the next test's hosts must
        not find it."""
        for key, runner in list(self._runners.items()):
            if runner._procs.held.holders:  # private: read to decide, nothing else
                del self._runners[key]
                self._close(runner)

    def close(self) -> set[int]:
        """Close every kept runner (the module ended); every process they have had."""
        while self._runners:
            _, runner = self._runners.popitem()
            self._close(runner)
        had, self.had = self.had, set()
        return had

    def _close(self, runner: ProcessPoolRunner) -> None:
        self.had |= _processes(runner)
        runner.close()


def _processes(runner: ProcessPoolRunner) -> set[int]:
    # private: the fork server is the pool's; tests/runners/test_connections.py reads it too
    forks = runner._procs.forks
    if forks is None or forks.process.poll() is not None:
        return set(runner.worker_pids)
    return {forks.process.pid, *runner.worker_pids}


# One fork server and two workers each: the most options a module's tests run in a row (the
# conformance suite's policies that never act: 4 sets, each on 1 and 50 workers) fit.
KEPT = KeptRunners(most=8)

