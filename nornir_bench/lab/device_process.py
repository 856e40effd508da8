"""A device lab (FakeNOS) in a process of its own: :func:`device_lab`,
:class:`DeviceLabProcess`.

FakeNOS serves each device from threads of the process it runs in (a listener a device, a few
threads a session, each byte echoed after 10 ms): a test or a benchmark keeps them out of its
own process, its threads and its CPU, by running the lab in another. That process is
``nornir-bench lab INVENTORY``'s code (:mod:`._device_child`), stopped when this process
closes its end of a pipe: when the block ends, on an error or Ctrl-C, and when this process is
killed (SIGKILL) too, so no lab outlives its owner.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nornir_bench.lab._errors import LabError
from nornir_bench.lab.devices import DEFAULT_PASSWORD, DEFAULT_USERNAME, LabDevice
from nornir_bench.lab.inventories import nornir_on
from nornir_bench.lab.inventory_files import write_inventory
from nornir_bench.lab.ports import free_port_range

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["DeviceLabProcess", "device_lab"]

READY_TIMEOUT = 30.0
"""Seconds the process has to say ``lab ready:`` (its imports included, on a busy machine)."""
STOP_TIMEOUT = 15.0
"""Seconds it has to stop once told, before it is killed."""


class DeviceLabProcess:
    """The devices of the inventory in ``inventory`` (a folder), served by a process of
    their own while started (:meth:`start`, :meth:`stop`, or ``with``).

    Args:
        devices: the devices the inventory describes.
        inventory: the folder of their nornir SimpleInventory.
    """

    def __init__(self, devices: Sequence[LabDevice], inventory: str | os.PathLike[str]) -> None:
        self.devices = list(devices)
        self.inventory = Path(inventory)
        self.output: list[str] = []
        """What the process printed on its standard output so far."""
        self.process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._errors: IO[str] | None = None
        self._said_before = ""  # standard error of the processes that ended

    def __enter__(self) -> DeviceLabProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def nornir(self, runner: str = "threadpool", **options: Any) -> Nornir:
        """A Nornir on its inventory with the runner ``runner`` and its ``options``."""
        return nornir_on(self.inventory, runner, **options)

    def start(self, timeout: float = READY_TIMEOUT) -> None:
        """Start the process and return once it said ``lab ready:``.

        Raises:
            LabError: the process ended or stayed silent first, with what it said.
        """
        if self.process is not None and self.process.poll() is None:
            return
        self._errors = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nornir_bench.lab._device_child", os.fspath(self.inventory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors, text=True,
            bufsize=1, start_new_session=True,  # a terminal's Ctrl-C is its owner's to handle
        )
        self._lines = queue.Queue()
        self._reader = threading.Thread(target=_pump, args=(self.process.stdout, self._lines),
                                        name="device-lab-output", daemon=True)
        self._reader.start()
        try:
            while True:
                try:
                    line = self._lines.get(timeout=timeout)
                except queue.Empty:
                    raise LabError(f"the device lab said nothing ready within {timeout:g} s: "
                                   f"{self._said()}") from None
                if line is None:
                    raise LabError(f"the device lab ended before it was ready: {self._said()}")
                self.output.append(line)
                if line.startswith("lab ready:"):
                    return
        except BaseException:
            self.kill()
            raise

    def stop(self) -> int | None:
        """Tell the process to stop (its standard input closed) and wait for it, killing it
        after :data:`STOP_TIMEOUT`; its exit status (``None`` if it never started)."""
        process = self.process
        if process is None:
            return None
        if process.stdin is not None and not process.stdin.closed:
            try:
                process.stdin.close()
            except OSError:  # it is gone already
                pass
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._drain()
        return process.returncode

    def kill(self) -> None:
        """SIGKILL the process, as a device that dies: its sessions end at once."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.stop()

    def restart(self, timeout: float = READY_TIMEOUT) -> None:
        """Stop the lab and start it again on the same ports: every device restarted, each
        session to it gone."""
        self.stop()
        self.start(timeout)

    def _drain(self) -> None:
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT)
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.output.append(line)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._errors is not None:
            self._said_before = self.errors()
            self._errors.close()
            self._errors = None

    def errors(self) -> str:
        """What the process (and those before it, if restarted) printed on standard error."""
        if self._errors is None:
            return self._said_before
        self._errors.seek(0)
        return self._said_before + self._errors.read()

    def _said(self) -> str:
        said = [*self.output, *self.errors().splitlines()]
        return " | ".join(said[-5:]) or "nothing"


@contextmanager
def device_lab(
    devices: Sequence[LabDevice] | Mapping[str, str], write: str | os.PathLike[str],
    *, timeout: float = READY_TIMEOUT,
) -> Iterator[DeviceLabProcess]:
    """A device lab in a process of its own, its inventory written to the folder ``write``,
    stopped when the block ends.

    Args:
        devices: the devices; or a FakeNOS platform by device name, each device then on a
            free loopback port with the lab's credentials (``user`` / ``fakenos-lab``).
        write: the folder of its nornir SimpleInventory.
        timeout: seconds it has to be ready.

    Raises:
        LabError: the inventory cannot be written, or the lab did not start (what it said).
    """
    if isinstance(devices, Mapping):
        first = free_port_range(len(devices))
        devices = [
            LabDevice(name, "127.0.0.1", first + k, platform, DEFAULT_USERNAME, DEFAULT_PASSWORD)
            for k, (name, platform) in enumerate(devices.items())
        ]
    write_inventory(devices, write)
    with DeviceLabProcess(devices, write) as lab:
        yield lab


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)
