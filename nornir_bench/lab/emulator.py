"""Start and stop the lab's emulated SSH devices (FakeNOS), and ``run_lab``, the command.

FakeNOS runs each device as threads of this process: a listener per device, a few threads per
SSH session. :class:`DeviceLab` owns them: it checks every port is free before starting any
device (so a port in use is one line, not a traceback from a thread), returns from ``start``
only once every device accepts connections (FakeNOS binds in ``start`` but listens in a thread
of its own, later), and stops all devices together, since FakeNOS stops one device in up to a
second.

:func:`run_lab` is what ``nornir-bench lab`` runs: start the devices, print where they listen,
print ``lab ready:``, wait for Ctrl-C or SIGTERM, stop them.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from nornir_bench.core.threads import in_a_daemon_thread
from nornir_bench.lab._errors import LabError
from nornir_bench.lab._quiet import quiet_emulator
from nornir_bench.lab.devices import (
    DEFAULT_BASE_PORT,
    DEFAULT_PLATFORMS,
    LabDevice,
    check_ports,
    fakenos_platforms,
    generate_lab_devices,
    load_lab_devices,
)
from nornir_bench.lab.inventory_files import write_inventory, write_known_hosts

__all__ = ["DEFAULT_LAB_SIZE", "READY_TIMEOUT", "DeviceLab", "lab_devices", "run_lab"]

DEFAULT_LAB_SIZE = 4
"""How many devices ``run_lab`` generates when given neither an inventory nor a count."""

# FakeNOS checks whether its listener should stop once a second; more stopping threads than
# this only add threads, not speed.
_MAX_STOPPERS = 64

# Seconds every device has to start listening once FakeNOS has bound its port. A loaded CI
# machine has been seen to take seconds to schedule a listener thread.
READY_TIMEOUT = 30.0
_READY_POLL_SECONDS = 0.01


class DeviceLab:
    """The emulated devices of ``devices``, started by :meth:`start` or ``with``.

    Args:
        devices: what to emulate; every device needs a port of its own.

    Raises:
        LabError: when FakeNOS is not installed or two devices share a port.
    """

    def __init__(self, devices: Sequence[LabDevice]) -> None:
        fakenos_platforms()  # the install hint, before anything starts
        if not devices:
            raise LabError("a lab needs at least one device")
        check_ports(devices)
        self.devices = list(devices)
        self._fakenos: Any = None

    @property
    def running(self) -> bool:
        return self._fakenos is not None

    def start(self, *, timeout: float = READY_TIMEOUT) -> None:
        """Start every device and return once each accepts connections; on any failure, none
        is left running.

        Args:
            timeout: seconds the devices have to start listening.

        Raises:
            LabError: when a port is in use or cannot be listened on, or a device does not
                listen within ``timeout``.
        """
        if self._fakenos is not None:
            return
        for device in self.devices:
            _check_free(device)
        from fakenos import FakeNOS

        try:
            fakenos = FakeNOS(inventory=_fakenos_inventory(self.devices))
        except Exception as exc:  # pydantic's validation errors run over many lines
            raise LabError("FakeNOS rejected the lab: " + " ".join(str(exc).split())) from exc
        try:
            _start_daemonic(fakenos)
            _wait_listening(fakenos, self.devices, timeout)
        except OSError as exc:  # a port taken between the check and the start
            _stop_all(fakenos)
            raise LabError(f"cannot start the lab: {exc.strerror or exc}") from exc
        except BaseException:
            _stop_all(fakenos)
            raise
        self._fakenos = fakenos

    def stop(self) -> None:
        """Stop every device and end their sessions; waits for FakeNOS's threads."""
        fakenos, self._fakenos = self._fakenos, None
        if fakenos is not None:
            _stop_all(fakenos)

    def __enter__(self) -> DeviceLab:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DeviceLab({len(self.devices)} devices, running={self.running})"


def run_lab(
    inventory: str | os.PathLike[str] | None = None,
    *,
    count: int | None = None,
    platforms: Sequence[str] | None = None,
    port: int | None = None,
    write: str | os.PathLike[str] | None = None,
    stop: threading.Event | None = None,
    out: TextIO | None = None,
) -> None:
    """Run a device lab until SIGINT (Ctrl-C) or SIGTERM: ``nornir-bench lab``.

    Prints one line per device (name, address:port, platform), then one line beginning
    ``lab ready:``; stops the devices and returns when signalled.

    Args:
        inventory: a nornir SimpleInventory to emulate (see :func:`load_lab_devices`); or
            ``None`` to generate a lab from the options below.
        count: how many devices to generate (default 4).
        platforms: FakeNOS platforms given to the generated devices in turn (default
            cisco_ios, arista_eos).
        port: the first generated device's port (default 6001); the others follow.
        write: a directory to write the generated lab's SimpleInventory to (user / fakenos-lab).
        stop: an event that stops the lab when set, for callers that are not the main thread
            (which alone receives signals); ``None`` waits for SIGINT or SIGTERM.
        out: where to print; default standard output.

    Raises:
        LabError: for a bad option, an inventory it cannot use, FakeNOS missing, a port in use.
    """
    print_line = _printer(out)
    if inventory is not None and write is not None:
        raise LabError(
            "count, platform, port and write describe a generated lab: "
            "leave them out when the lab comes from an inventory"
        )
    devices = lab_devices(inventory, count=count, platforms=platforms, port=port)
    with _until_stopped(stop) as stopped, quiet_emulator() as quiet, DeviceLab(devices):
        width = max(len(d.name) for d in devices)
        for device in devices:
            print_line(
                f"{device.name:<{width}}  {device.address}:{device.port:<5}  {device.platform}"
            )
        if write is not None:
            files = write_inventory(devices, write)
            print_line(f"inventory written: {', '.join(os.fspath(f) for f in files)}")
        elif inventory is not None:  # its devices' keys beside it, where its defaults name them
            known = write_known_hosts(devices, _folder_of(inventory))
            print_line(f"known hosts written: {os.fspath(known)}")
        print_line(f"lab ready: {len(devices)} devices; Ctrl-C or SIGTERM stops them")
        while not stopped.wait(0.5):
            pass
    print_line("lab stopped" + (f" ({quiet.describe()})" if quiet.ended else ""))


def lab_devices(
    inventory: str | os.PathLike[str] | None = None,
    *,
    count: int | None = None,
    platforms: Sequence[str] | None = None,
    port: int | None = None,
) -> list[LabDevice]:
    """The devices of a lab: an inventory's hosts, or a generated lab (see :func:`run_lab`).

    Raises:
        LabError: for an inventory it cannot use, or generator options given with one.
    """
    if inventory is not None:
        if count is not None or platforms or port is not None:
            raise LabError(
                "count, platform, port and write describe a generated lab: "
                "leave them out when the lab comes from an inventory"
            )
        return load_lab_devices(inventory)
    return generate_lab_devices(
        DEFAULT_LAB_SIZE if count is None else count,
        platforms=platforms or DEFAULT_PLATFORMS,
        port=DEFAULT_BASE_PORT if port is None else port,
    )


def _folder_of(inventory: str | os.PathLike[str]) -> Path:
    path = Path(inventory)
    return path if path.is_dir() else path.parent


def _printer(out: TextIO | None) -> Callable[[str], None]:
    def print_line(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    return print_line


def _fakenos_inventory(devices: Sequence[LabDevice]) -> dict[str, Any]:
    return {
        "hosts": {
            d.name: {
                "username": d.username,
                "password": d.password,
                "port": d.port,
                "platform": d.platform,
                "server": {
                    "plugin": "ParamikoSshServer",
                    "configuration": {"address": d.address, "timeout": 1},
                },
            }
            for d in devices
        }
    }


def _check_free(device: LabDevice) -> None:
    """Fail in one line if the device's port cannot be listened on.

    The probe binds as FakeNOS does but without SO_REUSEPORT, which FakeNOS sets: so another
    FakeNOS listening on the port (which would silently share it) is found too.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((device.address, device.port))
        except OSError as exc:
            where = f"{device.address}:{device.port} (host {device.name!r})"
            if exc.errno == errno.EADDRINUSE:
                raise LabError(
                    f"port {device.port} is already in use on {where}: stop what listens "
                    "there or give the device another port"
                ) from None
            if exc.errno == errno.EACCES:
                raise LabError(
                    f"no permission to listen on {where}: use a port above 1023"
                ) from None
            raise LabError(f"cannot listen on {where}: {exc.strerror or exc}") from None


def _start_daemonic(fakenos: Any) -> None:
    """``fakenos.start()``, called from a daemon thread.

    A thread is a daemon if the thread that created it is: FakeNOS's listener threads, and the
    session threads they start, are then daemons too. A session that never ends (a client that
    left a half-open connection) then cannot keep the lab's process from exiting once the lab
    has stopped; stopping still closes and joins every session as FakeNOS does.
    """
    in_a_daemon_thread(fakenos.start, "lab-start")


def _wait_listening(fakenos: Any, devices: Sequence[LabDevice], timeout: float) -> None:
    """Return once every device's port accepts connections.

    FakeNOS binds each port in ``start()`` but calls ``listen()`` in a thread it starts there,
    so without this wait a client connecting right after ``start()`` may be refused. The listen
    state is read from the device's own socket (``SO_ACCEPTCONN``): probing by connecting would
    open an SSH session on every device just to close it.
    """
    deadline = time.monotonic() + timeout
    waiting = {d.name: d for d in devices}
    while True:
        for name in list(waiting):
            if _listening(fakenos.hosts[name], waiting[name]):
                del waiting[name]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            late = ", ".join(f"{d.name} ({d.address}:{d.port})" for d in waiting.values())
            raise LabError(
                f"devices did not start listening within {timeout:g} s: {late}; "
                "is the machine overloaded?"
            )
        time.sleep(_READY_POLL_SECONDS)


def _listening(host: Any, device: LabDevice) -> bool:
    """Whether the device's listening socket is in the listen state (accepts connections)."""
    sock = getattr(getattr(host, "server", None), "_socket", None)
    if isinstance(sock, socket.socket):
        try:
            return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
        except OSError:  # closed: its listener failed; the deadline reports it
            return False
    # A FakeNOS without that attribute: a connection is the only way to know.
    try:
        socket.create_connection((device.address, device.port), timeout=1).close()
    except OSError:
        return False
    return True


def _stop_all(fakenos: Any) -> None:
    """Stop every running device at once (each takes up to about a second to notice)."""
    hosts = [h for h in fakenos.hosts.values() if h.running]
    if not hosts:
        return
    with ThreadPoolExecutor(min(len(hosts), _MAX_STOPPERS), thread_name_prefix="lab-stop") as pool:
        for done in [pool.submit(h.stop) for h in hosts]:
            done.result()


@contextmanager
def _until_stopped(stop: threading.Event | None) -> Iterator[threading.Event]:
    """The event that ends the lab: ``stop``, or one set by SIGINT or SIGTERM.

    The handlers go in before the devices start, so a signal during start-up stops the lab
    cleanly instead of raising ``KeyboardInterrupt`` among FakeNOS's threads.
    """
    if stop is not None:
        yield stop
        return
    if threading.current_thread() is not threading.main_thread():
        raise LabError(
            "run_lab outside the main thread needs a stop event: signals reach the main thread only"
        )
    stopped = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopped.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
