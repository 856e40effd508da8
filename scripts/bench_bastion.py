#!/usr/bin/env python3
"""A fleet behind a bastion: ``--hosts`` hosts on ``--routers`` FRR routers reached through one
OpenSSH jump host, against the same run reaching them directly.

    python scripts/bench_bastion.py [--routers 5] [--hosts 200] [--repeat 3]
                                    [--runners threadpool asyncio processpool] [--quick]

As root (``apt-get install -y frr openssh-server``). A router lab of its own
(bench_routers.RouterLab: its inventory of ``--hosts`` hosts spread over the routers, with the
routers' host keys), and a bastion: a second OpenSSH server on a free loopback port, for the
lab's user, that forwards only to 127.0.0.1 (``AllowTcpForwarding local``, ``PermitOpen
127.0.0.1:*``, no shell) with OpenSSH's own ``MaxSessions`` (10); its key added to the known
hosts. Both stopped at the end, on an error and on Ctrl-C; every file in a temporary folder.

Each runner's job (``show version``: ``send_command`` on threadpool, ``asend_command`` on the
others, the runners' default options, no host-key option: ``strict``) runs through
``nornir-bench run`` in a process of its own, directly and with ``jump_host`` in the
inventory's defaults, alternating, ``--repeat`` times each. Measured: hosts ok (target all),
the median wall time of each, and their ratio (target <= 1.3x); the bastion's logins (its
log's ``Accepted password`` lines: connections shared, 10 sessions each).

``--quick``: 2 routers, 30 hosts, 1 repeat, asyncio only, for a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_routers import RouterLab, _lab_name, run_script

from nornir_bench.lab._system import password_logins_of
from nornir_bench.lab.ports import free_port_range

TASKS = {"threadpool": "send_command", "asyncio": "asend_command",
         "processpool": "asend_command"}
READY_SECONDS = 30.0
RUN_SECONDS = 600.0


@contextmanager
def bastion(folder: Path, user: str, password: str) -> Iterator[tuple[int, str, Path]]:
    """An OpenSSH jump host on 127.0.0.1 for ``user``; its port, its public key and its log,
    once it accepts ``user``'s login."""
    port = free_port_range(1)
    key = folder / "bastion_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    config = folder / "bastion_sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", *password_logins_of(user, key),
        f"PidFile {folder}/bastion.pid", "AllowTcpForwarding local", "PermitOpen 127.0.0.1:*",
        "ForceCommand /bin/false", "MaxStartups 100:30:200", "",
    ]))
    log = folder / "bastion.log"
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(config)],
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   start_new_session=True)
    try:
        public = " ".join(Path(f"{key}.pub").read_text().split()[:2])
        _wait_login(port, user, password, process)
        yield port, public, log
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _wait_login(port: int, user: str, password: str, process: subprocess.Popen[bytes]) -> None:
    import asyncssh

    async def login() -> None:
        async with asyncssh.connect("127.0.0.1", port, username=user, password=password,
                                    known_hosts=None, agent_path=None, client_keys=None):
            pass

    ends = time.monotonic() + READY_SECONDS
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the bastion's sshd ended (exit {process.returncode})")
        try:
            asyncio.run(asyncio.wait_for(login(), 5))
            return
        except Exception:  # noqa: BLE001 - not up yet
            if time.monotonic() > ends:
                raise SystemExit(
                    f"the bastion accepted no login within {READY_SECONDS:g} s") from None
            time.sleep(0.2)


def job(folder: Path, inventory: Path, runner: str) -> Path:
    path = folder / f"{inventory.name}-{runner}.yaml"
    path.write_text(json.dumps({
        "inventory": {"plugin": "SimpleInventory", "options": {
            "host_file": str(inventory / "hosts.yaml"),
            "group_file": str(inventory / "groups.yaml"),
            "defaults_file": str(inventory / "defaults.yaml")}},
        "runner": {"plugin": runner},
        "task": {"name": TASKS[runner], "params": {"command": "show version"}},
        "logging": {"enabled": False},
    }))
    return path


def timed(path: Path, records: Path) -> tuple[float, int, int]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nornir_bench", "run", str(path), "-o",
                           str(records)], capture_output=True, text=True, timeout=RUN_SECONDS)
    seconds = time.perf_counter() - began
    lines = [json.loads(line) for line in records.read_text().splitlines()] if (
        records.exists()) else []
    records.unlink(missing_ok=True)
    ok = sum(1 for r in lines if not r["failed"])
    if ok < len(lines) or done.returncode not in (0, 1):
        print(f"  ({path.name}: exit {done.returncode}; {done.stdout.strip()[-300:]})",
              flush=True)
    return seconds, ok, len(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--routers", type=int, default=5)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runners", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.routers, args.hosts, args.repeat, args.runners = 2, 30, 1, ["asyncio"]
    if os.geteuid() != 0 or shutil.which("/usr/sbin/sshd") is None:
        raise SystemExit("bench_bastion: needs root and OpenSSH's sshd "
                         "(apt-get install -y frr openssh-server)")
    with tempfile.TemporaryDirectory(prefix="bench-bastion-") as work:
        folder = Path(work)
        direct = folder / "direct"
        with RouterLab(args.routers, _lab_name(), direct, hosts=args.hosts) as lab, \
                bastion(folder, lab.user, lab.password) as (port, key, log):
            jumped = folder / "jumped"
            shutil.copytree(direct, jumped)
            known = jumped / "known_hosts"
            known.write_text(known.read_text() + f"[127.0.0.1]:{port} {key}\n")
            defaults = (jumped / "defaults.yaml").read_text().replace(
                str(direct / "known_hosts"), str(known))
            (jumped / "defaults.yaml").write_text(
                defaults.replace("data:\n", f"data:\n  jump_host: {{host: 127.0.0.1, port: "
                                 f"{port}}}\n", 1))
            print(f"\n### {args.hosts} hosts on {args.routers} routers, directly and through "
                  f"one OpenSSH bastion (127.0.0.1:{port}, MaxSessions 10)\n")
            print("| runner | task | ok direct | ok through the bastion | direct: median s | "
                  "through: median s | ratio (target <= 1.3) | bastion logins |")
            print("|---|---|---|---|---|---|---|---|")
            for runner in args.runners:
                times: dict[str, list[float]] = {"direct": [], "jumped": []}
                oks: dict[str, list[str]] = {"direct": [], "jumped": []}
                before = log.read_text(errors="replace").count("Accepted password")
                for _ in range(args.repeat):
                    for how, inventory in (("direct", direct), ("jumped", jumped)):
                        seconds, ok, total = timed(job(folder, inventory, runner),
                                                   folder / "out.jsonl")
                        times[how].append(seconds)
                        oks[how].append(f"{ok}/{total}")
                logins = log.read_text(errors="replace").count("Accepted password") - before
                a, b = statistics.median(times["direct"]), statistics.median(times["jumped"])
                verdict = "met" if b / a <= 1.3 else "MISSED"
                print(f"| {runner} | {TASKS[runner]} | {', '.join(oks['direct'])} | "
                      f"{', '.join(oks['jumped'])} | {a:.2f} | {b:.2f} | {b / a:.2f} "
                      f"({verdict}) | {logins / args.repeat:.0f} a run |", flush=True)
    return 0


if __name__ == "__main__":
    run_script(main, "the lab, the bastion and every run this script started are stopped")
