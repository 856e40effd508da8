"""The labs as the package's context managers (:mod:`nornir_bench.lab.labs`,
:mod:`nornir_bench.lab.device_process`): removed when their owner ends however it ends, and a
router lab put back to its baseline (:mod:`nornir_bench.lab.baseline`), as root.

The baseline test runs on the session's ``frr_lab``; the others make labs of their own: they
kill them, or their owners.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import subprocess
import threading
from multiprocessing.queues import Queue
from pathlib import Path

import pytest

from nornir_bench.lab import LabNotRestored, RunningRouterLab, device_lab, router_lab
from nornir_bench.lab._system import FRR_ETC
from tests.devices import device_lab_back, lab_process
from tests.routers import (
    SessionLabs,
    lab_leftovers,
    lab_pids,
    new_lab_name,
    skip_without_router_lab,
    wait_for,
)
from tests.waiting import HANG_GUARD, wait_until

ROUTE = "ip route 203.0.113.99/32 Null0"


def state_of(pid: int) -> str:
    """Process ``pid``'s state letter (``S``, ``T`` for stopped ...), ``X`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return text.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie is dead: only its parent has not reaped it)."""
    return state_of(pid) not in "ZX"


def test_restore_puts_back_a_running_and_saved_configuration_and_a_stopped_daemon(
    frr_lab: RunningRouterLab,
) -> None:
    """A route added and written to r2's frr.conf, r3's staticd stopped (SIGSTOP): after
    ``restore`` the route is gone from both, the file ``write memory`` added too, and r3's
    staticd runs again."""
    saved = FRR_ETC / f"nb-{frr_lab.name}-r2" / "frr.conf"
    text, files = saved.read_text(), set(os.listdir(saved.parent))
    subprocess.run(["vtysh", "-N", f"nb-{frr_lab.name}-r2", "-c", "configure terminal",
                    "-c", ROUTE, "-c", "end", "-c", "write memory"],
                   capture_output=True, timeout=60, check=True)
    assert ROUTE in frr_lab.vtysh("r2", "show running-config")
    assert ROUTE in saved.read_text()
    (staticd,) = lab_pids(frr_lab.name, "staticd", "r3")
    os.kill(staticd, signal.SIGSTOP)
    try:
        # The signal is delivered after kill() returns: a restore that looked first would see
        # it running, and its vtysh would wait on it stopped.
        assert not wait_for(lambda: state_of(staticd) not in "Tt")
        frr_lab.restore()
        continued = state_of(staticd) not in "Tt"
    finally:
        os.kill(staticd, signal.SIGCONT)  # already, if restore did its part
    assert continued
    assert ROUTE not in frr_lab.vtysh("r2", "show running-config")
    assert saved.read_text() == text and set(os.listdir(saved.parent)) == files
    assert frr_lab.bgp_peers("r2") == frr_lab.bgp_at_ready["r2"]


def test_a_lab_that_cannot_be_put_back_says_what_and_ctrl_c_still_removes_it() -> None:
    """r1's staticd killed: ``restore`` raises, naming it; Ctrl-C (KeyboardInterrupt) ending
    the block removes the lab all the same. (A lab of its own: a daemon of it is killed.)"""
    skip_without_router_lab()
    name = new_lab_name()
    with pytest.raises(KeyboardInterrupt), router_lab(1, name=name) as lab:
        (staticd,) = lab_pids(name, "staticd", "r1")
        os.kill(staticd, signal.SIGKILL)
        assert not wait_for(lambda: alive(staticd))
        with pytest.raises(LabNotRestored) as raised:
            lab.restore()
        assert str(raised.value) == f"r1: its staticd (process {staticd}) is gone"
        raise KeyboardInterrupt
    assert not lab_leftovers(name)


def test_a_session_lab_that_cannot_be_put_back_fails_the_test_and_is_replaced(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """What the session's lab fixtures do after a test that killed a daemon: the test fails
    naming it, and the lab is removed so that the next test asking gets a new one. (A session
    of labs of its own: a daemon of its lab is killed.)"""
    labs = SessionLabs(tmp_path_factory)
    try:
        lab = labs.lab("throttling")
        (staticd,) = lab_pids(lab.name, "staticd", "r1")
        os.kill(staticd, signal.SIGKILL)
        assert not wait_for(lambda: alive(staticd))
        with pytest.raises(pytest.fail.Exception) as failed:
            labs.restore("throttling")
        assert str(failed.value) == (
            "the throttling lab could not be put back after this test, so it was replaced: "
            f"r1: its staticd (process {staticd}) is gone")
        assert not lab_leftovers(lab.name)
        assert labs.lab("throttling").name != lab.name
    finally:
        labs.close()


def test_a_device_lab_whose_process_ended_is_started_again_and_the_test_failed(
    tmp_path: Path,
) -> None:
    """What ``fakenos_lab`` does after a test that killed its process. (A lab of its own: it
    is killed.)"""
    with lab_process(tmp_path, {"r1": "cisco_ios"}) as lab:
        first = lab.pid
        lab.kill()
        with pytest.raises(pytest.fail.Exception, match=(
            r"^the FakeNOS lab's process ended during this test \(exit status -9\), so it was "
            r"started again$"
        )):
            device_lab_back(lab)
        assert lab.pid != first and lab.process is not None and lab.process.poll() is None
        socket.create_connection(("127.0.0.1", lab.devices[0].port), HANG_GUARD).close()
        device_lab_back(lab)  # serving: nothing to do, nothing said


def own_router_lab(name: str, said: Queue[int]) -> None:
    """A process owning router lab ``name``, until killed."""
    with router_lab(1, name=name) as lab:
        said.put(lab.owner)
        threading.Event().wait()


def own_device_lab(folder: str, said: Queue[int]) -> None:
    """A process owning a device lab, until killed."""
    with device_lab({"r1": "cisco_ios"}, folder) as lab:
        assert lab.pid is not None
        said.put(lab.pid)
        threading.Event().wait()


def owner_killed(target: object, *args: object) -> int:
    """What ``target`` (run in a process of its own) said once ready, that process then killed
    with SIGKILL, as the OOM killer would."""
    spawn = multiprocessing.get_context("spawn")
    said: Queue[int] = spawn.Queue()
    owner = spawn.Process(target=target, args=(*args, said))
    owner.start()
    try:
        told = said.get(timeout=HANG_GUARD)
    finally:
        owner.kill()
        owner.join(HANG_GUARD)
    return told


def start_router_lab(name: str, said: Queue[str]) -> None:
    """A process starting router lab ``name``: whether it got ready or Ctrl-C came first."""
    try:
        with router_lab(2, name=name):
            said.put("ready")
    except KeyboardInterrupt:
        said.put("interrupted")


def test_ctrl_c_while_a_router_lab_starts_removes_what_it_had_made() -> None:
    """Ctrl-C once its namespaces are made, before its routers' BGP session is up (ready):
    the context manager removes what the start made. (A lab of its own: it never gets
    ready.)"""
    skip_without_router_lab()
    name = new_lab_name()
    spawn = multiprocessing.get_context("spawn")
    said: Queue[str] = spawn.Queue()
    owner = spawn.Process(target=start_router_lab, args=(name, said))
    owner.start()
    try:
        wait_until(lambda: os.path.exists(f"/run/netns/nb-{name}-r2"), "the lab's namespaces",
                   every=0.02)
        assert owner.pid is not None
        os.kill(owner.pid, signal.SIGINT)
        assert said.get(timeout=HANG_GUARD) == "interrupted"
        owner.join(HANG_GUARD)
        assert owner.exitcode == 0
    finally:
        owner.kill()
        owner.join(HANG_GUARD)
    assert not wait_for(lambda: lab_leftovers(name))


def test_a_router_lab_whose_owner_is_killed_is_removed_by_its_guard() -> None:
    """(A lab of its own: its owner is killed.)"""
    skip_without_router_lab()
    name = new_lab_name()
    owner_killed(own_router_lab, name)
    assert not wait_for(lambda: lab_leftovers(name))


def test_a_device_lab_whose_owner_is_killed_stops(tmp_path: Path) -> None:
    """Its process reads the end of the pipe only its owner held. (A lab of its own: its
    owner is killed.)"""
    served = owner_killed(own_device_lab, os.fspath(tmp_path / "inventory"))
    assert not wait_for(lambda: alive(served))
