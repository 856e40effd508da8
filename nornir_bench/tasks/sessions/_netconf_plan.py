"""A NETCONF conversation written once, as a plan (as :mod:`~nornir_bench.tasks.sessions._plan`
writes a CLI one), and the two drivers that run it on ncclient: :func:`ndrive` (blocking) and
:func:`andrive` (async: each RPC off the event loop, in the run's pool of threads).

The plan yields NETCONF requests (:data:`NetconfRequest`), and ``Wait`` and ``Login`` as a CLI
plan does; a device's ``<rpc-error>`` is thrown into it as :class:`NetconfRefused`, where it
stands. The session is the plan's own, opened when it starts: it ends with a
``<close-session>`` when the plan returns, and is dropped (its connection closed, no RPC sent)
when the plan raises, is cancelled or is given up at its deadline, so that a hung server holds
nothing: the server then releases the candidate's lock and discards what was not committed,
and reverts a confirmed commit not yet confirmed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from nornir_bench.core.deadlines import bounded
from nornir_bench.tasks.dialects.netconf_xml import NETCONF_NS
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
    NetconfRequest,
    Unlock,
    Validate,
    refused,
)
from nornir_bench.tasks.sessions._plan import Login, Plan, Wait, private_copy, within_the_deadline

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = ["andrive", "close_session", "ndrive", "open_session"]

T = TypeVar("T")


# -- the session -------------------------------------------------------------------------


def open_session(host: Host, timeout: float) -> Any:
    """An ncclient manager logged in to ``host`` within ``timeout``."""
    import ncclient.transport.session
    from ncclient import manager

    # ncclient's session thread sends a request only when its select() wakes, every TICK
    # (0.1 s): a hundred milliseconds added to each RPC.
    ncclient.transport.session.TICK = min(ncclient.transport.session.TICK, 0.01)
    return manager.connect(
        host=host.hostname, port=host.port or 830, username=host.username,
        password=host.password, hostkey_verify=False, look_for_keys=False, allow_agent=False,
        timeout=timeout,
    )


def close_session(session: Any, *, polite: bool) -> None:
    """``<close-session>`` (``polite``), or the connection dropped with no RPC sent."""
    with contextlib.suppress(Exception):
        if polite:
            session.close_session()
        else:
            session._session.close()  # ncclient has no public way to drop a session


def _answer(task: Task, session: Any, request: NetconfRequest | Login, timeout: float,
            others: dict[str, Any]) -> Any:
    """``request`` on ``session`` (blocking), each RPC within ``timeout`` and the host's
    deadline; an ``<rpc-error>`` raised as :class:`NetconfRefused`."""
    from lxml import etree
    from ncclient.operations import RPCError

    within_the_deadline(task)
    if isinstance(request, Login):
        close_session(open_session(private_copy(task.host), bounded(task, timeout)), polite=True)
        return None
    if isinstance(request, Get) and request.host is not None:
        other = others.get(request.host.name)
        if other is None:
            other = others[request.host.name] = open_session(request.host, bounded(task, timeout))
        session = other
    session.timeout = bounded(task, timeout)
    name = _RPC_NAMES[type(request)]
    try:
        if isinstance(request, GetConfig):
            return session.get_config(source=request.source).data_xml
        if isinstance(request, Get):
            return session.get(filter=("xpath", request.xpath)).data_xml
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
        raise refused(name, error) from None


_RPC_NAMES: dict[type, str] = {
    GetConfig: "get-config", Get: "get", Lock: "lock", Unlock: "unlock",
    EditConfig: "edit-config", CopyConfig: "copy-config", Validate: "validate", Commit: "commit",
    CancelCommit: "cancel-commit", DiscardChanges: "discard-changes",
}


def _advance(plan: Plan[T], answer: Any, error: Exception | None) -> tuple[bool, Any]:
    try:
        return False, plan.throw(error) if error is not None else plan.send(answer)
    except StopIteration as done:
        return True, done.value


# -- the drivers ---------------------------------------------------------------------------


def ndrive(task: Task, plan: Plan[T], timeout: float) -> T:
    """``plan`` on a NETCONF session of its own to the task's host (ncclient, blocking)."""
    others: dict[str, Any] = {}
    session = open_session(task.host, bounded(task, timeout))
    polite = False
    try:
        done, request = _advance(plan, None, None)
        while not done:
            try:
                if isinstance(request, Wait):
                    within_the_deadline(task)
                    time.sleep(bounded(task, request.seconds))
                    answer = None
                else:
                    answer = _answer(task, session, request, timeout, others)
                error = None
            except Exception as exc:  # noqa: BLE001 - the plan says what it means where it is
                answer, error = None, exc
            done, request = _advance(plan, answer, error)
        polite = True
        return request  # type: ignore[no-any-return]
    finally:
        _close_all(session, others, polite)


async def andrive(task: Task, plan: Plan[T], timeout: float,
                  offload: Callable[[Callable[[], Any]], Any]) -> T:
    """``plan`` on a NETCONF session of its own to the task's host, each blocking call
    ``offload``-ed (the run's pool of threads); cancelled, the session is dropped."""
    others: dict[str, Any] = {}
    session = await offload(lambda: open_session(task.host, bounded(task, timeout)))
    polite = False
    try:
        done, request = _advance(plan, None, None)
        while not done:
            try:
                if isinstance(request, Wait):
                    await asyncio.sleep(request.seconds)
                    answer = None
                else:
                    answer = await offload(functools.partial(
                        _answer, task, session, request, timeout, others))
                error = None
            except Exception as exc:  # noqa: BLE001 - the plan says what it means where it is
                answer, error = None, exc
            done, request = _advance(plan, answer, error)
        polite = True
    finally:
        if polite:
            await offload(lambda: _close_all(session, others, True))
        else:  # cancelled or failed: dropped here, at once, whatever its thread is doing
            _close_all(session, others, False)
    return request  # type: ignore[no-any-return]


def _close_all(session: Any, others: dict[str, Any], polite: bool) -> None:
    close_session(session, polite=polite)
    for other in others.values():
        close_session(other, polite=polite)
