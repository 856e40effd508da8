"""Logins an SSH server refused before authentication: told apart, tried again, and paced.

An SSH server under many logins at once closes new connections before they authenticate
(OpenSSH's ``MaxStartups``, 10 unauthenticated at a time by default; network devices and AAA
servers do alike). Such a login reached nothing on the device, so it is safe to try again.
With ``login_retries`` (on by default) a runner:

- tells such a failure apart (:func:`refused_before_login`): paramiko's "Error reading SSH
  protocol banner" or "No existing session", or the connection lost in its key exchange
  (netmiko's ``NetmikoTimeoutException`` around them, or the bare ``EOFError``), or asyncssh
  losing the connection while connecting (scrapli); a server that took the connection and
  never said a word (:class:`~nornir_bench.core.exceptions.NoSSHBanner`, whatever the library
  said around it) is not one: it is not throttling, and trying it again costs a timeout each;
- paces new logins to that server (:class:`LoginPace`, one per run in each process): none
  until it refuses one, then a window of logins under way at once that halves once for the
  refusals of logins started at one width (TCP NewReno's one cut per window of data) and
  grows with the logins that get in (additive increase, multiplicative decrease, as TCP's
  congestion window), until the server is no longer paced;
- tries that host again, apart from ``retries``: a refusal counts against ``login_retries``
  only where the pace cannot be the cause (the login was not paced, or went alone: the window
  at one), so a server refusing all the logins still ends in a bounded number of tries. A
  host's own logins under the pace (its place, its wait, its refusals) are its
  :class:`HostLogins`, which its attempts (:mod:`nornir_bench.core.policies.hosts`) ask.

A host the server still refuses fails with
:class:`~nornir_bench.core.exceptions.LoginRefused`, saying what happened and what to set.
Authentication failures are never among these: the server answered them.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from nornir_bench.core.exceptions import LoginRefused, NoSSHBanner
from nornir_bench.core.policies.retry import causes

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "HostLogins",
    "LoginPace",
    "Place",
    "Refused",
    "authentication_refused",
    "refused_before_login",
    "refused_by",
    "server_of",
]

_FIRST_WINDOW = 4.0  # logins under way at once to a server, once it refused one
_UNPACED = 64.0  # a server whose window grew past this is no longer paced
_RETRY_JITTER = 0.25  # seconds, at most, before a refused host asks for a place again
_POLL = 0.05  # seconds, about, between a waiting host's asks for a place
# paramiko's words for a transport the server closed before login: before its banner, and
# during the key exchange (netmiko wraps them in NetmikoTimeoutException, words kept).
_PARAMIKO_CLOSED = ("Error reading SSH protocol banner", "No existing session")
# Where a connection closed under them was still being made: asyncssh's connect, paramiko's
# start_client (banner and key exchange); a function name and the end of its file's path.
_CONNECTING = (
    ("_connect", "asyncssh/connection.py"),
    ("connect", "asyncssh/connection.py"),
    ("start_client", "paramiko/transport.py"),
)
_CHAIN_DEPTH = 8
# The SSH libraries' words for a login the server answered with "no": paramiko, netmiko,
# asyncssh, scrapli.
_AUTHENTICATION_REFUSED = frozenset({
    "AuthenticationException",
    "BadAuthenticationType",
    "NetmikoAuthenticationException",
    "PermissionDenied",
    "ScrapliAuthenticationFailed",
})


def server_of(host: Host) -> str:
    """The SSH server a login to ``host`` reaches: ``address:port``."""
    return f"{host.hostname or host.name}:{host.port or 22}"


def refused_by(error: BaseException, host: Host) -> str:
    """The SSH server that refused ``host``'s login with ``error``: the one the error names
    (a jump host's ``server``: the bastion refused it, not the device behind it), else the
    host's own."""
    server = getattr(error, "server", None)
    return server if isinstance(server, str) and server else server_of(host)


def refused_before_login(error: BaseException) -> bool:
    """Whether ``error`` says the SSH server closed the connection before authentication.

    An authentication refused is the server's answer, whatever it was raised during (paramiko's
    "Authentication failed" of a login tried again carries the reader thread's ``EOFError``):
    a wrong password is not tried again, nor counted as a throttled login. So is a server
    that never answered (``NoSSHBanner``), whatever paramiko said while waiting for it."""
    for cause in causes(error):
        for raised in _chain(cause):
            if isinstance(raised, NoSSHBanner) or authentication_refused(raised):
                break
            if _refusal(raised):
                return True
    return False


def authentication_refused(error: BaseException) -> bool:
    """Whether ``error`` is an SSH library's word for a login the server answered with "no"
    (a wrong username or password), not one it closed before asking."""
    return type(error).__name__ in _AUTHENTICATION_REFUSED


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it was raised from or during, the outermost first."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < _CHAIN_DEPTH:
        yield current
        seen += 1
        current = current.__cause__ or current.__context__


def _refusal(error: BaseException) -> bool:
    if isinstance(error, LoginRefused):
        return True
    module = type(error).__module__
    if module.startswith(("paramiko", "netmiko")) and any(
        words in str(error) for words in _PARAMIKO_CLOSED
    ):
        return True
    if module.startswith("asyncssh") and type(error).__name__ == "ConnectionLost" or isinstance(
        error, (EOFError, ConnectionResetError, BrokenPipeError)
    ):
        return _raised_connecting(error)
    return False


def _raised_connecting(error: BaseException) -> bool:
    """Whether ``error`` came out of an SSH library still making the connection."""
    frame = error.__traceback__
    while frame is not None:
        code = frame.tb_frame.f_code
        if any(
            code.co_name == name and code.co_filename.endswith(path) for name, path in _CONNECTING
        ):
            return True
        frame = frame.tb_next
    return False


class Place(NamedTuple):
    """A place a login took in its server's window: the window's generation (it has one more
    at each cut) and width when it was taken."""

    generation: int
    width: float


class _Window:
    """One server's window: how many logins may be under way at once, how many are, and how
    many times it was cut."""

    __slots__ = ("busy", "generation", "limit")

    def __init__(self) -> None:
        self.limit = _FIRST_WINDOW
        self.busy = 0
        self.generation = 0


class LoginPace:
    """Logins under way per SSH server, for one run in one process.

    Costs nothing until a server refuses a login (``active`` is False). From then on, a host
    of that server without a session kept from an earlier run takes a place in the server's
    window before its attempt (:meth:`take`) and leaves it after (:meth:`left`); the window
    halves once for the refusals of logins that took their places at one width, and grows by
    one for each window's worth of logins that get in, as TCP's congestion window does.

    Args:
        retries: how many refused logins of one host are tried again (``login_retries``),
            counting those the pace cannot have caused (:meth:`refused_login`).
        rand: random numbers in ``[0, 1)``.
    """

    def __init__(self, retries: int, *, rand: Callable[[], float] = random.random) -> None:
        self.retries = retries
        self.active = False
        self.refused = 0
        self._rand = rand
        self._servers: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def window(self, server: str) -> tuple[float, int] | None:
        """``server``'s window (logins at once) and the logins under way in it, or ``None``:
        not paced."""
        window = self._servers.get(server)
        return None if window is None else (window.limit, window.busy)

    def take(self, host: Host) -> Place | float | None:
        """A place for a login to ``host``'s server: a :class:`Place` when one was taken (give
        it back with :meth:`left`), else the seconds to wait before asking again; ``None``
        when no place is needed (the server is not paced, or the host holds a session)."""
        if not self.active or object.__getattribute__(host, "connections"):
            return None
        with self._lock:
            window = self._servers.get(server_of(host))
            if window is None:
                return None
            if window.busy < max(1, int(window.limit)):
                window.busy += 1
                return Place(window.generation, window.limit)
        return _POLL * (0.5 + self._rand())

    def left(self, host: Host) -> None:
        """A login that took a place in its server's window (:meth:`take`) has ended."""
        with self._lock:
            window = self._servers.get(server_of(host))
            if window is not None and window.busy > 0:
                window.busy -= 1

    def refused_login(self, host: Host, place: Place | None = None) -> tuple[float, bool]:
        """Note that ``host``'s server refused its login, made in ``place`` (``None``: not
        paced). The seconds to wait before it asks for a place again, and whether the refusal
        counts against ``login_retries``: it does unless the login shared a window wider than
        one, which the pace narrows instead."""
        server = server_of(host)
        with self._lock:
            self.refused += 1
            self.active = True
            window = self._servers.get(server)
            if window is None:
                self._servers[server] = _Window()
            elif place is not None and place.generation == window.generation:
                window.limit = max(1.0, window.limit / 2)
                window.generation += 1
        counts = place is None or place.width < 2
        return _RETRY_JITTER * self._rand(), counts

    def logged_in(self, host: Host) -> None:
        """Note that a login to ``host``'s server got in: its window grows."""
        if not self.active:
            return
        server = server_of(host)
        with self._lock:
            window = self._servers.get(server)
            if window is None:
                return
            window.limit += 1.0 / window.limit
            if window.limit >= _UNPACED:
                del self._servers[server]


class Refused(NamedTuple):
    """A login the server refused before authentication, as the host's attempt ends with it:
    its error (a :class:`~nornir_bench.core.exceptions.LoginRefused`) and the seconds to wait
    before trying again, or ``None``: past ``login_retries``."""

    error: LoginRefused
    wait: float | None


class HostLogins:
    """One host's logins under the run's :class:`LoginPace`: the place its attempt took in
    its server's window, the time it waited for one, the refusals of its logins.

    Args:
        pace: the run's pace of logins.
        host: the host.
    """

    __slots__ = ("_counted", "_logs_in", "_place", "_refusals", "host", "pace", "waited")

    def __init__(self, pace: LoginPace, host: Host) -> None:
        self.pace = pace
        self.host = host
        self.waited = 0.0
        """Seconds the host waited for a place, in all."""
        self._logs_in = False
        self._place: Place | None = None
        self._refusals = 0
        self._counted = 0

    def wait(self) -> float:
        """Seconds to wait before asking again for a place to log in (the host's SSH server
        refused logins in this run); 0: the attempt may start."""
        if not self.pace.active:  # no server refused a login yet
            return 0.0
        self._logs_in = not object.__getattribute__(self.host, "connections")
        turn = self.pace.take(self.host) if self._logs_in else None
        if turn is None:
            return 0.0
        if isinstance(turn, Place):
            self._place = turn
            return 0.0
        self.waited += turn
        return turn

    def ended(self, error: Exception | None) -> Refused | None:
        """The attempt ended, with ``error`` or without (``None``): its place is given back and
        its server's window hears how the login went. What the refusal means, if the server
        refused the login before authentication (:func:`refused_before_login`)."""
        if not self._logs_in and error is None:
            return None
        place, self._place = self._place, None
        if place is not None:
            self.pace.left(self.host)
        if error is None:
            if self._logs_in:
                self.pace.logged_in(self.host)
            return None
        if not refused_before_login(error):
            return None
        return self._refused(error, place)

    def _refused(self, error: Exception, place: Place | None) -> Refused:
        """``error``, a login refused in ``place`` of its window, as a LoginRefused (caused by
        the library's error), tried again while refusals stay in ``login_retries``."""
        self._refusals += 1
        wait, counts = self.pace.refused_login(self.host, place)
        self._counted += counts
        if isinstance(error, LoginRefused):
            error.times = self._refusals
            refused = error
        else:
            refused = LoginRefused(refused_by(error, self.host), self._refusals)
            refused.__cause__ = error
        return Refused(refused, wait if self._counted <= self.pace.retries else None)
