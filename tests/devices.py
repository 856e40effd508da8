"""Real peers on loopback for tests: the FakeNOS lab, the RTT server, silent and closed ports.

Fixtures (import them into a conftest or test module to use them):

- ``fakenos_lab``: the session's lab (``fakenos_session_lab``: one per session and xdist
  worker, started by the first test that asks for it): 2 cisco_ios + 2 arista_eos FakeNOS
  devices on free ports, served by a process of their own (:func:`nornir_bench.lab.device_lab`:
  FakeNOS's threads stay out of the test's process); yields a :class:`LabProcess`. A test
  after which its process no longer runs fails, and it is started again (:func:`device_lab_back`).
- ``rtt_server`` (function): an :class:`~nornir_bench.lab.RttServer` (50 ms) on a free port,
  served by a thread of the test process; yields a :class:`ServerThread`.

Helpers: :func:`free_ports`, :func:`free_port_range`, :func:`started`, :func:`stopped` (a
command in a subprocess, until its ready line), :func:`silent_port`, :func:`closed_port`,
:func:`full_port`, :func:`lab_process` (a lab of chosen platforms, of a test's or module's
own), :func:`nornir_on`, :func:`rtt_server_thread`, :func:`counting_server`.
"""

from __future__ import annotations

import asyncio
import json
import queue
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from nornir_bench.lab import DeviceLabProcess, RttServer, RttServerStats, device_lab, nornir_on
from nornir_bench.lab.ports import free_port_range
from tests.waiting import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
LAB = [sys.executable, "-m", "nornir_bench"]
READY_TIMEOUT = 30.0  # seconds for a subprocess to print its ready line (imports included)
STOP_TIMEOUT = 15.0  # seconds for it to exit after SIGINT before it is killed

__all__ = [
    "LabProcess",
    "ServerThread",
    "Started",
    "closed_port",
    "counting_server",
    "device_lab_back",
    "fakenos_lab",
    "fakenos_session_lab",
    "free_port_range",
    "free_ports",
    "full_port",
    "lab_process",
    "nornir_on",
    "rtt_server",
    "rtt_server_thread",
    "silent_port",
    "started",
    "stopped",
]


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (all held, then released)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextmanager
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never sends a byte.

    The kernel completes the handshakes into the listen queue; nothing ever reads or writes.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


@dataclass
class CountingServer:
    """What :func:`counting_server` saw: logins (accepted connections), those still open, and
    the first line each client sent (JSON: what it connected with)."""

    port: int
    accepted: int = 0
    open: int = 0
    hellos: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    control: socket.socket | None = None

    def restart(self) -> None:
        """Close every connection, as a device that restarted (or timed out idle sessions)
        does; it goes on accepting new ones."""
        assert self.control is not None
        self.control.send(b"r")

    def wait_open(self, count: int) -> int:
        """The connections open once there are ``count`` and each open one has said hello (or
        after the hang guard): what a client does reaches the server a moment later."""
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            with self.lock:
                if self.open == count and len(self.hellos) >= self.accepted:
                    break
            time.sleep(0.01)
        return self.open


@contextmanager
def counting_server() -> Iterator[CountingServer]:
    """A loopback TCP server that counts the connections made to it and those still open: a
    device whose logins a test counts, whichever process the client runs in. One thread."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.setblocking(False)
    stats = CountingServer(listener.getsockname()[1])
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    stop_read, stop_write = socket.socketpair()
    selector.register(stop_read, selectors.EVENT_READ)
    stats.control = stop_write
    buffers: dict[socket.socket, bytes] = {}

    def close(sock: socket.socket) -> None:
        selector.unregister(sock)
        del buffers[sock]
        sock.close()
        with stats.lock:
            stats.open -= 1

    def serve() -> None:
        while True:
            for key, _ in selector.select():
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is stop_read:
                    if b"x" in stop_read.recv(16):
                        return
                    for client in list(buffers):  # restart: every session closed
                        close(client)
                    continue
                if sock is listener:
                    client, _ = listener.accept()
                    client.setblocking(False)
                    selector.register(client, selectors.EVENT_READ)
                    buffers[client] = b""
                    with stats.lock:
                        stats.accepted += 1
                        stats.open += 1
                    continue
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data:
                    before = buffers[sock]
                    buffers[sock] = before + data
                    if b"\n" not in before and b"\n" in buffers[sock]:
                        line = buffers[sock].split(b"\n", 1)[0]
                        with stats.lock:
                            stats.hellos.append(json.loads(line))
                    continue
                close(sock)

    thread = threading.Thread(target=serve, name="counting-server", daemon=True)
    thread.start()
    try:
        yield stats
    finally:
        stop_write.send(b"x")
        thread.join(10)
        for sock in list(buffers):
            sock.close()
        for sock in (listener, stop_read, stop_write):
            sock.close()
        selector.close()


@contextmanager
def full_port() -> Iterator[int]:
    """A loopback port whose listen queue is full: new connections hang in the handshake.

    The queue (backlog 0) is filled with connections nobody accepts until one no longer gets
    through; from then on the kernel drops further connection attempts.
    """
    with ExitStack() as stack:
        server = stack.enter_context(socket.socket())
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        for _ in range(16):
            client = stack.enter_context(socket.socket())
            client.settimeout(0.2)
            try:
                client.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            raise RuntimeError("the listen queue never filled")
        yield port


@dataclass
class Started:
    """A subprocess that printed its ready line; its stderr goes to a file (no pipe to fill)."""

    process: subprocess.Popen[str]
    ready: str
    stdout: list[str]
    stderr_path: Path
    _reader: threading.Thread = field(repr=False)
    _lines: queue.Queue[str | None] = field(repr=False)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def started(
    args: Sequence[str],
    ready: str,
    workdir: Path,
    timeout: float = READY_TIMEOUT,
    cwd: Path = ROOT,
) -> Started:
    """Start ``args`` in ``cwd`` and wait for a stdout line beginning ``ready``; kill it if
    none comes."""
    stderr_path = workdir / f"stderr-{len(list(workdir.glob('stderr-*')))}.txt"
    with open(stderr_path, "w", encoding="utf-8") as err:
        process = subprocess.Popen(
            list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1
        )
    lines: queue.Queue[str | None] = queue.Queue()
    assert process.stdout is not None
    reader = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    handle = Started(process, "", seen, stderr_path, reader, lines)
    try:
        while True:
            line = lines.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"{args} exited before {ready!r}: {seen}\n{handle.stderr()}")
            seen.append(line)
            if line.startswith(ready):
                handle.ready = line
                return handle
    except BaseException:
        stopped(handle, signal.SIGKILL)
        raise


def stopped(handle: Started, sig: int = signal.SIGINT, timeout: float = STOP_TIMEOUT) -> int:
    """Send ``sig`` and wait for the exit (killing it after ``timeout``); the exit status.

    Afterwards ``handle.stdout`` holds every line it printed.
    """
    process = handle.process
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    handle._reader.join(timeout)
    while True:
        try:
            line = handle._lines.get_nowait()
        except queue.Empty:
            break
        if line is not None:
            handle.stdout.append(line)
    assert process.stdout is not None
    process.stdout.close()
    return process.returncode


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


LabProcess = DeviceLabProcess  # a device lab in a process of its own, as the fixtures yield it


@contextmanager
def lab_process(folder: Path, platforms: dict[str, str]) -> Iterator[LabProcess]:
    """A lab of a test's (or module's) own in a process of its own: a device per name in
    ``platforms`` (name -> FakeNOS platform), user / fakenos-lab, on free loopback ports, its
    inventory in ``folder``/inventory; stopped (or reaped, if a test killed it) at the end."""
    with device_lab(platforms, folder / "inventory") as lab:
        yield lab


@pytest.fixture(scope="session")
def fakenos_session_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabProcess]:
    """The session's FakeNOS lab (``fakenos_lab`` gives it to each test)."""
    platforms = {"rtr1": "cisco_ios", "sw1": "arista_eos", "rtr2": "cisco_ios", "sw2": "arista_eos"}
    with lab_process(tmp_path_factory.mktemp("fakenos-lab"), platforms) as lab:
        yield lab


@pytest.fixture
def fakenos_lab(fakenos_session_lab: LabProcess) -> Iterator[LabProcess]:
    """The session's two cisco_ios and two arista_eos devices (user / fakenos-lab) on free
    loopback ports, serving again after the test (:func:`device_lab_back`)."""
    yield fakenos_session_lab
    device_lab_back(fakenos_session_lab)


def device_lab_back(lab: LabProcess) -> None:
    """A device lab's baseline is its process serving (FakeNOS keeps no configuration): one
    whose process ended is started again on the same ports, and the test failed, saying so."""
    process = lab.process
    if process is None or process.poll() is None:
        return
    lab.stop()
    lab.start()
    pytest.fail(f"the FakeNOS lab's process ended during this test (exit status "
                f"{process.returncode}), so it was started again")


@dataclass
class ServerThread:
    """An RTT server served by a thread of this process, with its own event loop."""

    server: RttServer
    thread: threading.Thread
    loop: asyncio.AbstractEventLoop
    stop: asyncio.Event

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def stats(self) -> RttServerStats:
        return self.server.stats


@contextmanager
def rtt_server_thread(**options: Any) -> Iterator[ServerThread]:
    """Serve ``RttServer(port=0, **options)`` in a thread until the block ends."""
    server = RttServer("127.0.0.1", 0, **options)
    ready = threading.Event()
    failure: list[BaseException] = []
    handles: dict[str, Any] = {}

    async def serve() -> None:
        handles["loop"] = asyncio.get_running_loop()
        handles["stop"] = stop = asyncio.Event()
        try:
            async with server:
                ready.set()
                await stop.wait()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="rtt-server")
    thread.start()
    ready.wait(READY_TIMEOUT)
    if failure:
        thread.join()
        raise failure[0]
    running = ServerThread(server, thread, handles["loop"], handles["stop"])
    try:
        yield running
    finally:
        running.loop.call_soon_threadsafe(running.stop.set)
        thread.join(STOP_TIMEOUT)


@pytest.fixture
def rtt_server() -> Iterator[ServerThread]:
    """The RTT server at 50 ms on a free loopback port, for one test."""
    with rtt_server_thread(delay=0.05) as running:
        yield running
