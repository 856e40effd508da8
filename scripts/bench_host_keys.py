#!/usr/bin/env python3
"""SSH host keys checked before the password: impostors, accept-new at scale, and the cost.

    python scripts/bench_host_keys.py [--records 10000] [--processes 4] [--threads 8]
                                      [--logins 40] [--repeat 3] [--quick] [--record PATH]

**impostors**: an SSH server on 127.0.0.1 (asyncssh) with a key of its own, which records every
password offered to it, is logged in to by 3 hosts on every runner and driver (threadpool /
``send_command``, asyncio / ``asend_command``, processpool with both, dask / ``asend_command``
on an embedded cluster), under ``strict`` with nothing known, ``strict`` with another key known,
and ``accept-new`` with another key known. Measured: the passwords it received (target 0 in
every case) and what each host failed with.

**accept-new at scale**: ``--records`` new hosts' keys checked at once, as their logins check
them (``check_key`` under ``accept-new``: looked up, then recorded), into one known-hosts file by
``--processes`` processes of ``--threads`` threads each (every host offered by two processes, as
when a fleet's hosts are spread over workers that race). Measured: the lines
written, valid and distinct (target: ``--records``, 0 duplicates, 0 torn) and the time.

**cost**: ``--logins`` logins (up to the refused password) to that server, ``strict`` with its
key known against ``off``, each driver, alternating, ``--repeat`` each, medians: the check's
cost per login.

``--quick``: 600 records, 2 processes of 4 threads, 10 logins, 1 repeat, no dask, for a test.
Everything it writes is in a temporary folder removed at the end; it talks to loopback only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from nornir.core import Nornir

import harness
from harness.entry import quiet_warnings
from harness.fleets import close, simple

quiet_warnings()  # before asyncssh's import, which warns of cryptography's DSA
import asyncssh  # noqa: E402

PASSWORD = "bench-host-keys-password"
WAIT = 60.0


class Impostor:
    """An SSH server on 127.0.0.1 refusing every login and keeping every password offered."""

    def __init__(self) -> None:
        self.key = asyncssh.generate_private_key("ssh-ed25519")
        self.passwords: list[str] = []
        self.port = 0

    def line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.export_public_key().decode().strip()}\n"


@contextmanager
def impostor() -> Iterator[Impostor]:
    server = Impostor()
    loop = asyncio.new_event_loop()
    connections: list[asyncssh.SSHServerConnection] = []
    listening: dict[str, Any] = {}

    class Recording(asyncssh.SSHServer):
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            connections.append(conn)

        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            server.passwords.append(password)
            return False

    async def serve() -> None:
        listener = await asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[server.key], server_factory=Recording
        )
        listening["it"] = listener
        server.port = listener.sockets[0].getsockname()[1]

    async def stop() -> None:
        listening["it"].close()
        await listening["it"].wait_closed()
        for conn in connections:
            conn.close()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(WAIT)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()


def nornir_at(server: Impostor, folder: Path, runner: str, hosts: int, **data: Any) -> Nornir:
    options: dict[str, Any] = {"num_workers": 10}
    if runner == "processpool":
        options["num_procs"] = 2
    (folder / "hosts.yaml").write_text(json.dumps({
        f"h{n}": {"hostname": "127.0.0.1", "port": server.port, "platform": "cisco_ios"}
        for n in range(hosts)
    }))
    (folder / "defaults.yaml").write_text(
        json.dumps({"username": "admin", "password": PASSWORD, "data": data})
    )
    return simple(folder, runner, **options)


def run(server: Impostor, folder: Path, runner: str, task: Callable[..., Any], hosts: int,
        **data: Any) -> dict[str, BaseException | None]:
    nr = nornir_at(server, folder, runner, hosts, **data)
    try:
        result = nr.run(task=task, command="show clock")
    finally:
        close(nr)
    return {name: multi[0].exception for name, multi in result.items()}


def impostors_part(bench: harness.Bench, folder: Path, quick: bool) -> None:
    from nornir_bench.tasks import asend_command, send_command

    print("\n### Impostors: 3 hosts at an SSH server recording every password offered\n")
    print("| runner | task | host_key_checking | known hosts | passwords received "
          "(target 0) | hosts failed with |")
    print("|---|---|---|---|---|---|")
    combinations: list[tuple[str, Callable[..., Any]]] = [
        ("threadpool", send_command), ("asyncio", asend_command),
        ("processpool", send_command), ("processpool", asend_command)]
    if not quick:
        combinations.append(("dask", asend_command))
    genuine = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    for runner, task in combinations:
        for checking, known in (("strict", "none"), ("strict", "another key"),
                                ("accept-new", "another key")):
            with impostor() as server:
                path = folder / "known_hosts"
                path.write_text("" if known == "none" else f"[127.0.0.1]:{server.port} {genuine}\n")
                errors = run(server, folder, runner, task, 3, known_hosts=str(path),
                             host_key_checking=checking)
            kinds = sorted({type(exc).__name__ for exc in errors.values()})
            print(f"| {runner} | {task.__name__} | {checking} | {known} | "
                  f"{len(server.passwords)} | {', '.join(kinds)} |", flush=True)
            bench.record({"passwords": len(server.passwords), "failed_with": kinds},
                         part="impostors", runner=runner, task=task.__name__,
                         host_key_checking=checking, known=known)


def _record_part(args: tuple[str, list[str], int, int, int]) -> None:
    from nornir_bench.tasks.sessions.host_keys import Trust, check_key

    path, keys, records, seed, threads = args
    trust = Trust("accept-new", (path,), path)
    order = list(range(records))
    order = order[seed * records // 7:] + order[:seed * records // 7]

    def work(part: list[int]) -> None:
        for n in part:
            key = asyncssh.import_public_key(keys[n % len(keys)])
            host = f"10.{n // 62500}.{n // 250 % 250}.{n % 250}"
            check_key(trust, host, host, 2200 + n % 1000, key)  # as each login checks it

    workers = [threading.Thread(target=work, args=(order[i::threads],)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def records_part(bench: harness.Bench, folder: Path, records: int, processes: int,
                 threads: int) -> None:
    print(f"\n### accept-new at scale: {records:,} new hosts recorded at once by {processes} "
          f"processes x {threads} threads\n")
    path = folder / "scale_known_hosts"
    keys = [asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
            for _ in range(8)]
    context = multiprocessing.get_context("fork")
    # Each host offered by two processes: the second must find it recorded, not write it again.
    jobs = [(str(path), keys, records, seed % max(1, processes // 2), threads)
            for seed in range(processes)]
    began = time.perf_counter()
    with context.Pool(processes) as pool:
        pool.map(_record_part, jobs)
    seconds = time.perf_counter() - began
    lines = path.read_text().splitlines()
    valid = 0
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[1] == "ssh-ed25519":
            try:
                asyncssh.import_public_key(f"{parts[1]} {parts[2]}")
            except (asyncssh.KeyImportError, ValueError):
                continue
            valid += 1
    names = [line.split()[0] for line in lines if line.split()]
    print("| lines written | valid | distinct hosts | duplicates | target | time |")
    print("|---|---|---|---|---|---|")
    duplicates = len(names) - len(set(names))
    whole = len(lines) == valid == len(set(names)) == records
    met = "met" if whole and not duplicates else "MISSED"
    print(f"| {len(lines):,} | {valid:,} | {len(set(names)):,} | {duplicates} | "
          f"{records:,} lines, 0 duplicates ({met}) | {seconds:.2f} s |", flush=True)
    bench.record({"lines": len(lines), "valid": valid, "distinct": len(set(names)),
                  "duplicates": duplicates, "seconds": seconds}, part="accept-new",
                 records=records, processes=processes, threads=threads)


def cost_part(bench: harness.Bench, folder: Path, logins: int, repeat: int) -> None:
    from nornir_bench.tasks import asend_command, send_command

    print(f"\n### Cost: {logins} logins to the refused password, strict (key known) vs off\n")
    print("| driver | runner | off: median s | strict: median s | per login: ms |")
    print("|---|---|---|---|---|")
    for runner, task in (("threadpool", send_command), ("asyncio", asend_command)):
        with impostor() as server:
            path = folder / "cost_known_hosts"
            path.write_text(server.line())
            times = harness.alternate(
                {checking: partial(harness.timed, run, server, folder, runner, task, logins,
                                   known_hosts=str(path), host_key_checking=checking)
                 for checking in ("off", "strict")}, repeat)
        off, strict = (harness.Spread.of(t for _, t in times[checking]).median
                       for checking in ("off", "strict"))
        print(f"| {task.__name__} | {runner} | {off:.3f} | {strict:.3f} | "
              f"{(strict - off) / logins * 1000:+.2f} |", flush=True)
        bench.record({"off": [t for _, t in times["off"]],
                      "strict": [t for _, t in times["strict"]]}, part="cost", runner=runner,
                     task=task.__name__, logins=logins)


PARSER = harness.parser(__doc__)
PARSER.add_argument("--records", type=harness.whole(), default=10_000)
PARSER.add_argument("--processes", type=harness.whole(), default=4)
PARSER.add_argument("--threads", type=harness.whole(), default=8)
PARSER.add_argument("--logins", type=harness.whole(), default=40)
PARSER.add_argument("--repeat", type=harness.whole(), default=3)


def main(bench: harness.Bench) -> int:
    args = bench.args
    # Every host here fails on purpose: nornir's traceback per host is not a figure.
    logging.getLogger("nornir").addHandler(logging.NullHandler())
    if args.quick:
        args.records, args.processes, args.threads, args.logins, args.repeat = 600, 2, 4, 10, 1
    with tempfile.TemporaryDirectory(prefix="nornir-bench-host-keys-") as work:
        folder = Path(work)
        impostors_part(bench, folder, args.quick)
        records_part(bench, folder, args.records, args.processes, args.threads)
        cost_part(bench, folder, args.logins, args.repeat)
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER)
