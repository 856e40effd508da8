"""The NETCONF change's plan driven here by a scripted server (the lab's netconfd cannot be made
to refuse these): how each way the change ends says what holds on the device. A
``<cancel-commit>``, a rollback's ``<copy-config>`` or ``<commit>``, the confirming ``<commit>``
or the ``<unlock>`` refused; what a deadline says at each step (the note on the host's task);
what a second Ctrl-C says of a host stopped in its confirm window (its journal); and the
session dropped by the driver when the plan raises."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lxml import etree
from nornir.core.inventory import Host

from nornir_bench.core.changes import (
    CHANGED,
    INTERRUPTED,
    ROLLBACK_FAILED,
    noted_change,
)
from nornir_bench.jobs.recover import recover_journal
from nornir_bench.tasks.changes._change import Change, ChangeOptions, ConfigChangeFailed
from nornir_bench.tasks.changes._netconf_flow import netconf_flow
from nornir_bench.tasks.changes.backups import ChangeProgress
from nornir_bench.tasks.changes.journal import PENDING, REVERTED
from nornir_bench.tasks.checks.state_checks import checks_from
from nornir_bench.tasks.dialects.netconf_xml import NETCONF_NS, XPATH_CAPABILITY
from nornir_bench.tasks.sessions._netconf_plan import ndrive
from nornir_bench.tasks.sessions._netconf_requests import (
    CANDIDATE,
    RUNNING,
    CancelCommit,
    Commit,
    CopyConfig,
    DiscardChanges,
    EditConfig,
    Get,
    GetConfig,
    Lock,
    NetconfRefused,
    SessionLost,
    Unlock,
    Validate,
)
from nornir_bench.tasks.sessions._plan import Login, Plan, Wait
from nornir_bench.tasks.sessions.netconf_session import CONNECTION_NAME, NetconfSession

IETF_INTERFACES = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
T = 38  # the seconds the server waits for the confirming commit


def data(description: str) -> str:
    return (f"<data xmlns='{NETCONF_NS}'><interfaces xmlns='{IETF_INTERFACES}'><interface>"
            f"<name>eth1</name><description>{description}</description></interface>"
            "</interfaces></data>")


BEFORE, AFTER = data("spare"), data("to the core")
DIFF = ("--- running\n+++ candidate\n@@ -2,5 +2,5 @@\n   <interface>\n     <name>eth1</name>\n"
        "-    <description>spare</description>\n+    <description>to the core</description>\n"
        "   </interface>\n </interfaces>")


RPCS = {CancelCommit: "cancel-commit", CopyConfig: "copy-config", Commit: "commit",
        Unlock: "unlock"}


class ScriptedServer:
    """Answers a NETCONF change's requests as a server with a candidate does, its datastores
    kept as XML; ``refuses`` says which request it answers with an ``<rpc-error>``. Each
    request is kept (``asked``), with what the host's task noted when it came (``notes``)."""

    def __init__(self, refuses: Callable[[object], bool] = lambda request: False,
                 task: Any = None) -> None:
        self.running = self.candidate = BEFORE
        self.before_confirmed: str | None = None  # running before a confirmed commit pending
        self.refuses = refuses
        self.task = task
        self.asked: list[object] = []
        self.notes: list[dict[str, Any] | None] = []

    def answer(self, request: object) -> Any:
        self.asked.append(request)
        self.notes.append(None if self.task is None else noted_change(self.task))
        if self.refuses(request):
            raise NetconfRefused(RPCS[type(request)], "operation-failed", "scripted refusal")
        if isinstance(request, GetConfig):
            return self.running if request.source == RUNNING else self.candidate
        if isinstance(request, Get):
            return self.running
        if isinstance(request, EditConfig):
            self.candidate = AFTER
        elif isinstance(request, CopyConfig):  # kept as <data>, as <get-config> says it
            root = etree.Element(f"{{{NETCONF_NS}}}data", nsmap={None: NETCONF_NS})
            root.extend(list(etree.fromstring(request.config)))
            self.candidate = etree.tostring(root, encoding="unicode")
        elif isinstance(request, DiscardChanges):
            self.candidate = self.running
        elif isinstance(request, Commit):
            if request.confirm_timeout is not None:
                self.before_confirmed = self.running
            elif self.before_confirmed is not None:  # the confirming commit
                self.before_confirmed = None
            self.running = self.candidate
        elif isinstance(request, CancelCommit):
            assert self.before_confirmed is not None
            self.running = self.candidate = self.before_confirmed
            self.before_confirmed = None
        else:
            assert isinstance(request, (Lock, Unlock, Validate, Wait, Login)), request
        return None

    def names(self) -> list[str]:
        """The requests asked, by class, a confirmed commit as ``Commit(confirmed)``."""
        return [type(r).__name__ + ("(confirmed)" if getattr(r, "confirm_timeout", None)
                                    else "") for r in self.asked]


def driven(plan: Plan[Change], server: ScriptedServer) -> Change:
    """``plan`` answered by ``server``, its errors thrown in where they stand."""
    answer: Any = None
    error: Exception | None = None
    try:
        while True:
            request = plan.throw(error) if error is not None else plan.send(answer)
            try:
                answer, error = server.answer(request), None
            except Exception as exc:  # noqa: BLE001 - thrown in, as the driver does
                answer, error = None, exc
    except StopIteration as stop:
        change: Change = stop.value
        return change


NEVER = {"name": "eth1 described", "xpath": "/interfaces/interface[name='eth1']",
         "path": "interfaces.interface.description", "expect": {"equals": "never"}}
HOLDS = {**NEVER, "expect": "present"}


def change(server: ScriptedServer, tmp_path: Path, *, check: dict[str, Any] = HOLDS,
           confirm: bool = True, task: Any = None, lock_wait: float = 0.0) -> Change:
    """The change of eth1's description on ``server``, with ``check`` read after; ``confirm``:
    a confirmed commit of :data:`T` s (a window of a moment), journaled in
    ``tmp_path/run.journal``."""

    def backup(text: str) -> Path:
        path = tmp_path / "nc1.cfg"
        path.write_text(text, encoding="utf-8")
        return path

    how = ChangeOptions(
        task="netconf_edit_config", host="nc1", platform="netconf", dry_run=False,
        rollback=True, save=False, backup=backup, checks=checks_from([check], netconf=True),
        confirm=0.001 if confirm else None, new_login=False,
        journal=str(tmp_path / "run.journal") if confirm else None,
    )
    task = task or SimpleNamespace(parent_task=None)
    server.task = task
    config = f"<config xmlns='{NETCONF_NS}'>{AFTER[AFTER.index('<interfaces'):-7]}</config>"
    plan = netconf_flow(config, how, ChangeProgress(task), confirm_timeout=T if confirm else None,
                        lock_wait=lock_wait)
    return driven(plan, server)


def journal_states(path: Path) -> list[str]:
    return [json.loads(line)["state"] for line in path.read_text().splitlines()[1:]]


def test_a_refused_cancel_commit_says_the_commit_is_pending_the_session_dropped(
    tmp_path: Path,
) -> None:
    """The check fails, ``<cancel-commit>`` is refused: the confirmed commit is still pending
    on the server, which reverts it as the session (dropped: the plan raises) ends. The
    journal keeps it pending, the device's promise: recover sends nothing."""
    server = ScriptedServer(lambda request: isinstance(request, CancelCommit))
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path, check=NEVER)
    backup = tmp_path / "nc1.cfg"
    assert str(failed.value).endswith(
        "; <cancel-commit> refused: operation-failed: scripted refusal: the confirmed commit "
        "is still pending: the session is dropped, and the server reverts its confirmed commit "
        f"itself when the session ends, or {T} s after the commit; backup at {backup}")
    assert failed.value.change == {"state": INTERRUPTED, "backup": str(backup)}
    assert server.names()[-1] == "CancelCommit"  # nothing after it: no <unlock>, no read
    journal = tmp_path / "run.journal"
    assert journal_states(journal) == [PENDING]
    said: list[str] = []
    recover_journal(journal, said.append)
    assert len(said) == 1 and said[0].startswith(
        "recover: nc1: nothing to send: the device reverts its confirmed commit itself"), said
    assert journal_states(journal) == [PENDING, REVERTED]


@pytest.mark.parametrize("refused", ["copy-config", "commit"])
def test_a_refused_rollback_fails_rollback_failed_naming_the_refusal_and_the_backup(
    tmp_path: Path, refused: str
) -> None:
    """A plain commit whose check fails is rolled back by ``<copy-config>`` of the
    configuration before and a ``<commit>``: either refused leaves running holding the
    change, said as a failed rollback with its diff."""

    def refuses(request: object) -> bool:
        if refused == "copy-config":
            return isinstance(request, CopyConfig)
        return isinstance(request, Commit) and any(
            isinstance(r, CopyConfig) for r in server.asked)

    server = ScriptedServer(refuses)
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path, check=NEVER, confirm=False)
    backup = tmp_path / "nc1.cfg"
    assert str(failed.value).startswith("after the change, check 'eth1 described'")
    assert str(failed.value).endswith(
        f"; rolling back, <{refused}> refused: operation-failed: scripted refusal: ROLLBACK "
        "FAILED: running holds the change, the configuration before is in the backup at "
        f"{backup}")
    assert failed.value.change == {"state": ROLLBACK_FAILED, "backup": str(backup)}
    assert failed.value.diff == DIFF
    assert server.running == AFTER
    assert server.names()[-1] == ("CopyConfig" if refused == "copy-config" else "Commit")


def test_a_refused_confirming_commit_says_the_commit_is_pending_and_journals_it_so(
    tmp_path: Path,
) -> None:
    """The checks hold, the confirming ``<commit>`` is refused: not confirmed, the confirmed
    commit pending; the journal, marked ``confirming`` before it, says pending again, so that
    recover says the device reverts it rather than that its state is unknown."""
    server = ScriptedServer(lambda request: isinstance(request, Commit)
                            and request.confirm_timeout is None)
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path)
    backup = tmp_path / "nc1.cfg"
    assert str(failed.value) == (
        "<commit> refused: operation-failed: scripted refusal (the confirming one): the "
        "confirmed commit is still pending: the session is dropped, and the server reverts "
        f"its confirmed commit itself when the session ends, or {T} s after the commit; "
        f"backup at {backup}")
    assert failed.value.change == {"state": INTERRUPTED, "backup": str(backup)}
    journal = tmp_path / "run.journal"
    said: list[str] = []
    recover_journal(journal, said.append)
    assert len(said) == 1 and said[0].startswith(
        "recover: nc1: nothing to send: the device reverts its confirmed commit itself"), said


def test_a_refused_unlock_says_how_the_change_ended_and_that_the_session_is_dropped(
    tmp_path: Path,
) -> None:
    server = ScriptedServer(lambda request: isinstance(request, Unlock))
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path)
    backup = tmp_path / "nc1.cfg"
    assert str(failed.value) == (
        f"the change ended changed, backup at {backup}; then <unlock> refused: "
        "operation-failed: scripted refusal: the session is dropped, which gives the lock "
        "back and leaves running as the change left it")
    assert failed.value.change == {"state": CHANGED, "backup": str(backup)}
    assert failed.value.diff == DIFF and server.running == AFTER


class ScriptedManager:
    """An ncclient manager whose server is a :class:`ScriptedServer`: its RPCs answered by it,
    a refusal raised as ncclient's ``RPCError``; its transport's close counted."""

    connected = True

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.timeout: float | None = None
        self._session = SimpleNamespace(closes=0)
        self._session.close = self._closed  # type: ignore[attr-defined]

    def _closed(self) -> None:
        self._session.closes += 1  # type: ignore[attr-defined]

    def _rpc(self, request: object) -> Any:
        from ncclient.operations import RPCError

        try:
            answer = self.server.answer(request)
        except NetconfRefused:
            raise RPCError(etree.fromstring(
                f"<rpc-error xmlns='{NETCONF_NS}'><error-tag>operation-failed</error-tag>"
                "<error-message>scripted refusal</error-message></rpc-error>")) from None
        return SimpleNamespace(data_xml=answer)

    def get_config(self, source: str) -> Any:
        return self._rpc(GetConfig(source))

    def get(self, filter: tuple[str, str]) -> Any:
        return self._rpc(Get(filter[1]))

    def lock(self, target: str) -> Any:
        return self._rpc(Lock())

    def unlock(self, target: str) -> Any:
        return self._rpc(Unlock())

    def edit_config(self, config: str, target: str, error_option: str) -> Any:
        assert target == CANDIDATE and error_option == "rollback-on-error"
        return self._rpc(EditConfig(config))

    def validate(self, source: Any) -> Any:
        return self._rpc(Validate(etree.tostring(source, encoding="unicode")))

    def commit(self, confirmed: bool = False, timeout: str | None = None) -> Any:
        return self._rpc(Commit(int(timeout) if confirmed and timeout else None))

    def discard_changes(self) -> Any:
        return self._rpc(DiscardChanges())


def test_the_driver_drops_the_session_when_the_unlock_is_refused(tmp_path: Path) -> None:
    """On the driver the tasks use (ndrive): the plan raising at the refused ``<unlock>``
    drops the host's session, its transport closed with no RPC sent (no
    ``<close-session>``), which is what gives the lock back."""
    host = Host("nc1", platform="netconf")
    session = NetconfSession()
    manager = ScriptedManager(ScriptedServer(lambda request: isinstance(request, Unlock)))
    session.manager = manager  # type: ignore[assignment]
    host.connections[CONNECTION_NAME] = session  # type: ignore[assignment]
    task = SimpleNamespace(host=host, parent_task=None)

    def backup(text: str) -> Path:
        return tmp_path / "nc1.cfg"

    how = ChangeOptions(task="netconf_edit_config", host="nc1", platform="netconf",
                        dry_run=False, rollback=True, save=False, backup=backup)
    config = f"<config xmlns='{NETCONF_NS}'>{AFTER[AFTER.index('<interfaces'):-7]}</config>"
    plan = netconf_flow(config, how, ChangeProgress(task), confirm_timeout=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigChangeFailed, match="<unlock> refused"):
        ndrive(task, plan, 30.0)  # type: ignore[arg-type]
    assert isinstance(manager.server.asked[-1], Unlock)
    assert manager._session.closes == 1  # type: ignore[attr-defined]
    assert session.manager is None


class WarningManager(ScriptedManager):
    """Does what it is asked, and answers ``warns``' requests with an ``<rpc-error>`` of
    severity warning besides (Junos: "statement has no contents; ignored"), which ncclient
    raises as it raises a refusal."""

    server_capabilities = [XPATH_CAPABILITY]

    def __init__(self, server: ScriptedServer, warns: Callable[[object], bool]) -> None:
        super().__init__(server)
        self.warns = warns

    def _rpc(self, request: object) -> Any:
        from ncclient.operations import RPCError

        reply = super()._rpc(request)
        if self.warns(request):
            raise RPCError(etree.fromstring(
                f"<rpc-error xmlns='{NETCONF_NS}'><error-type>application</error-type>"
                "<error-tag>operation-failed</error-tag><error-severity>warning</error-severity>"
                "<error-message>statement has no contents; ignored</error-message></rpc-error>"))
        return reply


@pytest.mark.parametrize("warns", [Commit, EditConfig, Lock, Unlock],
                         ids=lambda kind: kind.__name__)
def test_a_warning_is_not_a_refusal(tmp_path: Path, warns: type) -> None:
    """An RPC answered with a warning was done: the change goes on, confirmed by its checks
    and journaled so (a warning at the confirming commit once read as a refusal, journaled
    the commit as still pending, and recover then called it reverted by the device)."""
    host = Host("nc1", platform="netconf")
    session = NetconfSession()
    server = ScriptedServer()
    session.manager = WarningManager(server, lambda request: isinstance(request, warns))  # type: ignore[assignment]
    host.connections[CONNECTION_NAME] = session  # type: ignore[assignment]
    task = SimpleNamespace(host=host, parent_task=None)
    server.task = task

    def backup(text: str) -> Path:
        return tmp_path / "nc1.cfg"

    how = ChangeOptions(task="netconf_edit_config", host="nc1", platform="netconf",
                        dry_run=False, rollback=True, save=False, backup=backup,
                        checks=checks_from([HOLDS], netconf=True), confirm=0.001,
                        new_login=False, journal=str(tmp_path / "run.journal"))
    config = f"<config xmlns='{NETCONF_NS}'>{AFTER[AFTER.index('<interfaces'):-7]}</config>"
    plan = netconf_flow(config, how, ChangeProgress(task), confirm_timeout=T)  # type: ignore[arg-type]
    done = ndrive(task, plan, 30.0)  # type: ignore[arg-type]
    assert done.state == CHANGED and server.running == AFTER
    assert server.names().count("Commit") == 1  # the confirming one, after the confirmed
    assert journal_states(tmp_path / "run.journal") == [PENDING, PENDING, "confirmed"]


class DroppingServer(ScriptedServer):
    """Loses the session at the first read of running after a commit, as a server gone."""

    def answer(self, request: object) -> Any:
        if isinstance(request, GetConfig) and any(isinstance(r, Commit) for r in self.asked):
            raise ConnectionResetError("the server went away")
        return super().answer(request)


def test_a_session_lost_reading_back_a_cancelled_commit_says_the_server_reverted_it(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigChangeFailed) as failed:
        change(DroppingServer(), tmp_path, check=NEVER)
    assert str(failed.value) == (
        "the session failed during the change (ConnectionResetError: the server went away): "
        f"cancelled: the server reverted its confirmed commit; backup at {tmp_path / 'nc1.cfg'}")
    assert failed.value.change == {"state": INTERRUPTED, "backup": str(tmp_path / "nc1.cfg")}


@pytest.mark.parametrize(("confirm", "holds"), [
    (True, "committed and confirmed: running holds the change;"),
    (False, "committed: running holds the change;"),
], ids=["confirmed", "plain-commit"])
def test_a_session_lost_reading_back_a_change_made_says_it_holds_and_records_it_changed(
    tmp_path: Path, confirm: bool, holds: str
) -> None:
    """The checks held (and the commit was confirmed): the change is made, whatever the
    reading back of running says; recorded ``changed``, the host failed naming the loss."""
    with pytest.raises(ConfigChangeFailed) as failed:
        change(DroppingServer(), tmp_path, confirm=confirm)
    assert str(failed.value) == (
        f"{holds} backup at {tmp_path / 'nc1.cfg'}; then the session failed reading running "
        "back (ConnectionResetError: the server went away): it is dropped")
    assert failed.value.change == {"state": CHANGED, "backup": str(tmp_path / "nc1.cfg")}
    assert failed.value.diff == DIFF


class LostAtUnlock(ScriptedServer):
    """Loses the session when the lock is given back, as a server gone after the change."""

    def answer(self, request: object) -> Any:
        if isinstance(request, Unlock):
            raise ConnectionResetError("the server went away")
        return super().answer(request)


def test_a_session_lost_at_the_unlock_says_how_the_change_ended(tmp_path: Path) -> None:
    with pytest.raises(ConfigChangeFailed) as failed:
        change(LostAtUnlock(), tmp_path)
    assert str(failed.value) == (
        f"the change ended changed, backup at {tmp_path / 'nc1.cfg'}; then the session failed "
        "at <unlock> (ConnectionResetError: the server went away): the session is dropped, "
        "which gives the lock back and leaves running as the change left it")
    assert failed.value.change == {"state": CHANGED, "backup": str(tmp_path / "nc1.cfg")}


def test_the_checks_before_are_read_under_the_lock(tmp_path: Path) -> None:
    """Their values are those the change starts from: read once the candidate is locked,
    after any change of another session that the lock waited for."""
    server = ScriptedServer()
    change(server, tmp_path)
    assert server.names()[:2] == ["Lock", "Get"]


class LostBeforeConfirming(ScriptedServer):
    """The session found ended when the confirming ``<commit>`` is to be sent (the driver
    answers so before sending anything)."""

    def answer(self, request: object) -> Any:
        if isinstance(request, Commit) and request.confirm_timeout is None \
                and self.before_confirmed is not None:
            raise SessionLost("TransportError: Not connected to NETCONF server")
        return super().answer(request)


def test_a_session_lost_before_the_confirming_commit_says_the_server_reverts_it(
    tmp_path: Path,
) -> None:
    """Nothing was sent, and the server sees the session end: the confirmed commit is the
    server's to revert, journaled pending again (not confirming: recover says so, rather
    than 'the run died sending the commit that confirms the change')."""
    with pytest.raises(ConfigChangeFailed) as failed:
        change(LostBeforeConfirming(), tmp_path)
    assert str(failed.value) == (
        "the session ended before the confirming <commit> was sent (TransportError: Not "
        "connected to NETCONF server): the confirmed commit is still pending: the session is "
        f"dropped, and the server reverts its confirmed commit itself when the session ends, "
        f"or {T} s after the commit; backup at {tmp_path / 'nc1.cfg'}")
    entries = [json.loads(line) for line in
               (tmp_path / "run.journal").read_text().splitlines()[1:]]
    assert (entries[-1]["state"], entries[-1].get("confirming")) == (PENDING, False)


class DeniesAccess(ScriptedServer):
    def answer(self, request: object) -> Any:
        if isinstance(request, Lock):
            self.asked.append(request)
            raise NetconfRefused("lock", "access-denied", "not allowed")
        return super().answer(request)


def test_a_lock_refused_otherwise_than_held_is_not_asked_again(tmp_path: Path) -> None:
    server = DeniesAccess()
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path, lock_wait=60)
    assert str(failed.value) == "<lock> refused: access-denied: not allowed: nothing sent"
    assert server.names() == ["Lock"]
