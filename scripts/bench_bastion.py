#!/usr/bin/env python3
"""A fleet behind a bastion: ``--hosts`` hosts on ``--routers`` FRR routers reached through one
OpenSSH jump host, against the same run reaching them directly.

    python scripts/bench_bastion.py [--routers 5] [--hosts 200] [--repeat 3]
                                    [--runners threadpool asyncio processpool] [--quick]
                                    [--lab NAME] [--record PATH]

As root (``apt-get install -y frr openssh-server``). A router lab of its own
(:mod:`harness.lab`; or the running lab ``--lab NAME``), an inventory of ``--hosts`` hosts
spread over its routers, with the routers' host keys, and a bastion: a second OpenSSH server on
a free loopback port, for the lab's user, that forwards only to 127.0.0.1 (``AllowTcpForwarding
local``, ``PermitOpen 127.0.0.1:*``, no shell) with OpenSSH's own ``MaxSessions`` (10); its
key added to the known hosts. Both stopped at the end, on an error and on Ctrl-C; every file in
a temporary folder.

Each runner's job (``show version``: ``send_command`` on threadpool, ``asend_command`` on the
others, the runners' default options, no host-key option: ``strict``) runs through
``nornir-bench run`` in a process of its own, directly and with ``jump_host`` in the
inventory's defaults, alternating, ``--repeat`` times each. Measured: hosts ok (target all),
the median wall time of each, and their ratio (target <= 1.3x); the bastion's logins (its
log's ``Accepted password`` lines: connections shared, 10 sessions each).

``--quick``: 2 routers, 6 hosts, 1 repeat, asyncio only, for a test.

    python scripts/bench_bastion.py --down [--hosts 6] [--timeout 5] [--repeat 3] [--quick]

``--down``: a bastion that is down but for its TCP stack (it takes the connection and never
says a word: lab.faulty_servers), ``--hosts`` hosts behind it, a login timeout of
``--timeout`` s (netmiko's ``conn_timeout``, scrapli's ``timeout``), every runner with both
drivers where it runs them (``send_command`` on netmiko, ``asend_command`` on scrapli), in
this process, each runner warmed by a run first (its pool, workers or cluster started).
Measured: the hosts that failed with ``JumpHostUnreachable`` naming the bastion (target all),
the bastion's connections a run (one per process that runs hosts), and the median run's time
against one login timeout (target <= 1.2x). No root, no lab. ``--down --quick``: 1 s, 1
repeat, threadpool and asyncio, for a test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nornir.core import Nornir

import harness
from harness.fleets import close
from harness.jobs import read_records, run_job, write_job
from harness.lab import add_lab_option, router_lab
from harness.processes import stop
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
        stop(process)


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
    return write_job(folder / f"{inventory.name}-{runner}.yaml", inventory=inventory,
                     runner=runner, task=TASKS[runner], params={"command": "show version"})


def run_once(path: Path, records: Path) -> tuple[float, int, int]:
    """``nornir-bench run`` of the job ``path``: its seconds, hosts ok and hosts in all."""
    done = run_job("run", str(path), "-o", str(records), timeout=RUN_SECONDS)
    lines = read_records(records)
    records.unlink(missing_ok=True)
    ok = sum(1 for r in lines if not r["failed"])
    if ok < len(lines) or done.status not in (0, 1):
        print(f"  ({path.name}: exit {done.status}; {done.output.strip()[-300:]})", flush=True)
    return done.seconds, ok, len(lines)


# Every runner, with the tasks of both drivers it runs (nornir's and the thread pool's run no
# async def task).
DOWN_TASKS = {
    "threadpool": ("send_command",),
    "threaded": ("send_command",),
    "asyncio": ("send_command", "asend_command"),
    "processpool": ("send_command", "asend_command"),
    "dask": ("send_command", "asend_command"),
}


def behind(folder: Path, port: int, runner: str, hosts: int, timeout: float) -> Nornir:
    """A Nornir on ``hosts`` devices behind the bastion at ``port`` (never reached)."""
    from harness.fleets import simple

    (folder / "hosts.yaml").write_text(json.dumps({
        f"h{n}": {"hostname": "127.0.0.1", "port": 22, "platform": "cisco_ios"}
        for n in range(hosts)
    }))
    (folder / "defaults.yaml").write_text(json.dumps({
        "username": "ops", "password": "not-sent",
        "data": {"host_key_checking": "off", "jump_host": {"host": "127.0.0.1", "port": port}},
        "connection_options": {"netmiko": {"extras": {"conn_timeout": timeout}}},
    }))
    return simple(folder, runner)


def bench_down(bench: harness.Bench) -> int:
    from nornir_bench.lab.faulty_servers import silent_server
    from nornir_bench.tasks import BUILTIN_TASKS, sim_rtt
    from nornir_bench.tasks.sessions.jump_hosts import JumpHostUnreachable

    args = bench.args
    runners = ["threadpool", "asyncio"] if args.quick else list(DOWN_TASKS)
    logging.getLogger().addHandler(logging.NullHandler())  # each host's traceback: not here
    with tempfile.TemporaryDirectory(prefix="bench-bastion-down-") as work, \
            silent_server() as bastion_down:
        named = f"jump host 127.0.0.1:{bastion_down.port}: no SSH banner"
        print(f"\n### {args.hosts} hosts behind a bastion that never answers, login timeout "
              f"{args.timeout:g} s, {args.repeat} runs each\n")
        print("| runner | task | hosts failed naming the bastion | bastion connections a run | "
              "median s | x login timeout (target <= 1.2) |")
        print("|---|---|---|---|---|---|")
        for runner in runners:
            nr = behind(Path(work), bastion_down.port, runner, args.hosts, args.timeout)
            try:
                nr.run(task=sim_rtt, rtt=0.0)  # its pool, workers or cluster up first
                for task in DOWN_TASKS[runner]:
                    params = {"timeout": args.timeout} if task == "asend_command" else {}
                    times, oks, before = [], [], bastion_down.accepted
                    for _ in range(args.repeat):
                        began = time.perf_counter()
                        result = nr.run(task=BUILTIN_TASKS[task], command="show clock",
                                        on_failed=True, **params)
                        times.append(time.perf_counter() - began)
                        oks.append(sum(
                            isinstance(multi[0].exception, JumpHostUnreachable)
                            and named in str(multi[0].exception) for multi in result.values()
                        ))
                    median = harness.Spread.of(times).median
                    ratio = median / args.timeout
                    connections = (bastion_down.accepted - before) / args.repeat
                    print(f"| {runner} | {task} | {', '.join(f'{ok}/{args.hosts}' for ok in oks)}"
                          f" | {connections:g} | {median:.2f} | {ratio:.2f} "
                          f"({'met' if ratio <= 1.2 else 'MISSED'}) |", flush=True)
                    bench.record({"times": times, "named": oks, "connections": connections},
                                 part="down", runner=runner, task=task, hosts=args.hosts,
                                 timeout=args.timeout)
            finally:
                nr.close_connections()
                close(nr)
    return 0


PARSER = harness.parser(__doc__)
PARSER.add_argument("--routers", type=harness.whole(), default=5)
PARSER.add_argument("--hosts", type=harness.whole(), default=None)
PARSER.add_argument("--repeat", type=harness.whole(), default=3)
PARSER.add_argument("--runners", nargs="+", choices=list(TASKS), default=list(TASKS))
PARSER.add_argument("--down", action="store_true")
PARSER.add_argument("--timeout", type=harness.number(), default=5.0)
add_lab_option(PARSER)


def main(bench: harness.Bench) -> int:
    args = bench.args
    if args.down:
        args.hosts = args.hosts or 6
        if args.quick:
            args.timeout, args.repeat = 1.0, 1
        return bench_down(bench)
    args.hosts = args.hosts or 200
    if args.quick:
        args.routers, args.hosts, args.repeat, args.runners = 2, 6, 1, ["asyncio"]
    if os.geteuid() != 0 or shutil.which("/usr/sbin/sshd") is None:
        raise SystemExit("bench_bastion: needs root and OpenSSH's sshd "
                         "(apt-get install -y frr openssh-server)")
    with tempfile.TemporaryDirectory(prefix="bench-bastion-") as work, \
            router_lab(args.routers, attach=args.lab, prefix="bb") as lab:
        folder = Path(work)
        direct = lab.write_inventory(folder / "direct", args.hosts)
        with bastion(folder, lab.user, lab.password) as (port, key, log):
            jumped = folder / "jumped"
            shutil.copytree(direct, jumped)
            known = jumped / "known_hosts"
            known.write_text(known.read_text() + f"[127.0.0.1]:{port} {key}\n")
            defaults = (jumped / "defaults.yaml").read_text().replace(
                str(direct / "known_hosts"), str(known))
            (jumped / "defaults.yaml").write_text(
                defaults.replace("data:\n", f"data:\n  jump_host: {{host: 127.0.0.1, port: "
                                 f"{port}}}\n", 1))
            print(f"\n### {args.hosts} hosts on {len(lab.ports)} routers, directly and through "
                  f"one OpenSSH bastion (127.0.0.1:{port}, MaxSessions 10)\n")
            print("| runner | task | ok direct | ok through the bastion | direct: median s | "
                  "through: median s | ratio (target <= 1.3) | bastion logins |")
            print("|---|---|---|---|---|---|---|---|")
            for runner in args.runners:
                oks: dict[str, list[str]] = {"direct": [], "jumped": []}
                before = log.read_text(errors="replace").count("Accepted password")

                def one(how: str, inventory: Path, runner: str = runner,
                        oks: dict[str, list[str]] = oks) -> float:
                    seconds, ok, total = run_once(job(folder, inventory, runner),
                                               folder / "out.jsonl")
                    oks[how].append(f"{ok}/{total}")
                    return seconds

                times = harness.alternate({"direct": lambda: one("direct", direct),
                                           "jumped": lambda: one("jumped", jumped)}, args.repeat)
                logins = log.read_text(errors="replace").count("Accepted password") - before
                a, b = (harness.Spread.of(times[how]).median for how in ("direct", "jumped"))
                verdict = "met" if b / a <= 1.3 else "MISSED"
                print(f"| {runner} | {TASKS[runner]} | {', '.join(oks['direct'])} | "
                      f"{', '.join(oks['jumped'])} | {a:.2f} | {b:.2f} | {b / a:.2f} "
                      f"({verdict}) | {logins / args.repeat:.0f} a run |", flush=True)
                bench.record({**times, "oks": oks, "bastion_logins": logins}, runner=runner,
                             hosts=args.hosts, routers=len(lab.ports))
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the lab, the bastion and every run this "
                       "script started are stopped")
