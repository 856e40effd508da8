"""``nornir-bench run`` against real emulated devices: good ones, a wrong password, a closed
port and a silent host in one job; each fails alone, in one line, and no password leaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.devices import LabProcess, closed_port, silent_port

ENV_PASSWORD = "fakenos-lab"  # the lab's password, given to the job through the environment
WRONG_PASSWORD = "Wr0ng-but-still-secret"


def inventory_with_bad_hosts(lab: LabProcess, folder: Path, closed: int, silent: int) -> Path:
    """The lab's hosts with their password from ``${NB_LAB_PASSWORD}``, plus three bad hosts."""
    yaml = YAML()
    hosts = yaml.load(lab.inventory / "hosts.yaml")
    rtr1 = hosts["rtr1"]
    hosts["badpw"] = {"hostname": "127.0.0.1", "port": rtr1["port"], "groups": list(rtr1["groups"]),
                      "password": WRONG_PASSWORD}
    hosts["closed"] = {"hostname": "127.0.0.1", "port": closed, "groups": list(rtr1["groups"])}
    hosts["silent"] = {"hostname": "127.0.0.1", "port": silent, "groups": list(rtr1["groups"])}
    folder.mkdir()
    with open(folder / "hosts.yaml", "w") as f:
        yaml.dump(hosts, f)
    (folder / "groups.yaml").write_text((lab.inventory / "groups.yaml").read_text())
    (folder / "defaults.yaml").write_text(defaults(lab))
    return folder


def defaults(lab: LabProcess, more: str = "") -> str:
    """The job's defaults: the lab's credentials, and the lab's devices' keys (the lab wrote
    them; they are checked by default)."""
    known = lab.inventory / "known_hosts"
    return (
        f"username: user\npassword: ${{NB_LAB_PASSWORD}}\ndata: {{known_hosts: {known}}}\n{more}"
    )


@pytest.mark.parametrize(
    ("runner", "task", "params"),
    [
        ("threadpool", "send_command", "{command: show version, enable: true}"),
        ("asyncio", "asend_command", "{command: show version, enable: true, timeout: 8}"),
    ],
)
def test_a_job_on_good_and_bad_devices(
    fakenos_lab: LabProcess, tmp_path: Path, runner: str, task: str, params: str
) -> None:
    with closed_port() as closed, silent_port() as silent:
        inventory = inventory_with_bad_hosts(fakenos_lab, tmp_path / "inv", closed, silent)
        job = tmp_path / "job.yaml"
        job.write_text(textwrap.dedent(f"""\
            inventory:
              plugin: SimpleInventory
              options: {{host_file: inv/hosts.yaml, group_file: inv/groups.yaml,
                         defaults_file: inv/defaults.yaml}}
            runner: {{plugin: {runner}, options: {{num_workers: 10}}}}
            logging: {{log_file: nornir.log}}
            task: {{name: {task}, params: {params}}}
            """))
        if task == "send_command":  # netmiko's own timeouts, short for the silent host
            text = job.read_text().replace("enable: true}", "enable: true, read_timeout: 8}")
            job.write_text(text)
            (inventory / "defaults.yaml").write_text(defaults(
                fakenos_lab,
                "connection_options: {netmiko: {extras: {conn_timeout: 3, banner_timeout: 3,"
                " auth_timeout: 3}}}\n",
            ))
        done = subprocess.run(
            [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
            cwd=tmp_path, capture_output=True, text=True, timeout=110,
            env={**os.environ, "NB_LAB_PASSWORD": ENV_PASSWORD},
        )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    records = {r["host"]: r for r in map(json.loads, lines)}
    assert set(records) == {"rtr1", "rtr2", "sw1", "sw2", "badpw", "closed", "silent"}
    for name in ("rtr1", "rtr2"):
        assert records[name]["failed"] is False and "Cisco IOS" in records[name]["result"]
    for name in ("sw1", "sw2"):
        assert records[name]["failed"] is False and "cEOS" in records[name]["result"]
    for name in ("badpw", "closed", "silent"):
        assert records[name]["failed"] is True and records[name]["traceback"], name
    assert "hosts: 7, ok: 4, failed: 3" in done.stdout
    host_lines = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    failed = sorted(line.split(":")[0].strip() for line in host_lines)
    assert failed == ["badpw", "closed", "silent"]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    log = (tmp_path / "nornir.log").read_text()
    written = (tmp_path / "out.jsonl").read_text()
    for output in (done.stdout, done.stderr, written, log):
        assert ENV_PASSWORD not in output and WRONG_PASSWORD not in output
