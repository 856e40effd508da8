"""The requests a NETCONF plan yields (:mod:`~nornir_bench.tasks.sessions._netconf_plan` answers
them), and the errors thrown into the plan: a server's ``<rpc-error>``, the session lost. Apart,
so that the plans' request type (:data:`~nornir_bench.tasks.sessions._plan.Request`) names
them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CANDIDATE",
    "LOCK_DENIED",
    "RUNNING",
    "CancelCommit",
    "Commit",
    "CopyConfig",
    "DiscardChanges",
    "EditConfig",
    "Get",
    "GetConfig",
    "Lock",
    "NetconfRefused",
    "NetconfRequest",
    "SessionLost",
    "Unlock",
    "Validate",
    "refused",
]

CANDIDATE, RUNNING = "candidate", "running"
LOCK_DENIED = "lock-denied"
"""The ``<error-tag>`` of a lock another session holds (RFC 6241)."""


@dataclass(frozen=True)
class GetConfig:
    """``<get-config>`` of ``source``: the ``<data>`` element's XML is sent back."""

    source: str


@dataclass(frozen=True)
class Get:
    """``<get>`` with ``filter`` (ncclient's: a subtree filter's ``<filter>`` element as text,
    or ``("xpath", expression)``), on the host (``host`` ``None``) or another ``Host``: the
    ``<data>`` element's XML."""

    filter: str | tuple[str, str]
    host: Any = None


@dataclass(frozen=True)
class Lock:
    """``<lock>`` of the candidate."""


@dataclass(frozen=True)
class Unlock:
    """``<unlock>`` of the candidate."""


@dataclass(frozen=True)
class EditConfig:
    """``<edit-config>`` of the candidate with ``config`` (a ``<config>`` element's XML),
    ``<error-option>rollback-on-error``."""

    config: str


@dataclass(frozen=True)
class CopyConfig:
    """``<copy-config>`` of ``config`` (a ``<config>`` element's XML), given inline, to the
    candidate: the candidate made that configuration, whole."""

    config: str


@dataclass(frozen=True)
class Validate:
    """``<validate>`` of ``config`` (a ``<config>`` element's XML) given inline, not of the
    candidate by name: yuma123's netconfd loses the candidate's edits at the next commit
    after that."""

    config: str


@dataclass(frozen=True)
class Commit:
    """``<commit>``; with ``confirm_timeout`` (seconds), ``<confirmed/>``: the server reverts
    it by itself unless a ``<commit>`` confirms it within that time, on this session."""

    confirm_timeout: int | None = None


@dataclass(frozen=True)
class CancelCommit:
    """``<cancel-commit>``: the pending confirmed commit undone, by the server."""


@dataclass(frozen=True)
class DiscardChanges:
    """``<discard-changes>``: the candidate made the running configuration again."""


NetconfRequest = GetConfig | Get | Lock | Unlock | EditConfig | CopyConfig | Validate | \
    Commit | CancelCommit | DiscardChanges


class NetconfRefused(Exception):
    """The server answered an RPC with an ``<rpc-error>``: which RPC, its tag, message and
    path, and for a lock refused the session holding it."""

    def __init__(self, rpc: str, tag: str | None, message: str, *, path: str | None = None,
                 holder: str | None = None) -> None:
        where = f" at {path}" if path else ""
        super().__init__(f"<{rpc}> refused: {tag or 'rpc-error'}: {message}{where}")
        self.rpc, self.tag, self.holder = rpc, tag, holder


class SessionLost(Exception):
    """The host's session ended under the plan (closed by the device, or by a jump host on
    the way): nothing more can be asked on it, so every request and wait the plan yields from
    then on is answered with this, and a plan lets it through. Its text: what the session
    last said (``TransportError: Not connected to NETCONF server``)."""


_HOLDER = re.compile(r"<session-id>\s*(\d+)\s*</session-id>")


def refused(rpc: str, error: Any) -> NetconfRefused:
    """ncclient's ``RPCError`` ``error``, answering ``rpc``, as a :class:`NetconfRefused`."""
    info = str(getattr(error, "info", "") or "")
    holder = _HOLDER.search(info)
    message = " ".join(str(getattr(error, "message", None) or error).split())
    return NetconfRefused(rpc, getattr(error, "tag", None), message,
                          path=getattr(error, "path", None),
                          holder=None if holder is None else holder.group(1))
