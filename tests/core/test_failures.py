"""Why a host failed, as summaries, records and failure lines all read it."""

from __future__ import annotations

import pytest

from nornir_bench.core.exceptions import HostSkipped, RunAborted, RunTimeout, TaskTimeout
from nornir_bench.core.failures import failure_of, failure_type, not_started
from tests.conftest import make_nornir
from tests.tasksets import fails_on_odd, grouped, reports_failure


def test_a_failed_subtask_says_why_rather_than_its_parents_subtask_error() -> None:
    result = make_nornir(hosts=1).run(task=grouped)
    failure = failure_of(result["dev0"])
    assert failure is not None and failure.name == "maybe_fail"
    assert failure_type(result["dev0"]) == "RuntimeError"


def test_a_host_failed_without_an_exception_is_of_kind_failed() -> None:
    result = make_nornir(hosts=1).run(task=reports_failure)
    failure = failure_of(result["dev0"])
    assert failure is not None and failure.result == "bad state"
    assert failure_type(result["dev0"]) == "failed"


def test_a_host_that_did_not_fail_has_no_failure() -> None:
    result = make_nornir(hosts=2).run(task=fails_on_odd)
    assert failure_of(result["dev0"]) is None
    assert failure_type(result["dev1"]) == "ValueError"


@pytest.mark.parametrize(
    ("error", "kept_out"),
    [
        (RunAborted("max_failures", "3 hosts failed"), True),
        (HostSkipped("group_max_failures", "group1 failed"), True),
        (RunTimeout(5, started=False), True),
        (RunTimeout(5, started=True), False),
        (TaskTimeout("sim_rtt", "dev0", 5), False),
        (None, False),
    ],
)
def test_only_a_policy_keeping_a_host_from_starting_is_not_started(
    error: BaseException | None, kept_out: bool
) -> None:
    assert not_started(error) is kept_out
