"""Exceptions that nornir-bench raises or records on hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nornir_bench.core.wording import hosts_text, seconds_text

if TYPE_CHECKING:
    from nornir.core.task import AggregatedResult

__all__ = [
    "NornirBenchError",
    "HostAbandoned",
    "HostSkipped",
    "RemoteException",
    "LoginRefused",
    "NoSSHBanner",
    "RunAborted",
    "RunInterrupted",
    "RunTimeout",
    "SessionClosed",
    "SimulatedFailure",
    "TaskExited",
    "TaskTimeout",
    "WorkerCrashed",
    "NoWorkerForSite",
    "WorkerUnavailable",
]


class NornirBenchError(Exception):
    """Bad input or set-up, said in one line: what was wrong and what is allowed.

    The base of :class:`~nornir_bench.jobs.load.JobError`, :class:`~nornir_bench.lab.LabError`,
    :class:`~nornir_bench.bench.sweep.SweepError` and
    :class:`~nornir_bench.core.secrets.SecretError`; the commands print any of them as
    ``nornir-bench: error: ...`` and exit 2. What goes wrong on a host (a task's error, a crashed
    worker) is not one of these: it is that host's failed result.
    """


class SimulatedFailure(Exception):
    """A device failure drawn by a simulated task (``sim_rtt``'s ``fail_rate``)."""

    def __init__(self, host: str, delay: float) -> None:
        super().__init__(f"simulated failure on {host} after {delay * 1000:.1f} ms")
        self.host = host
        self.delay = delay

    def __reduce__(self) -> tuple[type[SimulatedFailure], tuple[str, float]]:
        # Exceptions pickle their ``args`` by default; ours were built from other arguments.
        return (type(self), (self.host, self.delay))


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; ``result`` holds every host that had finished.

    It is a ``KeyboardInterrupt``, so code that does not know it still stops as on Ctrl-C,
    and code that does can keep what finished.

    Attributes:
        result: the hosts that finished, in host order.
        pending: how many did not.
        abandoned: a second Ctrl-C did not wait for the hosts in flight: blocking calls may
            still be running in threads, which nothing can stop.
    """

    def __init__(self, result: AggregatedResult, pending: int, abandoned: bool = False) -> None:
        super().__init__(f"interrupted: {hosts_text(len(result))} finished, {pending} did not run")
        self.result = result
        self.pending = pending
        self.abandoned = abandoned


class HostAbandoned(Exception):
    """Ctrl-C stopped this host in flight (cancelled on an event loop, or abandoned by a second
    press): the run did not wait for its task to end, so what it did is not known (a task may
    say more in the message).

    Attributes:
        change: for a configuration change, its state (``core.changes``), else ``None``.
    """

    def __init__(self, message: str, change: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.change = change

    def __reduce__(self) -> tuple[type[HostAbandoned], tuple[str, dict[str, object] | None]]:
        return (type(self), (str(self), self.change))


class TaskExited(Exception):
    """A job's task raised ``SystemExit`` (``sys.exit(...)``): in a job that is its host's
    failure, not the end of the whole job (``nornir-bench run``; ``nr.run`` itself raises it
    once the run has stopped, as nornir's runners do).

    Attributes:
        code: the ``SystemExit``'s code.
    """

    def __init__(self, code: object) -> None:
        super().__init__(f"the task exited: sys.exit({code!r})")
        self.code = code

    def __reduce__(self) -> tuple[type[TaskExited], tuple[object]]:
        return (type(self), (self.code,))


def _what_changed(change: dict[str, object] | None) -> str:
    """A deadline's message about the change it stopped (``core.changes``), if it stopped one."""
    if change is None:
        return ""
    if change.get("backup"):
        said = f"{change['holds']};" if change.get("holds") else "state unknown,"
        return f": {change['state']}: {said} backup at {change['backup']}"
    return f": {change['state']}"


class TaskTimeout(TimeoutError):
    """A host's task ran longer than the runner's ``task_timeout`` and was stopped.

    Attributes:
        abandoned: the task was a blocking call, which cannot be stopped: it went on in its
            thread (stopping at its next look at the deadline), its return dropped.
        change: for a configuration change, how far it got when stopped (``core.changes``:
            ``interrupted during change`` with its backup, or ``not touched``), else ``None``.
    """

    def __init__(
        self, task: str, host: str, seconds: float, abandoned: bool = False,
        change: dict[str, object] | None = None,
    ) -> None:
        super().__init__(
            f"task {task!r} on host {host!r} timed out after {seconds_text(seconds)} s"
            + _what_changed(change)
        )
        self.task = task
        self.host = host
        self.seconds = seconds
        self.abandoned = abandoned
        self.change = None if change is None else {k: change.get(k) for k in ("state", "backup")}
        self._noted = change  # what holds ("holds") is said in the message

    def __reduce__(self) -> tuple[type[TaskTimeout], tuple[Any, ...]]:
        return (type(self), (self.task, self.host, self.seconds, self.abandoned, self._noted))


class LoginRefused(ConnectionError):
    """The host's SSH server closed the connection before login, every time it was tried.

    Nothing reached the device (no login happened), so the runners try such a host again on
    their own (``login_retries``), slowing new logins to that server; this is the error of a
    host still refused at the end. The library's own error is its ``__cause__``.

    Attributes:
        server: ``address:port`` of the SSH server.
        times: how many times it refused this host's login.
    """

    def __init__(self, server: str, times: int) -> None:
        tries = "once" if times == 1 else f"{times} times"
        super().__init__(
            f"{server} closed the connection before login ({tries}): SSH servers throttle many "
            "logins at once (OpenSSH MaxStartups); start fewer at a time (max_starts_per_second, "
            "group_limits, num_workers) or allow more login_retries"
        )
        self.server = server
        self.times = times

    def __reduce__(self) -> tuple[type[LoginRefused], tuple[str, int]]:
        return (type(self), (self.server, self.times))


class NoSSHBanner(TimeoutError):
    """The server took the TCP connection and sent nothing, not even its SSH banner, within
    the login's wait; it did not close the connection either.

    Not a server throttling logins (those close the connection before login:
    :class:`LoginRefused`): a hung SSH server, a port forward to nothing, or no SSH server at
    all. The login is not tried again as a refused one, nor counted among them.

    Attributes:
        server: ``address:port`` of the server.
        seconds: how long the login waited for the banner.
    """

    def __init__(self, server: str, seconds: float) -> None:
        self.server = server
        self.seconds = seconds
        super().__init__(f"{server}: {self.reason}")

    @property
    def reason(self) -> str:
        """What happened, without the server's address: for a message naming it otherwise."""
        return (
            f"no SSH banner within {seconds_text(self.seconds)} s: the port took the "
            "connection and said nothing"
        )

    def __reduce__(self) -> tuple[type[NoSSHBanner], tuple[str, float]]:
        return (type(self), (self.server, self.seconds))


class SessionClosed(EOFError):
    """The device closed a CLI session while a task was using it: its CLI ended (killed,
    restarted, timed out) or the connection dropped. What the last command did is not known.

    An ``EOFError``: one of the errors ``retry_on`` names by default (a retry logs in again).

    Attributes:
        device: ``address:port`` of the device.
    """

    def __init__(self, device: str) -> None:
        super().__init__(
            f"the device at {device} closed the session: end of file on its SSH channel"
        )
        self.device = device

    def __reduce__(self) -> tuple[type[SessionClosed], tuple[str]]:
        return (type(self), (self.device,))


class RunAborted(RuntimeError):
    """A run policy's limit stopped the run before this host started; the host never ran.

    ``limit`` names the limit that fired, as the run's options spell it (``max_failures``,
    ``max_fail_percentage``), and ``reason`` says what crossed it.
    """

    def __init__(self, limit: str, reason: str) -> None:
        super().__init__(f"not run: the run was aborted by {limit}: {reason}")
        self.limit = limit
        self.reason = reason

    def __reduce__(self) -> tuple[type[RunAborted], tuple[str, str]]:
        return (type(self), (self.limit, self.reason))


class HostSkipped(RunAborted):
    """A group's failure limit (``group_max_failures``) skipped this host: it never ran.

    A :class:`RunAborted` for one group of hosts, not the whole run.
    """

    def __init__(self, limit: str, reason: str) -> None:
        RuntimeError.__init__(self, f"skipped: {limit}: {reason}")
        self.limit = limit
        self.reason = reason


class RunTimeout(TimeoutError):
    """The run's deadline (``run_timeout``) passed before this host finished, or started.

    Attributes:
        seconds: the run's ``run_timeout``.
        started: whether the host had started (its task was stopped) or never ran.
        abandoned, change: as :class:`TaskTimeout`'s.
    """

    def __init__(
        self, seconds: float, started: bool, abandoned: bool = False,
        change: dict[str, object] | None = None,
    ) -> None:
        what = "before this host finished" if started else "before this host started"
        super().__init__(
            f"the run's deadline (run_timeout {seconds_text(seconds)} s) passed {what}"
            + _what_changed(change)
        )
        self.seconds = seconds
        self.started = started
        self.abandoned = abandoned  # as TaskTimeout's
        self.change = None if change is None else {k: change.get(k) for k in ("state", "backup")}
        self._noted = change  # as TaskTimeout's

    def __reduce__(self) -> tuple[type[RunTimeout], tuple[Any, ...]]:
        return (type(self), (self.seconds, self.started, self.abandoned, self._noted))


class WorkerCrashed(RuntimeError):
    """The worker process running this host died (a crash, ``os._exit``, a kill, out of memory).

    Attributes:
        pid: the worker's process id (``None`` where it is not known: a Dask worker).
        exitcode: its exit status; negative is the signal that killed it, as in multiprocessing.
        running: what it was running when it died: ``"this host"``, or another host's name.
        detail: more about what that meant for this host.
        worker: the worker, named otherwise than by its pid (``"dask worker tls://..."``).
    """

    def __init__(
        self,
        pid: int | None,
        exitcode: int | None,
        detail: str = "",
        running: str = "this host",
        worker: str | None = None,
    ) -> None:
        self.pid = pid
        self.exitcode = exitcode
        self.detail = detail
        self.running = running
        self.worker = worker
        if worker is None:
            ended = f"worker process {pid} {describe_exit(exitcode)}"
        else:
            ended = f"{worker} died"
        super().__init__(f"{ended} while running {running}" + detail)

    def __reduce__(
        self,
    ) -> tuple[type[WorkerCrashed], tuple[int | None, int | None, str, str, str | None]]:
        return (type(self), (self.pid, self.exitcode, self.detail, self.running, self.worker))


class WorkerUnavailable(RuntimeError):
    """No worker process could run this host: workers could not start, or not load the run.

    The host never ran. ``reason`` says what the workers did (exited at start, with what status;
    or the error loading the task, e.g. a module the worker cannot import).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"no worker process could run this host: {reason}")
        self.reason = reason

    def __reduce__(self) -> tuple[type[WorkerUnavailable], tuple[str]]:
        return (type(self), (self.reason,))


class NoWorkerForSite(WorkerUnavailable):
    """The host's ``site`` is served by none of the run's workers (none was started for it, or
    the last one is gone): it never ran. The other sites' hosts run."""

    def __init__(self, runner: str, site: str) -> None:
        RuntimeError.__init__(self, f"no {runner} worker for site {site!r}")
        self.runner = runner
        self.site = site
        self.reason = str(self)

    def __reduce__(self) -> tuple[type[NoWorkerForSite], tuple[str, str]]:  # type: ignore[override]
        return (type(self), (self.runner, self.site))


def describe_exit(exitcode: int | None) -> str:
    """``"was killed by signal 9 (SIGKILL)"`` or ``"exited with status 3"``."""
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        import signal

        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        return f"was killed by signal {-exitcode} ({name})"
    return f"exited with status {exitcode}"


class RemoteException(Exception):
    """An exception from a worker process that could not be pickled, kept as text.

    Device libraries raise exceptions holding sockets or sessions; those cannot cross a process
    boundary, so the worker sends this instead: the original type's name, message and traceback.
    """

    def __init__(self, type_name: str, message: str, traceback_text: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.traceback_text = traceback_text

    def __reduce__(self) -> tuple[type[RemoteException], tuple[str, str, str]]:
        return (type(self), (self.type_name, self.message, self.traceback_text))
