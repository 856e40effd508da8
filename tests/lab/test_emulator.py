"""The device lab: FakeNOS devices started and stopped in-process, and ``run_lab`` as a command.

Its labs are its own: their start, their ports and their stop are what it tests.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nornir_bench.lab import DeviceLab, LabDevice, LabError, load_lab_devices
from nornir_bench.lab.ports import port_free
from tests.devices import LAB, ROOT, free_port_range, free_ports, full_port, started, stopped
from tests.waiting import HANG_GUARD


def device(port: int, name: str = "r1", platform: str = "cisco_ios") -> LabDevice:
    return LabDevice(name, "127.0.0.1", port, platform, "user", "fakenos-lab")


def ssh_banner(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        return sock.recv(64)


def listened_on(port: int) -> bool:
    """Whether something listens on the port, found without connecting (a connection would
    start a FakeNOS session thread in this process)."""
    return not port_free(port)


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


def test_start_returns_only_once_every_device_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """FakeNOS binds in start() but listens in a thread: a slow thread (a loaded CI machine)
    must not let start() return, and `lab ready` be printed, before the devices listen."""
    from fakenos.core.servers import TCPServerBase

    listen = TCPServerBase._listen

    def late_listen(self: TCPServerBase) -> None:
        time.sleep(0.5)
        listen(self)

    monkeypatch.setattr(TCPServerBase, "_listen", late_listen)
    ports = free_ports(2)
    with DeviceLab([device(ports[0]), device(ports[1], "sw1", "arista_eos")]):
        assert [listened_on(port) for port in ports] == [True, True]


def test_a_device_that_never_listens_fails_the_start_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fakenos.core.servers import TCPServerBase

    monkeypatch.setattr(TCPServerBase, "_listen", lambda self: None)
    port = free_ports(1)[0]
    lab = DeviceLab([device(port)])
    with pytest.raises(LabError, match=r"^devices did not start listening within 0.2 s: r1 "):
        lab.start(timeout=0.2)
    assert not lab.running and not listened_on(port)


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
    # The banner read was a connection that never spoke SSH: counted and named, not printed.
    assert lab.stdout[-1] == (
        "lab stopped (1 connection ended early: "
        "1 without speaking SSH (TCP pings, port probes, wait-lab))"
    )
    assert "Traceback" not in lab.stderr()
    assert refuses(base)


def test_run_lab_stops_on_sigterm(tmp_path: Path) -> None:
    base = free_port_range(1)
    lab = started([*LAB, "lab", "--count", "1", "--port", str(base)], "lab ready:", tmp_path)
    assert stopped(lab, signal.SIGTERM) == 0
    assert lab.stdout[-1] == "lab stopped" and "Traceback" not in lab.stderr()


def test_the_stop_line_says_in_words_why_sessions_ended(tmp_path: Path) -> None:
    """A failed login ends FakeNOS's session with AttributeError ('NoneType' ... 'makefile'):
    the stop line says what that means instead."""
    base = free_port_range(1)
    lab = started([*LAB, "lab", "--count", "1", "--port", str(base)], "lab ready:", tmp_path)
    try:
        login = (
            "import paramiko; c = paramiko.SSHClient();"
            "c.set_missing_host_key_policy(paramiko.AutoAddPolicy());"
            f"c.connect('127.0.0.1', {base}, username='user', password='not-the-lab-password',"
            "look_for_keys=False, allow_agent=False, timeout=10)"
        )
        client = subprocess.run(
            [sys.executable, "-c", login], capture_output=True, text=True, timeout=60
        )
        assert "AuthenticationException" in client.stderr
        time.sleep(0.5)  # the device notices the client left
    finally:
        status = stopped(lab)
    assert status == 0
    assert lab.stdout[-1] == (
        "lab stopped (1 connection ended early: "
        "1 before opening a shell (failed logins, or clients that gave up))"
    )
    assert "makefile" not in lab.stderr()


def test_a_client_that_never_leaves_does_not_keep_the_lab_from_exiting(tmp_path: Path) -> None:
    """A session thread stuck on a half-open connection once kept the stopped lab's process
    alive until it was killed."""
    import paramiko

    base = free_port_range(1)
    lab = started([*LAB, "lab", "--count", "1", "--port", str(base)], "lab ready:", tmp_path)
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    try:
        with pytest.raises(paramiko.AuthenticationException):
            client.connect(
                "127.0.0.1", base, username="user", password="not-the-lab-password",
                look_for_keys=False, allow_agent=False, timeout=10,
            )
        assert stopped(lab) == 0  # not killed by `stopped` after its timeout
    finally:
        client.close()


def test_wait_lab_returns_once_a_lab_started_in_the_background_is_up(tmp_path: Path) -> None:
    base = free_port_range(2)
    description = ["--count", "2", "--port", str(base)]
    lab = subprocess.Popen(
        [*LAB, "lab", *description], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        waited = subprocess.run(
            [*LAB, "wait-lab", *description], cwd=ROOT, capture_output=True, text=True, timeout=90
        )
        assert waited.returncode == 0, waited.stderr
        assert waited.stdout == "lab ready: 2 devices accept connections\n"
        assert not refuses(base) and not refuses(base + 1)
    finally:
        lab.send_signal(signal.SIGINT)
        lab.communicate(timeout=30)


def test_wait_lab_gives_up_after_its_timeout_naming_the_devices() -> None:
    with socket.socket() as holder:  # bound, not listening: refuses
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        done = subprocess.run(
            [*LAB, "wait-lab", "--count", "1", "--port", str(port), "--timeout", "0.3"],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"nornir-bench: the lab is not ready after 0.3 s: dev1 (127.0.0.1:{port}: connection "
        "refused); is `nornir-bench lab` running with this inventory?"
    ]


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


@pytest.mark.timeout(HANG_GUARD)
def test_wait_lab_keeps_to_its_timeout_when_devices_do_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Devices that never complete a connection once cost 2 s each past the timeout."""
    from nornir_bench.lab import LabNotReady, ready, wait_for_lab

    # A probe of an hour: one not cut to the time left would hang, stopped by the hang guard.
    monkeypatch.setattr(ready, "_CONNECT_TIMEOUT", 3600.0)
    with full_port() as port:
        devices = [device(port, f"r{i}") for i in range(5)]
        with pytest.raises(LabNotReady, match="not ready after 0.5 s") as caught:
            wait_for_lab(devices, timeout=0.5)
    # The first probe used up the time: the others were never tried.
    said = str(caught.value)
    assert f"r0 (127.0.0.1:{port}: not tried)" not in said, said
    assert all(f"r{i} (127.0.0.1:{port}: not tried)" in said for i in range(1, 5)), said
