"""What benchmarks run against, each in a process of its own: the FakeNOS device lab, the
emulated-RTT server, and a TCP proxy counting the connections it passes on."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.child import child_command, child_env
from harness.jobs import nornir_bench
from harness.processes import Started, started
from nornir_bench.lab import LabDevice

__all__ = ["Proxy", "counting_proxy", "device_lab", "rtt_server"]

READY_SECONDS = 60.0


@contextmanager
def device_lab(folder: Path, count: int, platforms: Sequence[str] = ("cisco_ios",)
               ) -> Iterator[list[LabDevice]]:
    """``count`` FakeNOS devices (``nornir-bench lab``) on free loopback ports, their
    inventory written in ``folder``; the devices, until the block ends."""
    from nornir_bench.lab import load_lab_devices
    from nornir_bench.lab.ports import free_port_range

    base = free_port_range(count)
    command = nornir_bench("lab", "--count", str(count), "--platform", *platforms, "--port",
                           str(base), "--write", str(folder))
    with started(command, ready=lambda line: line.startswith("lab ready"),
                 timeout=READY_SECONDS):
        yield load_lab_devices(folder)


@contextmanager
def rtt_server(port: int, ports: int, delay: float, *, prefix: Sequence[str] = (),
               options: Sequence[str] = (), cpus: set[int] | None = None) -> Iterator[Started]:
    """``nornir-bench rtt-server`` on ``ports`` ports from ``port``, answering each line
    ``delay`` seconds later (``prefix``: a command it runs under, such as ``ip netns exec NS``;
    ``cpus``: the CPUs it runs on), until the block ends."""
    command = [*prefix, *nornir_bench("rtt-server", "--port", str(port), "--ports", str(ports),
                                      "--delay", str(delay), *options)]
    with started(command, ready=lambda line: line.startswith("rtt server ready:"),
                 timeout=READY_SECONDS, cpus=cpus) as server:
        yield server


@dataclass
class Proxy:
    """The proxy's ports (one a target, in order), and how many connections it accepted."""

    process: Started
    ports: list[int]

    def accepted(self) -> int:
        return int(self.process.ask("count", READY_SECONDS))


@contextmanager
def counting_proxy(targets: list[int]) -> Iterator[Proxy]:
    """A TCP proxy on loopback (:mod:`harness.children.proxy`) in front of each port of
    ``targets``, counting the connections it accepts."""
    command = child_command("harness.children.proxy", json.dumps(targets))
    with started(command, env=child_env(), stdin=True, timeout=READY_SECONDS) as process:
        _, line = process.wait_line(lambda text: text.startswith("["), READY_SECONDS)
        yield Proxy(process, json.loads(line))
