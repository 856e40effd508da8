"""Real routers for the lab: FRR in network namespaces, behind one OpenSSH server on loopback.

``nornir-bench lab --routers N`` (:func:`run_router_lab`) makes, for a plan of
:mod:`~nornir_bench.lab.topology`:

- one network namespace per router, running FRR's ``zebra``, ``staticd`` and ``bgpd`` with a
  pathspace of its own (``-N``), linked to its neighbours by veth pairs, eBGP over each link;
- one login user with a generated password (written to the inventory only) in groups
  ``frr`` and ``frrvty``: its ``vtysh`` can ``write memory`` (each router's FRR folder is
  group ``frr``'s to write);
- one ``sshd`` on 127.0.0.1 with a port per router, whose login lands in that router's
  ``vtysh`` (prompt ``rK#``): OpenSSH as it ships, its login throttling (``MaxStartups``)
  included;
- a guard process that removes it all if the lab process dies without doing so.

The lab is ready (:meth:`RouterLab.wait_ready`) once every router accepts a login and every
BGP session is established.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import (
    FRR_DAEMONS,
    FRR_ETC,
    FRR_RUN,
    LabState,
    check_router_lab_needs,
    command,
    lab_states,
    labs_locked,
    namespaces_named,
    owner_alive,
    password_logins_of,
    process_started,
    read_state,
    teardown,
)
from nornir_bench.lab.bastion import Bastion
from nornir_bench.lab.devices import LabDevice, write_inventory
from nornir_bench.lab.ports import free_port_range, listening_ports, port_free, port_holder
from nornir_bench.lab.ready import LabNotReady
from nornir_bench.lab.topology import DEFAULT_LAB_NAME, LabPlan, plan_lab

__all__ = [
    "DEFAULT_ROUTER_PORT",
    "RouterLab",
    "RouterNotReady",
    "router_hosts",
    "run_router_lab",
    "wait_for_named_lab",
    "wait_for_router_lab",
]

DEFAULT_ROUTER_PORT = 2201
PLATFORM = "cisco_ios"
"""The inventory's platform: netmiko's ``cisco_ios`` and scrapli's IOS-XE driver both drive
vtysh's Cisco-like CLI."""

_FRR_BIN = Path("/usr/lib/frr")
_LOGIN_TIMEOUT = 10.0
_POLL = 0.2


_MAX_STARTUPS = re.compile(r"(?P<start>[0-9]{1,6})(?::(?P<rate>[0-9]{1,3}):(?P<full>[0-9]{1,6}))?")


_SHOW_RUN = "show running-config"
_COMMAND_TIMEOUT = 30.0


class RouterNotReady(LabNotReady):
    """Some router did not accept a login, or a BGP session did not come up, in time."""


def host_key_of(workdir: str) -> str:
    """The SSH host key of the lab whose work folder is ``workdir`` (its state file's
    ``workdir``), as OpenSSH writes a public key: its routers' known-hosts entry."""
    public = Path(workdir) / "ssh_host_ed25519_key.pub"
    return " ".join(public.read_text(encoding="utf-8").split()[:2])


class RouterLab:
    """One router lab: :meth:`start` makes it, :meth:`stop` removes it (also as a context
    manager, and through its guard if this process dies first).

    Args:
        plan: the routers and links (:func:`~nornir_bench.lab.topology.plan_lab`).
        max_startups: sshd's ``MaxStartups``; ``None`` keeps OpenSSH's default (10:30:100).
    """

    def __init__(self, plan: LabPlan, *, max_startups: str | None = None) -> None:
        self.plan = plan
        self.max_startups = check_max_startups(max_startups)
        self.password = secrets.token_urlsafe(18)
        self.state: LabState | None = None
        self._sshd: subprocess.Popen[bytes] | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        self.bastion: Bastion | None = None
        self.made = False
        """Whether :meth:`start` got past its refusals to making the lab."""

    @property
    def user(self) -> str:
        return self.plan.user

    def devices(self) -> list[LabDevice]:
        """A device per router, as an inventory reaches it."""
        key = "" if self.state is None else host_key_of(self.state.workdir)
        return [
            LabDevice(r.name, "127.0.0.1", r.port, PLATFORM, self.user, self.password, key)
            for r in self.plan.routers
        ]

    def __enter__(self) -> RouterLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Make the lab; on any error part-way, remove what was made and raise.

        Raises:
            LabError: what the lab needs and lacks, a lab of that name already running, a
                port in use (naming what holds it), or the system command that failed.
        """
        check_router_lab_needs()
        with labs_locked():  # taking turns with a killed lab's guard: it never removes this one
            _remove_stale(self.plan)
            _refuse_held_ports(self.plan)
            self.made = True
            workdir = tempfile.mkdtemp(prefix=f"nornir-bench-lab-{self.plan.name}-")
            self.state = LabState(
                name=self.plan.name,
                owner=os.getpid(),
                namespaces=[r.namespace for r in self.plan.routers]
                + ([self.plan.management] if self.plan.management else []),
                user=self.user,
                password=self.password,
                workdir=workdir,
                ports={r.name: r.port for r in self.plan.routers},
                topology=self.plan.topology,
                owner_started=process_started(os.getpid()),
                bastion_port=self.plan.bastion_port,
            )
            self.state.save()  # before anything is made: whatever follows can be removed
        try:
            self._guard = _start_guard(self.state)
            self._make_user()
            self._make_namespaces()
            self._start_routers()
            self._start_sshd()
            if self.plan.management is not None:
                self.bastion = Bastion(self.plan.management, self.plan.bastion_port or 0,
                                       self.user, workdir)
                self.bastion.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove everything the lab made (what is gone already is skipped)."""
        if self.state is None:
            return
        if self.bastion is not None:
            self.bastion.stop()
            self.bastion = None
        if self._sshd is not None:
            self._sshd.terminate()
        teardown(self.state)
        for process in (self._sshd, self._guard):
            if process is not None:
                _reap(process)
        self._sshd = self._guard = None
        self.state = None

    def _make_user(self) -> None:
        assert self.state is not None
        if _user_exists(self.user):
            raise LabError(f"user {self.user} exists already and is not the lab's: remove it")
        self.state.user_made = True
        self.state.save()
        # Group frr first: a configuration its vtysh saves is a new file of the user's, which
        # FRR's daemons (user frr) must be able to read.
        command(
            "useradd", "--system", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh",
            "--gid", "frr", "--groups", "frrvty", "--comment",
            f"nornir-bench lab {self.plan.name}", self.user,
        )
        command("chpasswd", stdin=f"{self.user}:{self.password}\n")

    def _make_namespaces(self) -> None:
        plan = self.plan
        if plan.management is not None:  # the routers' SSH server's, behind the bastion
            command("ip", "netns", "add", plan.management)
            command("ip", "-n", plan.management, "link", "set", "lo", "up")
        for router in plan.routers:
            command("ip", "netns", "add", router.namespace)
            command("ip", "-n", router.namespace, "link", "set", "lo", "up")
            command(
                "ip", "-n", router.namespace, "addr", "add", f"{router.router_id}/32", "dev", "lo"
            )
        for link in plan.links:
            a, b = plan.routers[link.a], plan.routers[link.b]
            a_end, b_end = plan.interface(link, link.a), plan.interface(link, link.b)
            command(
                "ip", "link", "add", a_end, "netns", a.namespace, "type", "veth",
                "peer", "name", b_end, "netns", b.namespace,
            )
            for router, end, address in ((a, a_end, link.a_address), (b, b_end, link.b_address)):
                command(
                    "ip", "-n", router.namespace, "addr", "add", f"{address}/{link.prefix}",
                    "dev", end,
                )
                command("ip", "-n", router.namespace, "link", "set", end, "up")

    def _start_routers(self) -> None:
        plan = self.plan
        for index, router in enumerate(plan.routers):
            etc, run = FRR_ETC / router.namespace, FRR_RUN / router.namespace
            for folder in (etc, run):
                folder.mkdir(parents=True, exist_ok=True)
                shutil.chown(folder, "frr", "frr")
            # vtysh's ``write memory`` (as the login user, of group frr) renames frr.conf to
            # frr.conf.sav and writes a new one: the folder is the group's to write.
            etc.chmod(0o770)
            _write(etc / "frr.conf", plan.frr_config(index), "frr", "frr")
            # vtysh runs as the login user (groups frr, for /etc/frr, and frrvty)
            _write(etc / "vtysh.conf", plan.vtysh_config(index), "frr", "frrvty")
        started = []
        assert self.state is not None
        logs = Path(self.state.workdir)
        for daemon in FRR_DAEMONS:  # zebra first: the others connect to it
            for router in plan.routers:
                etc, run = FRR_ETC / router.namespace, FRR_RUN / router.namespace
                with open(logs / f"{router.name}-{daemon}.log", "wb") as log:
                    started.append(subprocess.Popen(
                        [
                            "ip", "netns", "exec", router.namespace,
                            str(_FRR_BIN / daemon), "-d", "-N", router.namespace,
                            "-f", str(etc / "frr.conf"), "-i", str(run / f"{daemon}.pid"),
                            "-P", "0",  # no TCP vty: vtysh talks over the Unix sockets
                        ],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    ))
            for process in started:  # each returns once its daemon has forked off
                if process.wait(30) != 0:
                    raise LabError(
                        f"FRR's {daemon} did not start (exit {process.returncode}); its log: "
                        f"{logs}"
                    )
            started.clear()

    def _start_sshd(self) -> None:
        assert self.state is not None
        work = Path(self.state.workdir)
        key = work / "ssh_host_ed25519_key"
        command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        config = work / "sshd_config"
        config.write_text(self._sshd_config(key), encoding="utf-8")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # OpenSSH's privilege separation
        inside = [] if self.plan.management is None else [
            "ip", "netns", "exec", self.plan.management]
        with open(work / "sshd.log", "wb") as log:
            self._sshd = subprocess.Popen(
                [*inside, "/usr/sbin/sshd", "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )
        self.state.sshd_pid = self._sshd.pid
        self.state.save()
        ends = time.monotonic() + _LOGIN_TIMEOUT
        ports = {r.port for r in self.plan.routers}
        while not ports <= listening_ports(self._sshd.pid):  # its own, not another's
            if self._sshd.poll() is not None or time.monotonic() > ends:
                _refuse_held_ports(self.plan, self._sshd.pid)  # taken since they were checked
                said = (work / "sshd.log").read_text(errors="replace").strip().splitlines()
                raise LabError(
                    "the lab's SSH server did not start: "
                    + (said[-1] if said else f"exit {self._sshd.returncode}")
                )
            time.sleep(0.02)

    def _sshd_config(self, key: Path) -> str:
        assert self.state is not None
        lines = [f"Port {r.port}" for r in self.plan.routers]
        lines += [
            "ListenAddress 127.0.0.1",
            *password_logins_of(self.user, key),
            f"PidFile {self.state.workdir}/sshd.pid",
            "PrintMotd no",
            "PrintLastLog no",
            "AllowTcpForwarding no",
        ]
        if self.max_startups is not None:
            lines.append(f"MaxStartups {self.max_startups}")
        for router in self.plan.routers:
            lines += [
                f"Match LocalPort {router.port}",
                f"    ForceCommand /usr/bin/vtysh -N {router.namespace}",
            ]
        return "\n".join(lines) + "\n"

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every router accepts a login and all its BGP sessions are up.

        Raises:
            RouterNotReady: naming what was still not ready at ``timeout``.
        """
        wait_for_router_lab(self.plan, self.password, timeout)


def wait_for_named_lab(name: str, timeout: float = 60.0) -> LabPlan:
    """``nornir-bench wait-lab --routers``: wait for the lab named ``name``, started by another
    process (its state file appears as it starts), to be ready; its plan.

    The state is read again at each look: the state a killed lab left (its process gone) is
    not this lab's, and a lab started again under the name has another password.

    Raises:
        RouterNotReady: no such lab, or not ready, at ``timeout``.
    """
    check_router_lab_needs()

    def running() -> tuple[LabPlan, str] | None:
        state = read_state(name)
        if state is None or state.sshd_pid is None or not owner_alive(state):
            return None
        plan = plan_lab(
            len(state.ports), topology=state.topology, port=min(state.ports.values()), name=name,
            bastion_port=state.bastion_port,
        )
        return plan, state.password

    return _wait_ready(
        running, timeout, f"no router lab named {name!r} started within {timeout:g} s"
    )


def wait_for_router_lab(plan: LabPlan, password: str, timeout: float = 60.0) -> None:
    """Return once every router of ``plan`` accepts a login (as ``password``) and every BGP
    session is established; :class:`RouterNotReady` saying what was not at ``timeout``."""
    _wait_ready(lambda: (plan, password), timeout, "")


def _wait_ready(
    running: Callable[[], tuple[LabPlan, str] | None], timeout: float, absent: str
) -> LabPlan:
    """Wait for the lab ``running()`` gives at each look (its plan and password; ``None``
    while none runs, :class:`RouterNotReady` saying ``absent`` at ``timeout``); a lab given
    anew (started again under its name) is waited for from the start."""
    deadline = time.monotonic() + timeout
    lab: tuple[LabPlan, str] | None = None
    waiting_bgp: list[int] = []
    waiting_login: list[int] = []
    problem = ""
    while True:
        found = running()
        if found is not None and found != lab:
            lab = found
            waiting_bgp = list(range(len(lab[0].routers)))
            waiting_login = list(range(len(lab[0].routers)))
        if found is not None:
            plan, password = found
            waiting_bgp = [k for k in waiting_bgp if not _bgp_established(plan, k)]
            if waiting_login:
                failures = asyncio.run(_logins(plan, password, waiting_login))
                waiting_login = [k for k in waiting_login if k in failures]
                if failures:
                    problem = next(iter(failures.values()))
            if not waiting_bgp and not waiting_login:
                return plan
        if time.monotonic() >= deadline:
            if found is None:
                raise RouterNotReady(absent)
            names = ", ".join(plan.routers[k].name for k in sorted({*waiting_bgp, *waiting_login}))
            what = []
            if waiting_login:
                what.append(f"no login ({problem})")
            if waiting_bgp:
                what.append("BGP sessions not all established")
            raise RouterNotReady(f"router lab not ready after {timeout:g} s: {names}: "
                                 + "; ".join(what))
        time.sleep(_POLL)


def _bgp_established(plan: LabPlan, index: int) -> bool:
    expected = {address for _, address in plan.neighbours(index)}
    if not expected:
        return True
    done = subprocess.run(
        ["vtysh", "-N", plan.routers[index].namespace, "-c", "show bgp ipv4 unicast summary json"],
        capture_output=True, text=True, timeout=10, check=False,
    )
    try:
        peers = json.loads(done.stdout).get("peers", {})
    except ValueError:
        return False
    up = {address for address, peer in peers.items() if peer.get("state") == "Established"}
    return expected <= up


async def _logins(plan: LabPlan, password: str, indexes: list[int]) -> dict[int, str]:
    """Log in to each router in ``indexes``; what went wrong, for those that failed."""
    results = await asyncio.gather(*(_login(plan, password, k) for k in indexes))
    return {k: problem for k, problem in zip(indexes, results, strict=True) if problem}


async def _login(plan: LabPlan, password: str, index: int) -> str:
    import asyncssh

    router = plan.routers[index]
    prompt = re.compile(rf"^{re.escape(router.name)}[#>]\s*$", re.M)

    async def login() -> str:
        tunnel = None
        if plan.bastion_port is not None:  # the only way in
            tunnel = await asyncssh.connect(
                "127.0.0.1", plan.bastion_port, username=plan.user, password=password,
                known_hosts=None, client_keys=None, agent_path=None,
            )
        try:
            async with asyncssh.connect(
                "127.0.0.1", router.port, username=plan.user, password=password,
                known_hosts=None, client_keys=None, tunnel=tunnel or (),
            ) as conn:
                process = await conn.create_process(term_type="vt100")
                seen = ""
                while not prompt.search(seen):
                    chunk = await process.stdout.read(4096)
                    if not chunk:
                        return f"the session of {router.name} ended before its prompt"
                    seen += chunk
                process.close()
            return ""
        finally:
            if tunnel is not None:
                tunnel.close()

    try:
        return await asyncio.wait_for(login(), _LOGIN_TIMEOUT)
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def vtysh(name: str, router: str, command: str) -> str:
    """``command`` on router ``router`` (``r1`` ...) of lab ``name``, run as root through its
    vtysh (not through SSH): what it printed."""
    done = subprocess.run(
        ["vtysh", "-N", f"nb-{name}-{router}", "-c", command],
        capture_output=True, text=True, timeout=_COMMAND_TIMEOUT, check=False,
    )
    return done.stdout + done.stderr


def restore_config(name: str, router: str, before: str) -> bool:
    """Put ``router`` of lab ``name`` back to the running configuration ``before`` (as root:
    the lines that undo what changed since, through vtysh); whether it now is."""
    from nornir_bench.tasks.config_text import parse_config, remediation, same
    from nornir_bench.tasks.dialects import FRRDriver

    driver = FRRDriver()
    wanted = parse_config(before, driver)
    undo = remediation(parse_config(vtysh(name, router, _SHOW_RUN), driver), wanted)
    if undo:
        args = ["vtysh", "-N", f"nb-{name}-{router}", "-c", "configure terminal"]
        for line in undo:
            args += ["-c", line.strip()]  # one command each: vtysh keeps the section entered
        subprocess.run(args, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT,
                       check=False)
    return same(parse_config(vtysh(name, router, _SHOW_RUN), driver), wanted)


def router_hosts(devices: list[LabDevice], count: int) -> list[LabDevice]:
    """``count`` inventory hosts spread over the routers' ports in turn (``h001`` on r1,
    ``h002`` on r2 ...): many hosts behind one SSH server, as in a fleet behind one jump
    host, or a benchmark of logins."""
    width = len(str(count))
    return [
        dataclasses.replace(d, name=f"h{k + 1:0{width}d}")
        for k in range(count)
        for d in [devices[k % len(devices)]]
    ]


def run_router_lab(
    routers: int,
    *,
    topology: str = "chain",
    port: int | None = None,
    name: str | None = None,
    write: str | os.PathLike[str] | None = None,
    hosts: int | None = None,
    max_startups: str | None = None,
    bastion: bool = False,
    timeout: float = 60.0,
    out: TextIO | None = None,
) -> None:
    """``nornir-bench lab --routers N``: make the lab, print a line per router and then
    ``lab ready:`` once it is, and remove it all at SIGINT or SIGTERM (or an error). With
    ``bastion``, the routers are reached only through a bastion on 127.0.0.1
    (:mod:`~nornir_bench.lab.bastion`), which the inventory names."""
    plan = plan_lab(
        routers, topology=topology, port=DEFAULT_ROUTER_PORT if port is None else port,
        name=DEFAULT_LAB_NAME if name is None else name,
        bastion_port=free_port_range(1) if bastion else None,
    )
    if hosts is not None and not 1 <= hosts <= 100_000:
        raise LabError(f"--hosts must be a whole number from 1 to 100000, got {hosts!r}")
    check_max_startups(max_startups)

    def say(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    with _signals_interrupt():
        lab = RouterLab(plan, max_startups=max_startups)
        try:
            started = time.monotonic()
            lab.start()
            if lab.bastion is not None:
                say(f"bastion 127.0.0.1:{lab.bastion.port}: the only way in to the routers, whose "
                    f"SSH server listens on 127.0.0.1 in netns {plan.management}")
            for router in plan.routers:
                peers = ", ".join(p.name for p, _ in plan.neighbours(plan.routers.index(router)))
                say(f"{router.name:<4} 127.0.0.1:{router.port:<5}  AS {router.asn}  "
                    f"netns {router.namespace}  peers {peers or '-'}")
            if write is not None:
                devices = lab.devices()
                jump = None if lab.bastion is None else lab.bastion.jump_host(lab.password)
                files = write_inventory(
                    devices if hosts is None else router_hosts(devices, hosts), write, jump,
                    "" if lab.bastion is None else lab.bastion.known_hosts_line(),
                    config_platform="frr",
                )
                say(f"inventory written: {', '.join(os.fspath(f) for f in files)}")
            lab.wait_ready(timeout)
            say(f"lab ready: {len(plan.routers)} FRR routers ({plan.topology}) accept logins, "
                f"BGP established, in {time.monotonic() - started:.1f} s; Ctrl-C or SIGTERM "
                "removes them")
            while True:
                signal.pause()
        except _Interrupted:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: the guard finishes
            ended = time.monotonic()
            lab.stop()
            if lab.made:  # a refusal (a name running, a port held) made nothing to remove
                say(f"lab stopped: everything removed in {time.monotonic() - ended:.1f} s")


class _Interrupted(BaseException):
    """SIGINT or SIGTERM reached the lab: it stops."""


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    def interrupt(signum: int, frame: object) -> None:
        raise _Interrupted

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def check_max_startups(spec: str | None) -> str | None:
    """``spec`` if it is a ``MaxStartups`` OpenSSH takes (``N``, or ``START:RATE:FULL``, rate
    a percentage), else a LabError: it goes into the SSH server's configuration as it is."""
    found = None if spec is None else _MAX_STARTUPS.fullmatch(spec)
    if spec is not None and (
        found is None
        or int(found["start"]) < 1
        or (found["rate"] is not None and not (
            int(found["rate"]) <= 100 and int(found["start"]) <= int(found["full"])
        ))
    ):
        raise LabError(
            "--max-startups must be N or START:RATE:FULL (whole numbers, START at least 1 and "
            f"at most FULL, RATE a percentage), as OpenSSH's MaxStartups, got {spec!r}"
        )
    return spec


def _remove_stale(plan: LabPlan) -> None:
    """A lab of the same name whose process is gone is removed; one still running is an error.
    Namespaces of the name that no state records (a start killed early) go too."""
    state = read_state(plan.name)
    if state is not None:
        if state.owner != os.getpid() and owner_alive(state):
            raise LabError(
                f"a router lab named {plan.name!r} is running (process {state.owner}): stop it, "
                "or give this one another --name"
            )
        teardown(state)
    stale = namespaces_named(f"nb-{plan.name}-")
    if stale:
        teardown(LabState(plan.name, 0, stale, plan.user, "", "", {}, user_made=False))
    if _user_exists(plan.user) and read_state(plan.name) is None:
        # made by a lab killed before it recorded anything more: its name is the lab's own
        subprocess.run(["userdel", plan.user], capture_output=True, check=False)


def _refuse_held_ports(plan: LabPlan, ours: int | None = None) -> None:
    """A LabError naming the first of the lab's ports that another process (not ``ours``)
    listens on, and that process: another lab's SSH server is named by its lab. Behind a
    bastion, the routers' ports are in the lab's own namespace: only the bastion's counts."""
    wanted = [(r.port, f"router {r.name}") for r in plan.routers]
    if plan.bastion_port is not None:
        wanted = [(plan.bastion_port, "the bastion")]
    for port, what in wanted:
        holder = port_holder(port)
        if (holder is not None and holder == ours) or (holder is None and port_free(port)):
            continue
        lab = next((s for s in lab_states() if holder and s.sshd_pid == holder), None)
        if lab is not None:
            who = f"router lab {lab.name!r} (process {lab.owner})"
        elif holder is not None:
            who = f"process {holder} ({_program(holder)})"
        else:
            who = "a process this one cannot see"
        raise LabError(
            f"port {port} ({what}) is held by {who}: stop it, or give this lab free ports "
            "(--port)"
        )


def _program(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        return "gone"


def _start_guard(state: LabState) -> subprocess.Popen[bytes]:
    """The process that removes the lab if this one dies without doing so: it waits for its
    standard input (a pipe only this process holds) to close."""
    return subprocess.Popen(
        [sys.executable, "-m", "nornir_bench.lab._guard", state.name, str(state.owner)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C in the terminal is the lab's to handle, not its
    )


def _reap(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _user_exists(user: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def _write(path: Path, text: str, user: str, group: str) -> None:
    path.write_text(text, encoding="utf-8")
    shutil.chown(path, user, group)
    path.chmod(0o640)


