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

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["HeldElsewhere", "hide_held", "show_held"]

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
