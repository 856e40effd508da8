"""A NETCONF conversation written once, as a plan (as :mod:`~nornir_bench.tasks.sessions._plan`
writes a CLI one), and the driver that runs it on the host's NETCONF session
(:mod:`~nornir_bench.tasks.sessions.netconf_session`, ncclient): :func:`ndrive`. An async
task runs it whole in the run's thread pool.

The plan yields NETCONF requests (:data:`NetconfRequest`), and ``Wait`` and ``Login`` as a CLI
plan does; a device's ``<rpc-error>`` is thrown into it as :class:`NetconfRefused`, where it
stands. Each RPC waits at most the host's time left; past its deadline nothing more is sent.
Once the session is found ended (the device, or a jump host on the way, closed it), every
request and wait the plan yields is answered with :class:`SessionLost`: nothing can be asked
on it any more, and a check read again and again within a confirm window would wait out the
window. A plan that raises (the session failed, a reply did not come, the deadline passed) has its
session dropped, no RPC sent: the server then gives the candidate's lock back, discards what
was not committed, and reverts a confirmed commit not yet confirmed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypeVar

from nornir_bench.core.deadlines import bounded
from nornir_bench.tasks.dialects.netconf_xml import (
    NETCONF_NS,
    NetconfCapabilityMissing,
    require_xpath,
)
from nornir_bench.tasks.sessions._netconf_requests import (
    CANDIDATE,
    CancelCommit,
    Commit,
    CopyConfig,
    DiscardChanges,
    EditConfig,
    Get,
    GetConfig,
    Lock,
    NetconfRefused,
    NetconfRequest,
    SessionLost,
    Unlock,
    Validate,
    refused,
)
from nornir_bench.tasks.sessions._plan import (
    Login,
    PastDeadline,
    Plan,
    Wait,
    private_copy,
    within_the_deadline,
)
from nornir_bench.tasks.sessions.netconf_session import NetconfSession, netconf_session

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["ndrive"]

T = TypeVar("T")


def _answer(task: Task, session: Any, request: NetconfRequest | Login, timeout: float,
            others: dict[str, NetconfSession]) -> Any:
    """``request`` on ``session`` (an ncclient manager; blocking), each RPC within ``timeout``
    and the host's deadline; an ``<rpc-error>`` raised as :class:`NetconfRefused`, an XPath
    filter to a server without ``:xpath`` as ``NetconfCapabilityMissing`` (not sent)."""
    from lxml import etree
    from ncclient.operations import RPCError

    within_the_deadline(task)
    if isinstance(request, Login):  # a session of its own, as the CLI change's new login
        fresh = NetconfSession()
        try:
            fresh.login(private_copy(task.host), bounded(task, timeout))
        finally:
            fresh.drop()  # logged in and answered: that is all a new login has to show
        return None
    if isinstance(request, Get) and request.host is not None:
        other = others.get(request.host.name)
        if other is None:
            other = others[request.host.name] = NetconfSession()
        if not other.is_open:
            other.login(private_copy(request.host), bounded(task, timeout))
        session = other.manager
    if isinstance(request, Get) and isinstance(request.filter, tuple):  # not sent without it
        require_xpath(session.server_capabilities,
                      (task.host if request.host is None else request.host).name)
    session.timeout = bounded(task, timeout)
    name = _RPC_NAMES[type(request)]
    try:
        if isinstance(request, GetConfig):
            return session.get_config(source=request.source).data_xml
        if isinstance(request, Get):
            return session.get(filter=request.filter).data_xml
        if isinstance(request, Lock):
            return session.lock(CANDIDATE)
        if isinstance(request, Unlock):
            return session.unlock(CANDIDATE)
        if isinstance(request, EditConfig):
            return session.edit_config(request.config, target=CANDIDATE,
                                       error_option="rollback-on-error")
        if isinstance(request, CopyConfig):
            source = etree.Element(f"{{{NETCONF_NS}}}source")
            source.append(etree.fromstring(request.config.encode()))
            return session.copy_config(source=source, target=CANDIDATE)
        if isinstance(request, Validate):
            return session.validate(source=etree.fromstring(request.config.encode()))
        if isinstance(request, Commit):
            if request.confirm_timeout is None:
                return session.commit()
            return session.commit(confirmed=True, timeout=str(request.confirm_timeout))
        if isinstance(request, CancelCommit):
            return session.cancel_commit()
        assert isinstance(request, DiscardChanges)
        return session.discard_changes()
    except RPCError as error:
        if _warned_only(error) and not isinstance(request, (GetConfig, Get)):
            return None  # done: a warning is not a refusal (the plan needs no reply's data)
        raise refused(name, error) from None


def _warned_only(error: Any) -> bool:
    """Whether ncclient's ``RPCError`` ``error`` holds warnings only (``<error-severity>
    warning``: Junos's "statement has no contents; ignored"): the server did what it was
    asked. ncclient raises warnings too, and its own choice of raising errors only reads the
    first of several."""
    errors = getattr(error, "errors", None) or [error]
    return all(getattr(each, "severity", None) == "warning" for each in errors)


# Errors that do not tell how the host's session ended: the server answered (a refusal), or
# nothing was sent (a filter this server cannot take, the host's deadline).
_NOT_THE_SESSIONS = (NetconfRefused, NetconfCapabilityMissing, PastDeadline)

_RPC_NAMES: dict[type, str] = {
    GetConfig: "get-config", Get: "get", Lock: "lock", Unlock: "unlock",
    EditConfig: "edit-config", CopyConfig: "copy-config", Validate: "validate", Commit: "commit",
    CancelCommit: "cancel-commit", DiscardChanges: "discard-changes",
}


def _lost(said: Exception | None) -> SessionLost:
    """The session found ended, ``said`` the last error of a request (what ended it)."""
    if isinstance(said, SessionLost):
        return said
    if said is None:
        return SessionLost("closed by the device or by a jump host on the way")
    return SessionLost(f"{type(said).__name__}: {said}")


def _advance(plan: Plan[T], answer: Any, error: Exception | None) -> tuple[bool, Any]:
    try:
        return False, plan.throw(error) if error is not None else plan.send(answer)
    except StopIteration as done:
        return True, done.value


# -- the driver ----------------------------------------------------------------------------


def ndrive(task: Task, plan: Plan[T], timeout: float) -> T:
    """``plan`` on the host's NETCONF session (logged in if it is not), held while the plan
    runs; what it returns. The session stays open for the host's next task, unless the plan
    raised: then it is dropped."""
    others: dict[str, NetconfSession] = {}
    session = netconf_session(task.host)
    with session.lock:
        ended = False
        try:
            manager = session.manager
            if manager is None or not session.is_open:
                manager = session.login(task.host, bounded(task, timeout))
            said: Exception | None = None  # the last error of a request not answered
            done, request = _advance(plan, None, None)
            while not done:
                try:
                    if not manager.connected:  # a check would read it until its window ends
                        raise _lost(said)
                    if isinstance(request, Wait):
                        within_the_deadline(task)
                        time.sleep(bounded(task, request.seconds))
                        answer = None
                    else:
                        answer = _answer(task, manager, request, timeout, others)
                    error = None
                except Exception as exc:  # noqa: BLE001 - the plan says what it means where it is
                    answer, error = None, exc
                    if not isinstance(exc, _NOT_THE_SESSIONS):  # what the session said
                        said = exc
                done, request = _advance(plan, answer, error)
            ended = True
            return request  # type: ignore[no-any-return]
        finally:
            if not ended:
                session.drop()
            for other in others.values():
                other.close()
