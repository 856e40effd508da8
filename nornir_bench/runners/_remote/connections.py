"""The parent's view of connections a worker keeps for its hosts.

nornir keeps a host's open connections in ``host.connections`` from one run to the next, and
code checks them there (``"netmiko" in host.connections``), closes one
(``host.close_connection("netmiko")``) or all (``nr.close_connections()``, ``with nr:``). When
the host ran elsewhere, its connection lives in that worker: the parent's ``host.connections``
holds a :class:`HeldElsewhere` for it instead, which the worker's reports keep up to date and
whose ``close()`` closes the connection in its worker. A connection the user opened in the
parent itself is never replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from nornir_bench.core.connections import HeldConnections
from nornir_bench.core.execution import run_host

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

__all__ = ["HeldElsewhere", "HeldInWorkers", "hide_held", "show_held"]

Worker = TypeVar("Worker", bound=Hashable)

Closer = Callable[[str, str], None]
"""Closes a host's connection where it is held: ``(host name, plugin name)``."""


class HeldElsewhere:
    """Stands in ``host.connections`` for the connection ``plugin`` a worker keeps for ``host``.

    Args:
        plugin: the connection plugin's name (the key in ``host.connections``).
        host: the host's name.
        where: the worker holding it, in words (``"processpool worker process 4242"``).
        closer: closes it there.
    """

    __slots__ = ("_closer", "host", "plugin", "where")

    def __init__(self, plugin: str, host: str, where: str, closer: Closer) -> None:
        self.plugin = plugin
        self.host = host
        self.where = where
        self._closer = closer

    @property
    def connection(self) -> NoReturn:
        """What ``host.get_connection`` returns: not usable here, it lives in its worker."""
        raise RuntimeError(self._elsewhere())

    def open(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(self._elsewhere())

    def close(self) -> None:
        """Close the connection in its worker (``host.close_connection`` then forgets it)."""
        self._closer(self.host, self.plugin)

    def alive(self) -> bool:
        """Its worker tells, before the host's task there gets it: here it is alive."""
        return True

    def _elsewhere(self) -> str:
        return (
            f"host {self.host}'s {self.plugin!r} connection is held in {self.where}: use it in "
            "a task the runner runs there"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"cannot pickle a connection held in {self.where}")

    def __repr__(self) -> str:
        return f"<{self.plugin} connection of {self.host}, held in {self.where}>"


def show_held(host: Host, plugins: Collection[str], where: str, closer: Closer) -> None:
    """Make ``host.connections`` show the connections ``plugins`` held in ``where`` (and no
    other held anywhere else); the host's own connections stay as they are."""
    connections = host.connections
    for name, connection in list(connections.items()):
        if isinstance(connection, HeldElsewhere) and (
            name not in plugins or connection.where != where
        ):
            del connections[name]
    for name in plugins:
        if name not in connections:
            connections[name] = HeldElsewhere(name, host.name, where, closer)


def hide_held(host: Host, plugins: Collection[str] | None = None) -> None:
    """Remove the stand-ins of ``host.connections`` (``plugins`` only, if given): they were
    closed, or their worker is gone and its connections with it."""
    for name, connection in list(host.connections.items()):
        if isinstance(connection, HeldElsewhere) and (plugins is None or name in plugins):
            del host.connections[name]


def still_shows_held(host: Host, closing: Collection[str] = ()) -> bool:
    """Whether ``host.connections`` shows a held connection other than ``closing``."""
    return any(
        isinstance(connection, HeldElsewhere) and name not in closing
        for name, connection in host.connections.items()
    )


class HeldInWorkers(Generic[Worker]):
    """The parent's record of the connections its workers keep for hosts, and their stand-ins
    in the parent's ``host.connections``: one for every runner whose hosts run elsewhere.

    Args:
        close: asks the workers to close connections they keep, by worker ((host, plugin)
            pairs), and waits for them within a bounded time (the transport's own part).

    Attributes:
        holders: which worker (a pid, an address) holds connections of which host.
    """

    def __init__(self, close: Callable[[dict[Worker, list[tuple[str, str]]]], None]) -> None:
        self.holders: HeldConnections[Worker] = HeldConnections()
        self._close = close
        self._shown: dict[str, Host] = {}  # the parent's hosts showing stand-ins, by name

    def hold(self, host: Host, worker: Worker, where: str, connections: tuple[str, ...]) -> None:
        """``worker`` (``where``, in words) now holds ``connections`` of ``host`` (the
        parent's), none if empty: the record notes it, the host's ``connections`` shows it."""
        if connections:
            self.holders.note(host.name, worker)
            self._shown[host.name] = host
            show_held(host, connections, where, self.close_one)
        elif host.name in self.holders:
            self.holders.note(host.name, None)
            hide_held(self._shown.pop(host.name, host))

    def release(self, workers: Iterable[Worker]) -> None:
        """``workers`` are gone, and the connections they held with them."""
        for name in self.holders.release(workers):
            hide_held(self._shown.pop(name))

    def close_one(self, host: str, plugin: str) -> None:
        """A stand-in's ``close()`` (``host.close_connection``): close it in its worker."""
        self.close([(host, plugin)])

    def close_hosts(self, hosts: Iterable[Host]) -> None:
        """Close, where they are held, every connection workers keep for ``hosts``
        (``nr.close_connections()``); their stand-ins go."""
        hosts = list(hosts)
        self.close(
            (host.name, name)
            for host in hosts
            for name, connection in host.connections.items()
            if isinstance(connection, HeldElsewhere)
        )
        for host in hosts:
            hide_held(host)

    def close_connections_task(
        self, task: Task, hosts: list[Host], result: AggregatedResult
    ) -> AggregatedResult:
        """``nr.close_connections()`` on a runner whose hosts run elsewhere: the connections
        workers keep for ``hosts`` are closed there (one request a worker), then the task runs
        here, as nornir's runners run it, for this process's own."""
        self.close_hosts(hosts)
        for host in hosts:
            result[host.name] = run_host(task, host)
        return result

    def close_all(self) -> None:
        """Close every connection workers keep (the runner closes)."""
        self.close_hosts(list(self._shown.values()))

    def close(self, connections: Iterable[tuple[str, str]]) -> None:
        """Close connections workers keep, (host, plugin) pairs: the record forgets them, and
        each worker holding some is asked once."""
        by_worker: dict[Worker, list[tuple[str, str]]] = {}
        closing: dict[str, set[str]] = {}
        for host, plugin in connections:
            worker = self.holders.holder(host)
            if worker is not None:
                by_worker.setdefault(worker, []).append((host, plugin))
                closing.setdefault(host, set()).add(plugin)
        for name, plugins in closing.items():
            shown = self._shown.get(name)
            if shown is None or not still_shows_held(shown, plugins):
                self.holders.note(name, None)
                self._shown.pop(name, None)
        if by_worker:
            self._close(by_worker)
