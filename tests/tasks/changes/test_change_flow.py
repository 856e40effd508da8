"""The change's plan driven here, the device a list of lines (the drivers' own tests are the
router lab's): its verification, against a device that takes a line without a word and does
not hold it; the lines it sends, computed from the running configuration; a replace's dry run
(``--check``) on one line of drift; its journal entry written before its first line."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nornir_bench.core.changes import (
    CHANGED,
    COMPLIANT,
    DRIFTED,
    INTERRUPTED,
    NO_CHANGE,
    NOT_ROLLED_BACK,
    NOT_TOUCHED,
    ROLLED_BACK,
)
from nornir_bench.tasks.changes._change import Change, ChangeOptions, ConfigChangeFailed
from nornir_bench.tasks.changes._change_flow import change_flow
from nornir_bench.tasks.changes.backups import ChangeProgress
from nornir_bench.tasks.changes.journal import CONFIRMED, PENDING, read_journal
from nornir_bench.tasks.checks.check_outcomes import checks_text
from nornir_bench.tasks.checks.state_checks import checks_from
from nornir_bench.tasks.dialects.dialects import driver_for
from nornir_bench.tasks.sessions._plan import Command, Login, Plan, Read, Save, Send

RUNNING = ["hostname r1", "ip route 10.0.0.0/24 Null0"]
HELD = "ip route 10.1.1.0/24 Null0"
DROPPED = "ip route 10.2.2.0/24 Null0"


class ForgetfulDevice:
    """Takes every configuration line without a word, as a device does; holds each but those
    in ``drops`` (a line it accepts and then does not show: unsupported, or overwritten by
    its own daemon)."""

    def __init__(self, drops: tuple[str, ...] = ()) -> None:
        self.lines = list(RUNNING)
        self.drops = drops
        self.sent: list[str] = []
        self.sends = 0  # Send requests: each a conversation in configuration mode

    def answer(self, request: object) -> Any:
        if isinstance(request, Command):  # a state check's: a command this device lacks
            return f"% Unknown command: {request.command}"
        if isinstance(request, Read):
            return "\n".join(self.lines) + "\n"
        if isinstance(request, Login):  # a new login, to see the device can still be reached
            return None
        if isinstance(request, Send):
            self.receiving(request)
            self.sends += 1
            for line in request.lines:
                self.sent.append(line)
                if line.startswith("no "):
                    self.lines = [held for held in self.lines if held != line[3:]]
                elif line not in self.drops and line not in self.lines:
                    self.lines.append(line)
            return None  # nothing refused
        assert isinstance(request, Save), request
        return "[OK]"

    def receiving(self, request: Send) -> None:
        """What the device does as lines come, before it takes them."""


def _driven(plan: Plan[Change], device: ForgetfulDevice) -> Change:
    try:
        request = next(plan)
        while True:
            request = plan.send(device.answer(request))
    except StopIteration as stop:
        change: Change = stop.value
        return change


def _change(
    device: ForgetfulDevice, tmp_path: Path, lines: tuple[str, ...] = (HELD, DROPPED),
    **options: Any,
) -> Change:
    """The change of ``lines`` on ``device``; ``options``: ChangeOptions' fields."""
    def backup(text: str) -> Path:
        path = tmp_path / "r1.cfg"
        path.write_text(text, encoding="utf-8")
        return path

    how = ChangeOptions(**{"task": "send_config", "host": "r1", "platform": "ios",
                           "dry_run": False, "rollback": True, "save": False,
                           "backup": backup, **options})
    task = SimpleNamespace(parent_task=None)  # what the change notes its progress on
    progress = ChangeProgress(task)  # type: ignore[arg-type]
    return _driven(change_flow(list(lines), how, progress), device)


def test_a_change_the_device_holds_verifies(tmp_path: Path) -> None:
    change = _change(ForgetfulDevice(), tmp_path)
    assert change.state == CHANGED
    assert change.diff.splitlines()[2:] == [f"+{HELD}", f"+{DROPPED}"]


def test_a_line_taken_and_not_held_fails_the_change_naming_it_and_rolls_back(
    tmp_path: Path,
) -> None:
    device = ForgetfulDevice(drops=(DROPPED,))
    with pytest.raises(ConfigChangeFailed) as failed:
        _change(device, tmp_path)
    message = str(failed.value)
    assert message.startswith("not verified: read back, the configuration still lacks:")
    lacks = message.split("; rolled back", 1)[0]
    assert lacks.endswith(f"\n+{DROPPED}") and HELD not in lacks
    assert failed.value.state == ROLLED_BACK
    assert device.sent == [HELD, DROPPED, f"no {HELD}"] and device.lines == RUNNING


def test_without_rollback_a_line_not_held_leaves_the_change_failed_as_it_is(
    tmp_path: Path,
) -> None:
    device = ForgetfulDevice(drops=(DROPPED,))
    with pytest.raises(ConfigChangeFailed, match="still lacks:") as failed:
        _change(device, tmp_path, rollback=False)
    assert f"\n+{DROPPED}; not rolled back" in str(failed.value)
    assert failed.value.state == NOT_ROLLED_BACK
    assert device.lines == [*RUNNING, HELD]


def test_a_line_already_on_the_device_is_not_sent_again(tmp_path: Path) -> None:
    """The lines sent are computed from the running configuration: of a change giving a line
    the device holds and a new one, only the new one goes."""
    device = ForgetfulDevice()
    change = _change(device, tmp_path, lines=(RUNNING[1], HELD))
    assert change.state == CHANGED
    assert device.sent == [HELD]
    again = _change(device, tmp_path, lines=(RUNNING[1], HELD))
    assert again.state == NO_CHANGE and device.sends == 1  # all there: nothing sent


@pytest.mark.parametrize(
    ("intended", "fix"),
    [((RUNNING[1], HELD), HELD), ((), f"no {RUNNING[1]}")],
    ids=["lacks-one-line", "holds-one-line-more"],
)
def test_a_replace_check_with_one_line_of_drift_reads_drifted_and_sends_nothing(
    tmp_path: Path, intended: tuple[str, ...], fix: str
) -> None:
    """One line of drift within the scope is drift (what --check exits 1 for), and the
    remediation is that one line."""
    device = ForgetfulDevice()
    check = dict(dry_run=True, replace=True, scope=("ip route",),
                 driver=driver_for("cisco_ios", replace=True))
    change = _change(device, tmp_path, lines=intended, **check)
    assert change.state == DRIFTED
    assert change.remediation == (fix,)
    assert change.diff.splitlines()[2:] == [f"+{HELD}" if fix == HELD else f"-{RUNNING[1]}"]
    assert _change(device, tmp_path, lines=(RUNNING[1],), **check).state == COMPLIANT
    assert device.sends == 0 and device.lines == RUNNING


class JournalReadingDevice(ForgetfulDevice):
    """Reads the change's journal as the first lines come: what a run SIGKILLed at that
    moment would leave for ``nornir-bench recover``."""

    def __init__(self, journal: Path) -> None:
        super().__init__()
        self.journal = journal
        self.journal_at_first_send: dict[str, Any] | None = None

    def receiving(self, request: Send) -> None:
        if self.sends == 0:
            found = read_journal(self.journal).hosts if self.journal.exists() else {}
            self.journal_at_first_send = dict(found.get("r1", {}))


def test_a_confirmed_change_is_pending_in_the_journal_before_its_first_line_is_sent(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "run.journal"
    device = JournalReadingDevice(journal)
    change = _change(device, tmp_path, confirm=60.0, journal=str(journal))
    assert change.state == CHANGED and device.sent == [HELD, DROPPED]
    seen = device.journal_at_first_send
    assert seen is not None and seen.get("state") == PENDING, seen
    assert seen["backup"] == str(tmp_path / "r1.cfg") and seen["task"] == "send_config"
    assert read_journal(journal).hosts["r1"]["state"] == CONFIRMED


def test_a_check_not_read_before_the_change_says_why_in_its_record(tmp_path: Path) -> None:
    """Its record's ``failure``, not only the host's message: the records, the report page
    and ``diff`` read the checks from the record."""
    device = ForgetfulDevice()
    checks = checks_from([{"name": "peers", "command": "show bgp summary json"}])
    with pytest.raises(ConfigChangeFailed, match="not touched") as failed:
        _change(device, tmp_path, checks=checks)
    assert failed.value.state == NOT_TOUCHED and device.sent == []
    (record,) = failed.value.checks
    assert record["held"] is None and record["after"] is None
    assert record["failure"].startswith("before the change, not read: ")
    assert record["failure"].split("not read: ", 1)[1] in str(failed.value)  # the same reason
    assert checks_text([record]) == f"check 'peers' (same): {record['failure']}"


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def test_asked_to_the_configurations_read_before_and_after_are_kept_and_travel_pickled(
    tmp_path: Path,
) -> None:
    """``keep_configs``: what the change read first and read back last (after the change,
    after its rollback; the same text when nothing was sent; nothing after when the session
    dropped under it), kept through a pickle as a worker sends it; not asked, nothing."""
    assert _change(ForgetfulDevice(), tmp_path).configs is None
    device = ForgetfulDevice()
    made = _change(device, tmp_path, lines=(HELD,), keep_configs=True)
    assert made.configs is not None
    assert (made.configs.before, made.configs.after) == (_text(RUNNING), _text(device.lines))
    assert HELD in made.configs.after
    same = _change(device, tmp_path, lines=(HELD,), keep_configs=True)
    assert same.state == NO_CHANGE and same.configs is not None
    assert same.configs.before == same.configs.after == _text(device.lines)

    forgetful = ForgetfulDevice(drops=(DROPPED,))
    with pytest.raises(ConfigChangeFailed) as failed:
        _change(forgetful, tmp_path, keep_configs=True)
    assert failed.value.state == ROLLED_BACK
    error = pickle.loads(pickle.dumps(failed.value))
    assert (error.configs.before, error.configs.after) == (_text(RUNNING), _text(RUNNING))

    # The session drops under the lines sent, as a driver says it: raised into the plan.
    how = ChangeOptions(task="send_config", host="r1", platform="ios", dry_run=False,
                        rollback=True, save=False, backup=lambda text: tmp_path / "r1.cfg",
                        keep_configs=True)
    progress = ChangeProgress(SimpleNamespace(parent_task=None))  # type: ignore[arg-type]
    plan = change_flow([HELD], how, progress)
    assert isinstance(next(plan), Read)
    assert isinstance(plan.send(_text(RUNNING)), Send)
    with pytest.raises(ConfigChangeFailed) as failed:
        plan.throw(ConnectionResetError("the session dropped"))
    assert failed.value.state == INTERRUPTED and failed.value.configs is not None
    assert (failed.value.configs.before, failed.value.configs.after) == (_text(RUNNING), None)
