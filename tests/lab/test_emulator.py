"""The device lab: FakeNOS devices started and stopped in-process, and ``run_lab`` as a command."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import pytest

from nornir_bench.lab import DeviceLab, LabDevice, LabError, load_lab_devices
from tests.devices import LAB, ROOT, free_port_range, free_ports, started, stopped


def device(port: int, name: str = "r1", platform: str = "cisco_ios") -> LabDevice:
    return LabDevice(name, "127.0.0.1", port, platform, "user", "fakenos-lab")


def ssh_banner(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        return sock.recv(64)


def listened_on(port: int) -> bool:
    """Whether something listens on the port, found without connecting (a connection would
    start a FakeNOS session thread in this process)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_devices_listen_while_started_and_stop_together() -> None:
    ports = free_ports(2)
    with DeviceLab([device(ports[0]), device(ports[1], "sw1", "arista_eos")]) as lab:
        assert lab.running
        assert all(listened_on(port) for port in ports)
    assert not lab.running
    assert not any(listened_on(port) for port in ports)


def test_port_in_use_is_one_line_and_starts_nothing() -> None:
    free, taken = free_ports(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        lab = DeviceLab([device(free), device(taken, "r2")])
        with pytest.raises(
            LabError, match=rf"port {taken} is already in use .* \(host 'r2'\)"
        ) as caught:
            lab.start()
    assert "\n" not in str(caught.value)
    assert not lab.running
    assert not listened_on(free)


def test_a_lab_needs_devices_with_ports_of_their_own() -> None:
    with pytest.raises(LabError, match="at least one device"):
        DeviceLab([])
    with pytest.raises(LabError, match="both use port"):
        DeviceLab([device(7001), device(7001, "r2")])


def test_run_lab_prints_devices_writes_the_inventory_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    base = free_port_range(2)
    folder = tmp_path / "written"
    lab = started(
        [*LAB, "lab", "--count", "2", "--port", str(base), "--write", str(folder)],
        "lab ready:",
        tmp_path,
    )
    try:
        assert lab.stdout[:2] == [
            f"dev1  127.0.0.1:{base:<5}  cisco_ios",
            f"dev2  127.0.0.1:{base + 1:<5}  arista_eos",
        ]
        assert lab.ready.startswith("lab ready: 2 devices")
        assert [d.port for d in load_lab_devices(folder)] == [base, base + 1]
        assert ssh_banner(base + 1).startswith(b"SSH-2.0-")
    finally:
        status = stopped(lab)
    assert status == 0
    # The banner read was an SSH session that never logged in: counted, not printed.
    assert lab.stdout[-1].startswith(
        "lab stopped (1 device session ended early, last: SSHException"
    )
    assert "Traceback" not in lab.stderr()
    assert refuses(base)


def test_run_lab_stops_on_sigterm(tmp_path: Path) -> None:
    base = free_port_range(1)
    lab = started([*LAB, "lab", "--count", "1", "--port", str(base)], "lab ready:", tmp_path)
    assert stopped(lab, signal.SIGTERM) == 0
    assert lab.stdout[-1] == "lab stopped" and "Traceback" not in lab.stderr()


def run_to_end(args: list[str]) -> tuple[int, str]:
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr


def test_run_lab_port_in_use_exits_2_with_one_line() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        status, stderr = run_to_end([*LAB, "lab", "--count", "1", "--port", str(taken)])
    assert status == 2
    assert stderr.strip().splitlines() == [
        f"nornir-bench: error: port {taken} is already in use on "
        f"127.0.0.1:{taken} (host 'dev1'): stop what listens there or give the device another port"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--count", "0"], "count must be a whole number >= 1, got 0"),
        (["inventory/lab", "--count", "2"], "leave them out when the lab comes from an inventory"),
        (["no/such/inventory"], "no inventory at 'no/such/inventory'"),
    ],
)
def test_run_lab_bad_input_exits_2(args: list[str], message: str) -> None:
    status, stderr = run_to_end([*LAB, "lab", *args])
    assert status == 2
    assert len(stderr.strip().splitlines()) == 1 and message in stderr
