"""A job run as text: its failed hosts (those that ran first, those kept out in one line), and
why each failed, said the same way in every line."""

from __future__ import annotations

from pathlib import Path

from nornir.core.task import Task

from nornir_bench.bench.summary import summarize
from nornir_bench.core.secrets import Redactor
from nornir_bench.jobs.run import JobRun
from nornir_bench.jobs.show import failure_lines, result_lines
from tests.conftest import make_nornir

SKIPPED = (
    "HostSkipped: skipped: group_max_failures: more than 0 hosts of group 'group1' failed"
)


def fails_on_dev1_and_every_fourth(task: Task) -> str:
    number = int(task.host.name[3:])
    if number == 1 or number % 4 == 0:
        raise ValueError(f"refused by {task.host.name}")
    return "ok"


def skipping_run() -> JobRun:
    """20 hosts, one at a time: dev1's failure skips the rest of group1 (the odd hosts, after
    dev1's); group0 has no failure limit, and its every fourth host fails."""
    nr = make_nornir(hosts=20, num_workers=1, group_max_failures={"group": {"group1": 0}})
    result = nr.run(task=fails_on_dev1_and_every_fourth)
    return JobRun(result, summarize(result), Path("out.jsonl"), 20, False, Redactor())


def test_hosts_kept_from_starting_are_one_line_after_those_that_ran() -> None:
    assert failure_lines(skipping_run()) == [
        "  dev0: ValueError: refused by dev0",
        "  dev1: ValueError: refused by dev1",
        "  dev4: ValueError: refused by dev4",
        "  dev8: ValueError: refused by dev8",
        "  dev12: ValueError: refused by dev12",
        "  dev16: ValueError: refused by dev16",
        f"  9 hosts (dev3, dev5, dev7, dev9, dev11, ... (+4)): {SKIPPED}",
    ]


def test_hosts_kept_from_starting_never_crowd_out_those_that_ran() -> None:
    assert failure_lines(skipping_run(), limit=4) == [
        "  dev0: ValueError: refused by dev0",
        "  dev1: ValueError: refused by dev1",
        "  dev4: ValueError: refused by dev4",
        "  dev8: ValueError: refused by dev8",
        "  ... and 11 more: see out.jsonl",  # dev12, dev16 and the 9 skipped
    ]
    assert failure_lines(skipping_run(), limit=7)[-1] == (
        f"  9 hosts (dev3, dev5, dev7, dev9, dev11, ... (+4)): {SKIPPED}"
    )


def refuses_at_length(task: Task) -> str:
    if task.host.name == "dev1":
        raise ValueError("refused: " + "x" * 400 + " backup at /backups/dev1.cfg\nsecond line")
    return "ok"


def test_a_long_failure_is_cut_in_its_middle_with_a_marker_the_same_in_both_places() -> None:
    """Past 300 characters a failure's line loses its middle, not its end (a backup's path,
    an advice), and says how much was cut; the records keep the whole message."""
    result = make_nornir(hosts=2).run(task=refuses_at_length)
    done = JobRun(result, summarize(result), Path("out.jsonl"), 2, False, Redactor())
    (line,) = failure_lines(done)
    assert line.startswith("  dev1: ValueError: refused: xxx")
    assert line.endswith("xxx backup at /backups/dev1.cfg")
    assert " [... 137 characters cut ...] " in line  # 9 + 400 + 28 = 437, 300 shown
    assert list(result_lines(done))[2] == f"dev1: failed: {line.removeprefix('  dev1: ')}"
