"""The examples load and run as shipped: configurations under inventory/, jobs under tasks/."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from nornir import InitNornir

from nornir_bench import ThreadPoolRunner
from nornir_bench.jobs.load import load_job
from nornir_bench.lab.devices import LabDevice
from nornir_bench.lab.inventory_files import write_inventory
from nornir_bench.lab.netconf_plan import plan_netconf_lab
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.topology import plan_lab
from tests.devices import LAB, started, stopped

ROOT = Path(__file__).resolve().parents[1]


def test_synthetic_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    nr = InitNornir(config_file="inventory/synthetic.yaml")
    assert len(nr.inventory.hosts) == 10_000
    assert isinstance(nr.runner, ThreadPoolRunner) and nr.runner.num_workers == 1000
    assert {h.platform for h in nr.inventory.hosts.values()} == {"cisco_ios", "arista_eos"}


def test_lab_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    nr = InitNornir(config_file="inventory/lab/config.yaml")
    assert sorted(nr.inventory.hosts) == ["rtr1", "rtr2", "sw1", "sw2"]
    assert nr.inventory.hosts["sw1"].platform == "arista_eos"
    assert all(h.hostname == "127.0.0.1" for h in nr.inventory.hosts.values())


JOBS = sorted((ROOT / "tasks").glob("*.yaml"))
IGNORED = shutil.ignore_patterns("frr", "nc", "__pycache__")


@pytest.mark.parametrize("path", JOBS, ids=[p.name for p in JOBS])
def test_every_example_job_is_valid(path: Path, tmp_path: Path) -> None:
    # A copy of the examples, with the inventories `nornir-bench lab --write inventory/frr`
    # and `--netconf ... --write inventory/nc` write (not shipped), so that their jobs are
    # checked as well.
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks")
    shutil.copytree(ROOT / "inventory", tmp_path / "inventory", ignore=IGNORED)
    plan = plan_lab(3, port=3001, name="frr")
    write_inventory(RouterLab(plan).devices(), tmp_path / "inventory" / "frr")
    # and the NETCONF lab's (`nornir-bench lab --netconf 3 --write inventory/nc`)
    servers = plan_netconf_lab(3, port=2830, name="netconf").servers
    write_inventory([LabDevice(s.name, "127.0.0.1", s.port, "netconf", "nbl-netconf", "pw",
                               "ssh-ed25519 AAAA") for s in servers],
                    tmp_path / "inventory" / "nc")
    job = load_job(tmp_path / "tasks" / path.name)
    assert job.task_name and job.settings["inventory"]["plugin"]


LAB_PORTS = range(6001, 6005)  # inventory/lab, as shipped


def own_loopback(script: str) -> list[str]:
    """A command running the bash ``script`` in a network namespace of its own, with only a
    loopback: the shipped lab's fixed ports are free there whatever listens on this machine's
    (root makes the namespace; otherwise a user namespace maps the user to root in it)."""
    unshare = ["unshare", "--net"]
    if os.geteuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    return [*unshare, "bash", "-c", f"ip link set lo up\n{script}"]


def free_ports(count: int) -> list[int]:
    """``count`` loopback ports nothing listens on now (the kernel's choice)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def readme_block(after: str) -> str:
    """The first fenced bash block of README.md that follows the line ``after``."""
    text = (ROOT / "README.md").read_text()
    rest = text[text.index(after):]
    start = rest.index("```bash\n") + len("```bash\n")
    return rest[start:rest.index("```", start)]


def test_the_readme_lab_block_works_pasted_as_written(
    tmp_path: Path, records_state_folder: Path
) -> None:
    block = readme_block("## Jobs against devices, or a local lab")
    lines = block.strip().splitlines()
    assert lines[0].startswith("python3 -m pip install")  # done by the test command already
    # A copy of the checkout's example folders, so that the block runs from the test's folder.
    for folder in ("inventory", "tasks"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    script = "set -e\n" + "\n".join(lines[1:]) + "\nwait\n"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        own_loopback(script), cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("failed: 0") == 2, done.stdout
    assert done.stdout.splitlines()[-1].startswith("lab stopped"), done.stdout
    assert len(list(records_state_folder.glob("lab_show_*.jsonl"))) == 2
    assert not list(tmp_path.glob("*.jsonl"))  # none left in the current folder


def test_the_lab_jobs_run_against_the_lab_as_shipped(tmp_path: Path) -> None:
    # The shipped examples, but with the lab's ports chosen free on this machine.
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks", ignore=IGNORED)
    shutil.copytree(ROOT / "inventory", tmp_path / "inventory", ignore=IGNORED)
    hosts = tmp_path / "inventory" / "lab" / "hosts.yaml"
    text = hosts.read_text()
    for shipped, free in zip(LAB_PORTS, free_ports(len(LAB_PORTS)), strict=True):
        assert text.count(f"port: {shipped}\n") == 1
        text = text.replace(f"port: {shipped}\n", f"port: {free}\n")
    hosts.write_text(text)
    # A lab of its own: the shipped inventory's, started by the command as the README says.
    lab = started([*LAB, "lab", "inventory/lab"], "lab ready:", tmp_path, cwd=tmp_path)
    try:
        for name, hosts, expect in [
            ("lab_show_version", 4, "Software"),
            ("lab_show_clock_async", 2, "UTC"),
            ("lab_tcp_ping", 4, "127.0.0.1:"),
            ("lab_three_steps", 6, ""),  # 2 hosts, 3 steps
        ]:
            out = tmp_path / f"{name}.jsonl"
            done = subprocess.run(
                [sys.executable, "-m", "nornir_bench", "run", f"tasks/{name}.yaml", "-o", str(out)],
                cwd=tmp_path, capture_output=True, text=True, timeout=120,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert len(rows) == hosts and not any(r["failed"] for r in rows), name
            assert all(expect in json.dumps(r["result"]) for r in rows), name
        steps = {r["step"]: r["result"] for r in rows}  # lab_three_steps: a host's answers
        assert "Cisco" in steps[1] and "UTC" in steps[2] and "line protocol" in steps[3]
    finally:
        assert stopped(lab) == 0
