"""The messages of the processpool: between the pool and its workers, and its fork servers.

Each is a small named tuple, pickled on a ``multiprocessing.connection.Connection``; the
receiver tells them apart by type. Named tuples pickle as a class reference and their fields,
so a message costs a few bytes more than a bare tuple, once per batch of hosts, not per host.

- pool -> worker: :class:`LoadRun` (another run, after the one it was forked holding),
  :class:`RunHosts`, :class:`HaltRun`, :class:`EndRun`, :class:`CloseConnections`,
  :class:`Quit`;
- worker -> pool: :class:`Ready` once it holds the run, :class:`LoadFailed` when it cannot load
  it (a module the task needs does not import there: every worker would fail alike),
  :class:`Done` with finished hosts, :class:`Tainted` when a blocking task overran
  ``task_timeout`` (its thread cannot be stopped, so the pool retires the worker once its other
  hosts are done), :class:`Closed` once it closed the connections it was asked to;
- pool -> fork server: :class:`LoadRun`, :class:`Fork` (the new worker's descriptors are sent
  first, on the other socket), :class:`Kill`, :class:`Quit`;
- fork server -> pool: :class:`WorkerForked` or :class:`LoadFailed` for each fork, and
  :class:`WorkerExited` whenever a worker ends.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, NamedTuple

from nornir_bench.core._pickling import dumps
from nornir_bench.runners._remote.results import FinishedBatch

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = [
    "Alive",
    "CloseConnections",
    "Closed",
    "Done",
    "EndRun",
    "Escaped",
    "Fork",
    "Kill",
    "LoadFailed",
    "LoadRun",
    "Message",
    "Ready",
    "RunHosts",
    "Quit",
    "Tainted",
    "WorkerExited",
    "WorkerForked",
    "receive",
    "send",
]


class LoadRun(NamedTuple):
    """The run to hold from now on: a ``RunSpec``, pickled with cloudpickle."""

    spec: bytes


class RunHosts(NamedTuple):
    """Start these hosts at once: their indices in the run's hosts, and the hosts themselves
    (a pickled list, in the same order). Each host is sent to the worker that runs it, not
    every host to every worker: a worker unpickles only its share of a 10,000-host run."""

    indices: list[int]
    hosts: bytes


class HaltRun(NamedTuple):
    """Ctrl-C: no more retries; a host waiting for one ends with its last failure."""


class EndRun(NamedTuple):
    """The run is over: end it here (its thread pool stops; the connections stay kept)."""


class Quit(NamedTuple):
    """Finish and exit (a worker ends its run first; a fork server kills its workers)."""


class Ready(NamedTuple):
    """The worker holds the run and takes hosts."""


class LoadFailed(NamedTuple):
    """The run could not be loaded here, and why (one line)."""

    reason: str


class Done(NamedTuple):
    """Hosts that finished, in a batch."""

    batch: FinishedBatch


class Escaped(NamedTuple):
    """Worker -> parent: the task of host ``position`` raised ``SystemExit`` or
    ``KeyboardInterrupt`` (pickled): the host has no result, and the parent raises it from
    ``run()`` once the run has stopped."""

    position: int
    exception: bytes


class Tainted(NamedTuple):
    """A blocking task overran its deadline: retire this worker when its hosts are done."""


class Alive(NamedTuple):
    """The worker's heartbeat, while it has hosts in flight and nothing else to say."""


class CloseConnections(NamedTuple):
    """Close these connections the worker keeps: (host name, plugin name) pairs."""

    connections: list[tuple[str, str]]


class Closed(NamedTuple):
    """The connections asked for are closed."""


class Fork(NamedTuple):
    """Fork a worker holding the loaded run (its descriptors came on the other socket)."""


class Kill(NamedTuple):
    """Kill worker ``pid`` (SIGKILL) if it is still running."""

    pid: int


class WorkerForked(NamedTuple):
    """The worker asked for is running as ``pid``."""

    pid: int


class WorkerExited(NamedTuple):
    """Worker ``pid`` ended: ``returncode`` as ``subprocess`` gives it (negative: a signal)."""

    pid: int
    returncode: int


Message = (
    LoadRun | RunHosts | HaltRun | EndRun | Quit | Ready | LoadFailed | Done | Escaped | Tainted
    | Alive | CloseConnections | Closed | Fork | Kill | WorkerForked | WorkerExited
)


def send(conn: Connection, message: Message) -> None:
    """Send ``message`` on ``conn`` (raises ``OSError`` if the other end is gone)."""
    conn.send_bytes(dumps(message))


def receive(conn: Connection) -> Message:
    """The next message on ``conn`` (raises ``EOFError`` or ``OSError`` if the other end is
    gone)."""
    message: Message = pickle.loads(conn.recv_bytes())
    return message
