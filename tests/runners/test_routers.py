"""The device tasks on real routers, on every runner: FRR's vtysh behind OpenSSH (``frr_lab``:
r1 - r2 - r3, inventory hosts h1 on r1, h2 on r2, h3 on r3), as root.

What only real devices show: a real SSH server's logins counted in its own log, sessions the
device ends (its CLI process killed), a CLI that stops answering mid-session (SIGSTOP), and
``nornir-bench run`` against them. nornir's ``threaded`` runner is the reference where it has
the behaviour (tests/runners/test_conformance.py says where it lacks one).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import AggregatedResult

from nornir_bench import LoginRefused, TaskTimeout
from nornir_bench.bench.summary import summarize
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.liveness import bytes_waiting
from nornir_bench.lab import RunningRouterLab
from nornir_bench.tasks import asend_command, send_command
from nornir_bench.tasks.sessions.scrapli_session import CONNECTION_NAME, ScrapliSession
from tests.router_faults import cli_killed_mid_command, interrupted_when, send_signal_to
from tests.routers import lab_pids, wait_for
from tests.runners.test_conformance import ASYNC, POLICIES, STALE, Runner, each_runner
from tests.tasks.sessions.test_scrapli_session import opened

RUNNER_IDS = ("threaded", "threadpool", "asyncio", "processpool", "dask")
COMMAND = "show ip bgp summary"


def commands(runner: Runner) -> list[tuple[str, tuple[Any]]]:
    """send_command on every runner; asend_command too on those that await async tasks."""
    tasks: list[Any] = [send_command, *([asend_command] if ASYNC in runner.kinds else [])]
    return [(task.__name__, (task,)) for task in tasks]


def runners(*behaviours: str, cases: Any = commands, only: Iterable[str] = RUNNER_IDS) -> list[Any]:
    """The runners of ``RUNNER_IDS`` (``only``) as the conformance suite gives them (the dask
    runner on the session's shared cluster), skipped where they lack one of ``behaviours``."""
    return [p for p in each_runner(*behaviours, cases=cases) if p.values[0].id in only]


def failures(result: AggregatedResult) -> dict[str, str]:
    return {host: repr(multi.exception) for host, multi in result.failed_hosts.items()}


def assert_each_host_answered(lab: RunningRouterLab, result: AggregatedResult) -> None:
    """Every inventory host ran the command on its own router (the AS number says which)."""
    assert not result.failed, failures(result)
    hosts = lab.hosts()
    assert sorted(result) == sorted(hosts)
    for host, multi in result.items():
        assert f"local AS number {lab.asn(hosts[host])}" in multi.result, (host, multi.result)


def closed(nr: Any, lab: RunningRouterLab, sessions_before: set[int]) -> None:
    """Close the run's connections, failed hosts' too (nornir's default skips those), and the
    runner; check that every session it opened on the lab has ended."""
    nr.close_connections(on_failed=True)
    getattr(nr.runner, "close", lambda: None)()
    left = wait_for(lambda: set(lab_pids(lab.name, "vtysh")) - sessions_before)
    assert not left, f"sessions still open after close_connections: {left}"


@pytest.mark.parametrize(("runner", "task"), runners())
def test_a_command_on_every_host_one_login_each_over_three_runs(
    frr_lab: RunningRouterLab, runner: Runner, task: Any
) -> None:
    """The sessions live from one run to the next until ``close_connections``, as nornir keeps
    them: the SSH server logs one login a host, not one a run."""
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    logins = frr_lab.logins()
    nr = frr_lab.nornir(runner.name, **runner.options)
    try:
        for _ in range(3):
            assert_each_host_answered(frr_lab, nr.run(task=task, command=COMMAND))
        assert frr_lab.logins() - logins == len(frr_lab.hosts())
    finally:
        closed(nr, frr_lab, sessions)


CLI_KILLED = "cli-killed"
CONNECTION_DROPPED = "connection-dropped"


def end_sessions(lab: RunningRouterLab, how: str, nr: Any) -> None:
    """End every session of the lab's user from the device's side, and wait until it has.

    ``cli-killed``: the CLI is killed (as ``pkill -KILL -u USER vtysh``), as when a device
    restarts its CLI or times a session out: the SSH server closes the session's channel and
    keeps the TCP connection, as OpenSSH does; done once the client acknowledged the close
    (the server's session process then gives its terminal back: ``sshd: USER@notty``), or,
    for scrapli's sessions kept in this process by an event loop idle between runs, once the
    close waits unread on each session's socket.
    ``connection-dropped``: the SSH server's session processes are killed: the TCP connection
    is gone, as when a device reboots.
    """
    if how == CLI_KILLED:
        send_signal_to(lab_pids(lab.name, "vtysh"), signal.SIGKILL)
        assert not wait_for(
            lambda: lab_pids(lab.name, "vtysh")
            or (session_titles(lab, "@pts") and not closes_unread(nr))
        )
    else:
        send_signal_to(list(session_titles(lab)), signal.SIGKILL)
        assert not wait_for(lambda: lab_pids(lab.name, "vtysh") or session_titles(lab))


def closes_unread(nr: Any) -> bool:
    """Whether every host of ``nr`` keeps a scrapli session in this process with bytes from
    the device waiting unread on its socket (a session a worker process holds is not in this
    process: its record here raises on ``connection``)."""
    for host in nr.inventory.hosts.values():
        session = host.connections.get(CONNECTION_NAME)
        if not isinstance(session, ScrapliSession):
            return False
        ssh = getattr(getattr(session.connection, "transport", None), "session", None)
        sock = None if ssh is None else ssh.get_extra_info("socket")
        if sock is None or not bytes_waiting(sock):
            return False
    return True


def session_titles(lab: RunningRouterLab, part: str = "") -> dict[int, str]:
    """The SSH server's processes serving the lab user's sessions (``sshd: USER [priv]``,
    ``sshd: USER@pts/0`` ...), by process id; those whose title goes on with ``part``."""
    found = {}
    for entry in os.listdir("/proc"):
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith(f"sshd: {lab.user}{part}"):
            found[int(entry)] = title.rstrip("\0")
    return found


def stale_cases(runner: Runner) -> list[tuple[str, tuple[Any, str]]]:
    """netmiko's sessions (paramiko), their CLI killed, on each runner; scrapli's (asyncssh)
    on those that await async tasks, their CLI killed (the SSH server closes the channel and
    keeps the connection: the close waits unread while the runner's event loop is idle between
    runs) and, on the asyncio runner, their connection dropped."""
    cases: list[tuple[str, tuple[Any, str]]] = [
        (f"send_command-{CLI_KILLED}", (send_command, CLI_KILLED))
    ]
    if ASYNC in runner.kinds:
        cases.append((f"asend_command-{CLI_KILLED}", (asend_command, CLI_KILLED)))
    if runner.id == "asyncio":
        cases.append((f"asend_command-{CONNECTION_DROPPED}", (asend_command, CONNECTION_DROPPED)))
    return cases


@pytest.mark.parametrize(("runner", "task", "how"), runners(STALE, cases=stale_cases))
def test_sessions_the_device_ended_between_runs_are_opened_again(
    frr_lab: RunningRouterLab, runner: Runner, task: Any, how: str
) -> None:
    """The kept sessions are dead when the next run starts: each host logs in again, instead
    of failing on its dead session."""
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir(runner.name, **runner.options)
    try:
        assert_each_host_answered(frr_lab, nr.run(task=task, command=COMMAND))
        logins = frr_lab.logins()
        end_sessions(frr_lab, how, nr)
        assert_each_host_answered(frr_lab, nr.run(task=task, command=COMMAND))
        assert frr_lab.logins() - logins == len(frr_lab.hosts())  # a new login each
    finally:
        closed(nr, frr_lab, sessions)


def own_kind(runner: Runner) -> list[tuple[str, tuple[Any]]]:
    """The runner's own kind of task: asend_command where it awaits them, else send_command."""
    return commands(runner)[-1:]


@pytest.mark.parametrize(
    ("runner", "task"), runners(POLICIES, cases=own_kind, only=("threadpool", "asyncio"))
)
def test_a_router_that_stops_answering_mid_session_fails_its_hosts_by_the_task_timeout(
    frr_lab: RunningRouterLab, runner: Runner, task: Any
) -> None:
    """r2's CLI stops (SIGSTOP) with the sessions open: its hosts fail with TaskTimeout at
    ``task_timeout``, the others answer as usual."""
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir(runner.name, **runner.options, task_timeout=3, retries=0)
    stuck = [host for host, router in frr_lab.hosts().items() if router == "r2"]
    frozen: list[int] = []
    try:
        assert_each_host_answered(frr_lab, nr.run(task=task, command=COMMAND))
        frozen = lab_pids(frr_lab.name, "vtysh", "r2")
        assert len(frozen) == len(stuck)  # a session for each of r2's hosts
        send_signal_to(frozen, signal.SIGSTOP)
        result = nr.run(task=task, command=COMMAND)
        assert sorted(result.failed_hosts) == sorted(stuck), failures(result)
        for host in stuck:
            assert isinstance(result[host].exception, TaskTimeout), repr(result[host].exception)
        for host, multi in result.items():
            if host not in stuck:
                assert f"local AS number {frr_lab.asn(frr_lab.hosts()[host])}" in multi.result
    finally:
        send_signal_to(frozen, signal.SIGCONT)
        closed(nr, frr_lab, sessions)


# A task module the jobs name as ``labtasks:...``, next to the job file as a user's would be.
LAB_TASKS = '''
import asyncio
import time
from pathlib import Path

from nornir_bench import arun_subtask
from nornir_bench.core.liveness import bytes_waiting
from nornir_bench.tasks import asend_command, send_command
from nornir_bench.tasks.sessions.scrapli_session import CONNECTION_NAME


def echo_password(task):
    """Sends the host's password as a command: the router refuses it and says it back
    ("% Unknown command: ..."), as a device echoing a secret in a config line would."""
    return task.run(task=send_command, command=task.host.password)[0].result


async def show_then_wait(task):
    """h1 answers; the other hosts answer, say so, then wait for a minute."""
    multi = await arun_subtask(task, asend_command, command="show ip bgp summary")
    if task.host.name != "h1":
        Path(f"waiting-{task.host.name}").touch()
        await asyncio.sleep(60)
    return multi[0].result


def read_when_told(task, read_timeout):
    """Logs in (a first command), says so, and once told (a file ``go``) reads the running
    configuration."""
    task.run(task=send_command, command="show version")
    Path(f"logged-in-{task.host.name}").touch()
    while not Path("go").exists():
        time.sleep(0.01)
    return task.run(task=send_command, command="show running-config",
                    read_timeout=read_timeout)[0].result


async def aread_when_told(task, timeout):
    """read_when_told, on scrapli's async driver."""
    await arun_subtask(task, asend_command, command="show version")
    Path(f"logged-in-{task.host.name}").touch()
    while not Path("go").exists():
        await asyncio.sleep(0.01)
    multi = await arun_subtask(task, asend_command, command="show running-config",
                               timeout=timeout)
    return multi[0].result
'''


def lab_job(lab: RunningRouterLab, folder: Path, body: str, runner: str = "threadpool") -> Path:
    (folder / "labtasks.py").write_text(LAB_TASKS)
    inventory = lab.inventory
    job = folder / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        inventory:
          plugin: SimpleInventory
          options:
            host_file: {inventory / "hosts.yaml"}
            group_file: {inventory / "groups.yaml"}
            defaults_file: {inventory / "defaults.yaml"}
        runner: {{plugin: {runner}, options: {{num_workers: 10}}}}
        logging: {{enabled: true, level: DEBUG, log_file: nornir.log,
                   loggers: [nornir, nornir_bench, netmiko, paramiko]}}
        """) + textwrap.dedent(body))
    return job


def nornir_bench_run(job: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl", *args]


def test_a_job_on_the_routers_never_shows_the_password(
    frr_lab: RunningRouterLab, tmp_path: Path
) -> None:
    """Not on the terminal, in the records or in the log (netmiko's and paramiko's debug lines
    included), though one step makes every router say it back."""
    job = lab_job(frr_lab, tmp_path, """\
        steps:
          - name: send_command
            params: {command: show ip bgp summary}
          - name: labtasks:echo_password
        """)
    done = subprocess.run(nornir_bench_run(job, "--show"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "out.jsonl").read_text()
    rows = [json.loads(line) for line in written.splitlines()]
    hosts = frr_lab.hosts()
    assert sorted((r["step"], r["host"]) for r in rows) == sorted(
        (step, host) for step in (1, 2) for host in hosts
    )
    for row in rows:
        assert row["failed"] is False, row
        if row["step"] == 1:
            assert f"local AS number {frr_lab.asn(hosts[row['host']])}" in row["result"]
        else:  # said back by the router, masked
            assert row["result"] == "% Unknown command: ********", row
    assert "% Unknown command: ********" in done.stdout  # --show printed it, masked
    log = (tmp_path / "nornir.log").read_text()
    assert "paramiko.transport" in log  # the libraries' debug lines are in it
    for output in (done.stdout, done.stderr, written, log):
        assert frr_lab.password not in output


def test_ctrl_c_keeps_the_host_that_finished_and_ends_the_sessions(
    frr_lab: RunningRouterLab, tmp_path: Path
) -> None:
    """Ctrl-C twice with h1 done and the other hosts waiting, each on its open session (the
    first press lets the hosts in flight go on, the second abandons them): exit 130, h1's
    record kept, and the others' saying they were stopped in flight."""
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    job = lab_job(frr_lab, tmp_path, "task: {name: 'labtasks:show_then_wait'}\n", "asyncio")
    others = sorted(set(frr_lab.hosts()) - {"h1"})
    out = tmp_path / "out.jsonl"
    status, stdout, stderr = interrupted_when(
        nornir_bench_run(job), tmp_path,
        lambda: out.exists() and out.read_text().count("\n") == 1
        and all((tmp_path / f"waiting-{h}").exists() for h in others),
        timeout=30, again=lambda: True,
    )
    assert status == 130, stdout + stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["host"], r["failed"]) for r in rows] == [
        ("h1", False), *((h, True) for h in others)]
    assert "local AS number 65001" in rows[0]["result"]
    assert {r["exception"] for r in rows[1:]} == {"HostAbandoned"}
    assert f"interrupted: {len(others)} of {len(others) + 1} hosts did not finish" in stdout
    assert "Traceback" not in stderr
    assert not wait_for(lambda: set(lab_pids(frr_lab.name, "vtysh")) - sessions)


def test_a_scrapli_session_whose_cli_ended_while_its_loop_was_idle_is_seen_dead_on_next_use(
    frr_lab: RunningRouterLab,
) -> None:
    """The router closes the channel and keeps the connection; the close waits unread, so the
    check without the loop (``alive``, asked before a host's task starts) cannot see it: the
    session's next use lets the loop read it first, and drops the session."""
    host = frr_lab.nornir("asyncio").inventory.hosts["h1"]
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    loop = asyncio.new_event_loop()
    session = loop.run_until_complete(opened(host))
    try:
        send_signal_to(list(set(lab_pids(frr_lab.name, "vtysh")) - sessions), signal.SIGKILL)
        sock = session.connection.transport.session.get_extra_info("socket")  # type: ignore
        assert not wait_for(lambda: not bytes_waiting(sock))
        assert session.alive()  # unread: nothing tells it yet
        assert not loop.run_until_complete(session.still_open())
        assert session.connection is None  # dropped: the caller logs in again
    finally:
        loop.run_until_complete(session.aclose())
        loop.run_until_complete(asyncio.sleep(0.01))
        loop.close()


@pytest.mark.parametrize(
    ("runner", "task", "ended"),
    [("threadpool", "{name: 'labtasks:read_when_told', params: {read_timeout: 600}}",
      "SessionClosed"),
     ("asyncio", "{name: 'labtasks:aread_when_told', params: {timeout: 600}}",
      "ScrapliConnectionError")],
    ids=["send_command", "asend_command"],
)
def test_a_cli_killed_under_a_command_fails_its_host_at_once_saying_the_session_closed(
    frr_lab: RunningRouterLab, runner: str, task: str, ended: str, tmp_path: Path
) -> None:
    """Once logged in, r1's staticd is stopped, so ``show running-config`` waits for it on r1
    (the session's vtysh blocked on the daemon, the driver reading for the prompt), and r1's
    CLI is killed: h1 fails on the driver's end of file, the other hosts answer. The command is
    given 600 s: a driver reading on past the end of file would meet the hang guard, not its
    timeout."""
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    job = lab_job(frr_lab, tmp_path, f"task: {task}\n", runner)
    process = subprocess.Popen(nornir_bench_run(job), cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert not wait_for(lambda: process.poll() is None and not all(
            (tmp_path / f"logged-in-{host}").exists() for host in frr_lab.hosts()
        )), process.communicate()
        stdout, stderr = cli_killed_mid_command(
            frr_lab, "r1", process, before=(tmp_path / "go").touch)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, stdout + stderr
    written = (tmp_path / "out.jsonl").read_text().splitlines()
    rows = {row["host"]: row for row in map(json.loads, written)}
    assert rows["h1"]["exception"] == ended, rows["h1"]
    if ended == "SessionClosed":
        port = next(router.port for router in frr_lab.plan.routers if router.name == "r1")
        assert rows["h1"]["message"] == (
            f"the device at 127.0.0.1:{port} closed the session: end of file on its SSH channel"
        )
    for host in ("h2", "h3"):
        assert rows[host]["failed"] is False, rows[host]
    assert not wait_for(lambda: set(lab_pids(frr_lab.name, "vtysh")) - sessions)

THROTTLED_HOSTS = 12


@pytest.fixture(name="throttling_lab")
def twelve_throttled_hosts(throttling_lab: RunningRouterLab, tmp_path: Path) -> RunningRouterLab:
    """The session's router whose OpenSSH lets one login at a time through to authentication
    (``MaxStartups 1``: it drops the other connections before authentication, as a loaded
    device does past ``10:30:100``), through an inventory of 12 hosts on its port."""
    return throttling_lab.with_inventory(tmp_path / "inventory", hosts=THROTTLED_HOSTS)


@pytest.mark.parametrize(("runner", "task"), runners(POLICIES, cases=own_kind))
def test_logins_the_ssh_server_drops_are_paced_and_tried_again_with_no_options_set(
    throttling_lab: RunningRouterLab, runner: Runner, task: Any
) -> None:
    sessions = set(lab_pids(throttling_lab.name, "vtysh"))
    logins = throttling_lab.logins()
    nr = throttling_lab.nornir(runner.name, **runner.options)
    try:
        result = nr.run(task=task, command="show version")
    finally:
        closed(nr, throttling_lab, sessions)
    assert not result.failed, failures(result)
    assert len(result) == THROTTLED_HOSTS and all("FRRouting" in m.result for m in result.values())
    assert throttling_lab.logins() - logins == THROTTLED_HOSTS  # the server let each in once
    summary = summarize(result)
    assert summary.login_refusals > 0 and summary.login_retried > 0
    assert any(line.startswith("logins throttled: ") for line in summary.lines())


def test_with_login_retries_0_a_dropped_login_fails_its_host_as_the_library_said(
    throttling_lab: RunningRouterLab,
) -> None:
    """Turned off, as before it existed: no pacing, no second try, the library's own error
    (asyncssh's ``Connection lost``); the hosts that got in keep their results."""
    sessions = set(lab_pids(throttling_lab.name, "vtysh"))
    nr = throttling_lab.nornir("asyncio", login_retries=0)
    try:
        result = nr.run(task=asend_command, command="show version")
    finally:
        closed(nr, throttling_lab, sessions)
    assert result.failed_hosts, "no login was dropped"
    for multi in result.failed_hosts.values():
        assert not isinstance(multi.exception, LoginRefused), repr(multi.exception)
        assert attempts_of(multi)[0] == 1
    answered = [multi.result for multi in result.values() if not multi.failed]
    assert answered and all("FRRouting" in said for said in answered)
    assert len(result) == THROTTLED_HOSTS
