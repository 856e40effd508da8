"""Per-host aggregation: counts, failure kinds, per-host times, throughput."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nornir_bench import HostTimer, summarize
from nornir_bench.core.attempts import FailedAttempt, record_attempts
from nornir_bench.core.exceptions import HostSkipped, RunAborted, RunTimeout, TaskTimeout
from tests.conftest import make_nornir
from tests.tasksets import fails_on_odd, grouped, reports_failure, returns_result


def test_counts_and_failures_grouped_by_type() -> None:
    nr = make_nornir("threadpool", hosts=10, num_workers=3)
    summary = summarize(nr.run(task=fails_on_odd), wall=2.0)
    assert (summary.hosts, summary.ok, summary.failed, summary.changed) == (10, 5, 5, 0)
    assert summary.failures == {"ValueError": ["dev1", "dev3", "dev5", "dev7", "dev9"]}
    assert summary.throughput == 5.0


def test_failed_subtask_reported_by_its_own_exception() -> None:
    summary = summarize(make_nornir("threadpool", hosts=6).run(task=grouped))
    assert summary.failures == {"RuntimeError": ["dev0", "dev3"]}


def test_failure_without_exception_and_changed_hosts() -> None:
    assert summarize(make_nornir(hosts=2).run(task=reports_failure)).failures == {
        "failed": ["dev0", "dev1"]
    }
    assert summarize(make_nornir(hosts=6).run(task=returns_result)).changed == 3


def test_per_host_times_from_the_timer() -> None:
    timer = HostTimer()
    nr = make_nornir("threadpool", hosts=20, num_workers=4).with_processors([timer])
    result = nr.run(task=returns_result)
    assert sorted(timer.elapsed) == sorted(result)
    summary = summarize(result, elapsed=timer.elapsed)
    assert summary.p50 is not None and summary.p95 is not None and summary.max is not None
    assert 0 <= summary.p50 <= summary.p95 <= summary.max


def test_percentiles_nearest_rank() -> None:
    result = make_nornir(hosts=20).run(task=returns_result)
    elapsed = {f"dev{i}": float(i + 1) for i in range(20)}  # 1 .. 20 seconds
    summary = summarize(result, elapsed=elapsed)
    assert (summary.p50, summary.p95, summary.max) == (10.0, 19.0, 20.0)


def test_lines_are_short_and_name_failures() -> None:
    result = make_nornir(hosts=14).run(task=fails_on_odd)
    lines = summarize(result, wall=0.5).lines()
    assert lines[0] == "hosts: 14, ok: 7, failed: 7, changed: 0"
    assert lines[-1].startswith(
        "failed with ValueError: 7 hosts (dev1, dev3, dev5, dev7, dev9, ... (+2))"
    )
    assert not any("Traceback" in line for line in lines)


def test_empty_result() -> None:
    summary = summarize(make_nornir(hosts=3).filter(name="none").run(task=grouped))
    assert (summary.hosts, summary.p50, summary.throughput) == (0, None, None)


@pytest.mark.parametrize("wall", [None, 0.0])
def test_no_throughput_without_wall(wall: float | None) -> None:
    assert summarize(make_nornir(hosts=2).run(task=returns_result), wall=wall).throughput is None


def test_one_host_is_one_host() -> None:
    lines = summarize(make_nornir(hosts=2).run(task=fails_on_odd)).lines()
    assert lines[-1] == "failed with ValueError: 1 host (dev1)"


def test_hosts_run_more_than_once_are_counted() -> None:
    result = make_nornir(hosts=3).run(task=returns_result)
    record_attempts(result["dev1"], [FailedAttempt("WorkerCrashed", "worker process 1 ...")])
    summary = summarize(result)
    assert summary.rerun == 1
    assert summary.lines()[-1] == (
        "run more than once: 1 host (after worker crashes; attempts and failed_attempts in the "
        "records)"
    )


def test_what_the_run_policies_did_is_counted_by_kind() -> None:
    def task(task: Any) -> str:
        number = int(task.host.name[3:])
        if number in (1, 3):  # group1: its first failure skips the rest of the group
            raise ConnectionResetError("reset")
        return "ok"

    nr = make_nornir(
        hosts=8, num_workers=1, group_max_failures={"group": 0}, retries=1, retry_delay=0,
        retry_jitter=0, max_failures=1,
    )
    summary = summarize(nr.run(task=task))
    # dev0 ok; dev1 fails twice (retried), so group1 (dev3, dev5, dev7) is skipped; dev2, dev4,
    # dev6 are ok: max_failures 1 is not crossed by one failure
    assert (summary.retried, summary.skipped, summary.aborted, summary.failed) == (1, 3, 0, 4)
    assert "retried: 1 host (attempts and failed_attempts in the records)" in summary.lines()
    assert "skipped: 3 hosts (their group failed past its limit)" in summary.lines()


def test_the_limit_that_stopped_a_run_is_the_last_line() -> None:
    nr = make_nornir(hosts=6, num_workers=1, max_failures=0)
    summary = summarize(nr.run(task=fails_on_odd))
    assert summary.aborted == 4 and summary.stopped_by == (
        "run aborted by max_failures: 1 host failed, more than 0"
    )
    assert summary.lines()[-2:] == [
        "not started: 4 hosts",
        "run aborted by max_failures: 1 host failed, more than 0",
    ]


def times_out(task: Any) -> None:
    raise TaskTimeout("inner", task.host.name, 1.0, abandoned=True)


def raises_by_host(task: Any) -> str:
    """Each host fails as a run policy would have made it fail (dev0 does not): the summary is
    the subject here, so the exceptions are raised by the task rather than by the policies."""
    number = int(task.host.name[3:])
    errors: dict[int, Exception] = {
        1: TaskTimeout("t", task.host.name, 1.0, abandoned=True),
        2: RunTimeout(5.0, started=True),
        3: RunTimeout(5.0, started=False),
        4: HostSkipped("group_max_failures", "2 hosts of site 'a' failed, more than 1"),
        5: RunAborted("max_failures", "4 hosts failed, more than 3"),
    }
    if number == 6:  # a subtask's timeout: the parent fails with NornirSubTaskError
        task.run(task=times_out)
    if number in errors:
        raise errors[number]
    return "ok"


def test_policy_failures_are_counted_by_what_they_did_to_the_host() -> None:
    summary = summarize(make_nornir(hosts=7).run(task=raises_by_host))
    assert (summary.timed_out, summary.abandoned) == (3, 2)  # dev1, dev2 and dev6's subtask
    assert (summary.aborted, summary.skipped) == (2, 1)  # dev3 never started, dev5; dev4
    assert summary.failures["TaskTimeout"] == ["dev1", "dev6"]
    assert summary.stopped_by == "run stopped by run_timeout: 5 s passed"  # dev3 comes first
    assert summary.lines()[-5:] == [
        "timed out: 3 hosts",
        "abandoned calls: 2 (blocking calls past their deadline, left to end in their threads)",
        "skipped: 1 host (their group failed past its limit)",
        "not started: 2 hosts",
        "run stopped by run_timeout: 5 s passed",
    ]


def test_retries_and_crash_reruns_are_told_apart_and_abandoned_attempts_counted() -> None:
    result = make_nornir(hosts=3).run(task=returns_result)
    record_attempts(
        result["dev1"],
        [FailedAttempt("WorkerCrashed", "worker process 1 ..."),
         FailedAttempt("TaskTimeout", "task ... timed out after 1 s", abandoned=True)],
    )
    record_attempts(result["dev2"], [FailedAttempt("TaskTimeout", "...", abandoned=True)] * 2)
    summary = summarize(result)
    assert (summary.rerun, summary.retried, summary.abandoned, summary.failed) == (1, 2, 3, 0)


def test_hosts_kept_from_starting_count_in_neither_times_nor_throughput() -> None:
    nr = make_nornir(hosts=6, num_workers=1, max_failures=0)  # dev1 fails: dev2..dev5 never run
    elapsed = {"dev0": 1.0, "dev1": 2.0, **{f"dev{i}": 0.0 for i in range(2, 6)}}
    summary = summarize(nr.run(task=fails_on_odd), elapsed=elapsed, wall=1.0)
    assert (summary.hosts, summary.failed, summary.aborted) == (6, 5, 4)
    assert (summary.p50, summary.max, summary.throughput) == (1.0, 2.0, 2.0)


def test_what_changes_did_reads_as_words() -> None:
    """``config: 3 hosts no change`` read badly: each state is worded with its count."""
    summary = summarize(make_nornir(hosts=1).run(task=returns_result))
    summary = replace(summary, changes={"no change": ["a", "b", "c"], "changed": ["d"],
                                        "rollback failed": ["e"]})
    assert "config: 1 host changed, 3 hosts with nothing to change, 1 host whose rollback " \
        "failed" in summary.lines()
