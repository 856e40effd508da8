"""Changing real routers: ``send_config`` (netmiko) and ``asend_config`` (scrapli) against FRR
behind OpenSSH (``frr_lab``: r1 - r2 - r3, eBGP on each link; inventory hosts h1 on r1, h2 on
r2, h3 on r3), as root.

A change's text, refusals, diffs and records are the task's: they run on one blocking runner
and one async runner (``DRIVERS``). Ctrl-C and deadlines are the runner's: those tests run a
job on each runner it can name (docs/testing.md, the runner matrix).

Each test leaves the routers as it found them: ``frr_lab`` puts every router back after it
(as root, through vtysh, not through the task under test) and checks that it did;
``restored`` is each router's running configuration before the test.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import AggregatedResult

from nornir_bench import arun_subtask
from nornir_bench.bench.summary import summarize
from nornir_bench.lab import RunningRouterLab
from nornir_bench.lab._system import FRR_ETC
from nornir_bench.lab.vtysh import restore_config
from nornir_bench.processors.records import host_record
from nornir_bench.tasks import ConfigChangeFailed, asend_config, send_config
from nornir_bench.tasks.dialects.config_text import parse_config, same
from nornir_bench.tasks.dialects.dialects import FRRDriver
from tests.report.test_page import CHROMIUM, in_browser
from tests.router_faults import cli_killed_mid_command, interrupted_when, send_signal_to
from tests.routers import lab_pids, wait_for
from tests.runners.test_conformance import ASYNC, Runner, each_runner
from tests.runners.test_routers import closed, failures


def same_config(one: str, other: str) -> bool:
    """Whether two of FRR's running configurations hold the same lines."""
    return same(parse_config(one, FRRDriver()), parse_config(other, FRRDriver()))


ROUTE = "203.0.113.{}/32"  # TEST-NET-3: one per router, so that each announces its own


def kinds(runner: Runner) -> list[tuple[str, tuple[Any]]]:
    """The runner's own kind of change task: asend_config where it awaits async tasks, else
    send_config (the blocking one on the async runners is a thread of theirs, as
    send_command's, tested in tests/runners/test_routers.py)."""
    task: Any = asend_config if ASYNC in runner.kinds else send_config
    return [(task.__name__, (task,))]


# The blocking driver on threads, the async one on the event loop: the plan they share.
DRIVERS = [p for p in each_runner(cases=kinds) if p.values[0].id in ("threadpool", "asyncio")]


def change(host: str, lab: RunningRouterLab) -> list[str]:
    """A static route and a BGP network statement for ``host``'s router."""
    router = lab.hosts()[host]
    route = ROUTE.format(router[1:])
    return [
        f"ip route {route} Null0",
        f"router bgp {lab.asn(router)}",
        " address-family ipv4 unicast",
        f"  network {route}",
    ]


def running(lab: RunningRouterLab, router: str) -> str:
    """``router``'s running configuration as FRR prints it (root, not through SSH)."""
    return lab.vtysh(router, "show running-config")


def run_change(lab: RunningRouterLab, runner: Runner, task: Any, folder: Path,
               lines: Any = change, **params: Any) -> AggregatedResult:
    """``task`` with each host's lines (``lines(host, lab)``) on every host, as a subtask
    (``result[host][1]``), the connections closed after."""
    sessions = set(lab_pids(lab.name, "vtysh"))
    nr = lab.nornir(runner.name, **runner.options)
    by_host = {host: lines(host, lab) for host in lab.hosts()}
    try:
        return nr.run(
            task=aper_host if task is asend_config else per_host, config_task=task,
            by_host=by_host, backup_dir=str(folder), **params,
        )
    finally:
        closed(nr, lab, sessions)


def per_host(task: Any, config_task: Any, by_host: dict[str, list[str]], **params: Any) -> Any:
    """The config task with the host's own lines, as a subtask."""
    return task.run(task=config_task, lines=by_host[task.host.name], **params)


async def aper_host(
    task: Any, config_task: Any, by_host: dict[str, list[str]], **params: Any
) -> Any:
    return await arun_subtask(task, config_task, lines=by_host[task.host.name], **params)


def announced(lab: RunningRouterLab, router: str, route: str) -> bool:
    """Whether ``router``'s BGP table has ``route``."""
    said = json.loads(lab.vtysh(router, "show ip bgp json") or "{}")
    return route in said.get("routes", {})


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_dry_run_shows_the_diff_and_leaves_every_router_byte_identical(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    result = run_change(frr_lab, runner, task, tmp_path, dry_run=True)
    assert not result.failed, failures(result)
    for host, router in frr_lab.hosts().items():
        done = result[host][1]
        assert done.changed is True and done.change == {"state": "would change", "backup": None}
        added = [line for line in done.diff.splitlines()
                 if line.startswith("+") and not line.startswith("+++")]
        route = ROUTE.format(router[1:])
        assert added == [f"+  network {route}", f"+ip route {route} Null0"], done.diff
        assert not [line for line in done.diff.splitlines()
                    if line.startswith("-") and not line.startswith("---")]
        assert running(frr_lab, router) == restored[router]  # byte-identical
    assert not list(tmp_path.iterdir())  # no backup: nothing was going to be sent


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_change_applied_reaches_the_neighbours_and_applied_again_changes_nothing(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    result = run_change(frr_lab, runner, task, tmp_path)
    assert not result.failed, failures(result)
    for host, router in frr_lab.hosts().items():
        done = result[host][1]
        assert done.changed is True and done.change["state"] == "changed", done.result
        backup = Path(done.change["backup"])
        assert backup.read_text().rstrip() == restored[router].rstrip()  # restorable
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        route = ROUTE.format(router[1:])
        assert f"ip route {route} Null0" in running(frr_lab, router)
    for neighbour in ("r1", "r3"):  # r2's route, two neighbours; r1's and r3's through r2
        assert not wait_for(lambda n=neighbour: not announced(frr_lab, n, ROUTE.format(2)))
    assert not wait_for(lambda: not announced(frr_lab, "r3", ROUTE.format(1)))
    again = run_change(frr_lab, runner, task, tmp_path)
    assert not again.failed, failures(again)
    for multi in again.values():
        assert multi[1].changed is False and multi[1].diff == ""
        assert multi[1].change == {"state": "no change", "backup": None}


def refused_on_h2(host: str, lab: RunningRouterLab) -> list[str]:
    """h2's change has a line its FRR does not know, third of five; the others are fine."""
    lines = change(host, lab)
    return [*lines[:2], "ip routx 198.51.100.0/24", *lines[2:]] if host == "h2" else lines


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_refused_line_fails_its_host_naming_the_line_and_rolls_it_back(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    result = run_change(frr_lab, runner, task, tmp_path, lines=refused_on_h2)
    assert sorted(result.failed_hosts) == ["h2"], failures(result)
    error = result["h2"][1].exception
    assert isinstance(error, ConfigChangeFailed), repr(error)
    assert str(error).startswith(
        "line 3 of 5 refused: 'ip routx 198.51.100.0/24': % Unknown command: ip routx "
        "198.51.100.0/24; rolled back to the backup at "
    ), str(error)
    assert error.state == "rolled back" and error.diff == ""
    assert same_config(running(frr_lab, "r2"), restored["r2"])
    assert Path(error.backup).read_text().rstrip() == restored["r2"].rstrip()
    for host in ("h1", "h3"):  # the other hosts changed as asked
        assert result[host][1].change["state"] == "changed"


def test_without_rollback_a_refused_line_leaves_the_lines_before_it_and_says_so(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    (runner,) = [p.values[0] for p in DRIVERS if p.values[0].id == "threadpool"][:1]
    result = run_change(frr_lab, runner, send_config, tmp_path, lines=refused_on_h2,
                        rollback=False)
    error = result["h2"][1].exception
    assert isinstance(error, ConfigChangeFailed) and error.state == "not rolled back"
    assert "; not rolled back (rollback: false): the configuration differs from the backup" in (
        str(error)
    )
    assert "ip route 203.0.113.2/32 Null0" in running(frr_lab, "r2")  # lines 1-2 stayed
    assert "+ip route 203.0.113.2/32 Null0" in error.diff


def with_secret(host: str, lab: RunningRouterLab) -> list[str]:
    router = lab.hosts()[host]
    peer = next(address for address in lab.bgp_at_ready[router])
    return [f"router bgp {lab.asn(router)}", f" neighbor {peer} password s3cr3t-{host}"]


def test_a_secret_in_the_lines_is_masked_in_the_result_and_diff_but_kept_in_the_backup(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    (runner,) = [p.values[0] for p in DRIVERS if p.values[0].id == "asyncio"][:1]
    result = run_change(frr_lab, runner, asend_config, tmp_path, lines=with_secret)
    assert not result.failed, failures(result)
    for host in frr_lab.hosts():
        done = result[host][1]
        assert f"s3cr3t-{host}" not in done.result + done.diff
        assert "password ********" in done.diff
    second = run_change(frr_lab, runner, asend_config, tmp_path, lines=with_secret,
                        dry_run=True)
    assert all(multi[1].changed is False for multi in second.values())
    backups = sorted(os.listdir(tmp_path))
    assert len(backups) == 3 and not any("s3cr3t" in (tmp_path / b).read_text() for b in backups)


def test_a_template_is_rendered_per_host_and_an_undefined_name_fails_before_the_device(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    template = tmp_path / "route.j2"
    template.write_text(
        "ip route 203.0.113.{{ host.name[1:] }}/32 Null0 {{ distance }}\n"
        "{% if host.name == 'h3' %}ip route 198.51.100.0/24 Null0 {{ missing }}{% endif %}\n"
    )
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir("threadpool")
    try:
        result = nr.run(task=send_config, template_file=str(template),
                        variables={"distance": 200}, backup_dir=str(tmp_path / "backups"))
    finally:
        closed(nr, frr_lab, sessions)
    assert sorted(result.failed_hosts) == ["h3"]
    error = result["h3"].exception
    assert isinstance(error, ValueError)
    assert str(error) == f"template {template}: UndefinedError: 'missing' is undefined"
    assert running(frr_lab, "r3") == restored["r3"]
    assert "ip route 203.0.113.1/32 Null0 200" in running(frr_lab, "r1")


# -- jobs: --check, canary batches, --rerun-failed -----------------------------------------

TEMPLATE = """\
ip route 203.0.113.{{ host.name[1:] }}/32 Null0
router bgp {{ 65000 + host.name[1:] | int }}
 address-family ipv4 unicast
  network 203.0.113.{{ host.name[1:] }}/32
{% if host.name in refuse %}ip routx 198.51.100.0/24{% endif %}
"""


def lab_job(lab: RunningRouterLab, folder: Path, runner: str, params: str, *,
            options: str = "", task: str | None = None) -> Path:
    """A job on the lab's inventory, ``params`` the YAML lines of its task's parameters;
    ``task``: the runner's own kind of change task unless given."""
    procs = "num_procs: 1, " if runner == "dask" else ""  # a cluster of its own: one worker
    job = folder / "change.yaml"
    job.write_text(
        "inventory:\n"
        "  plugin: SimpleInventory\n"
        "  options:\n"
        f"    host_file: {lab.inventory / 'hosts.yaml'}\n"
        f"    group_file: {lab.inventory / 'groups.yaml'}\n"
        f"    defaults_file: {lab.inventory / 'defaults.yaml'}\n"
        f"runner: {{plugin: {runner}, options: {{{procs}num_workers: 10{options}}}}}\n"
        "task:\n"
        f"  name: {task or ('asend_config' if runner != 'threadpool' else 'send_config')}\n"
        "  params:\n" + params
    )
    return job


def change_job(lab: RunningRouterLab, folder: Path, runner: str, refuse: list[str],
               options: str = "", task: str | None = None) -> Path:
    """A job changing every router from a template; ``refuse``: hosts given a line FRR does
    not know."""
    (folder / "change.j2").write_text(TEMPLATE)
    return lab_job(
        lab, folder, runner,
        "    template_file: change.j2\n"
        f"    variables: {{refuse: {refuse}}}\n"
        f"    backup_dir: {folder / 'backups'}\n",
        options=options, task=task,
    )


def run_cli_command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nornir_bench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180, check=False)


def run_cli(job: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", str(job), *args],
        cwd=job.parent, capture_output=True, text=True, timeout=180, check=False,
    )


def records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["host"]: r for r in map(json.loads, path.read_text().splitlines())}


# The runners of the Ctrl-C jobs. A job runs in a process of its own: dask there starts a
# cluster of its own (10 s a run); its Ctrl-C is tests/cli/test_script.py's.
JOB_RUNNERS = ["threadpool", "asyncio", "processpool"]


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_check_shows_each_hosts_diff_and_changes_nothing(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    job = change_job(frr_lab, tmp_path, runner, refuse=[])
    done = run_cli(job, "--check", "--show", "-o", "out.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a dry run (--check): nothing changed" in done.stdout
    for k in (1, 2, 3):
        assert f"+ip route 203.0.113.{k}/32 Null0" in done.stdout
        assert f"+  network 203.0.113.{k}/32" in done.stdout
    assert "config: 3 hosts would change" in done.stdout
    for router, text in restored.items():
        assert running(frr_lab, router) == text  # byte-identical
    rows = records(tmp_path / "out.jsonl")
    assert {h: r["change"]["state"] for h, r in rows.items()} == dict.fromkeys(
        ("h1", "h2", "h3"), "would change"
    )
    assert not (tmp_path / "backups").exists()


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_canary_rollout_stops_at_the_refused_router_and_reruns_only_what_did_not_end_ok(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    """Batches of one host (h1, then h2, then h3), no failure allowed: h2 refuses a line and
    is rolled back, h3 never starts; fixed, --rerun-failed runs h2 and h3 only."""
    job = change_job(frr_lab, tmp_path, runner, refuse=["h2"],
                     options=", batches: [1], max_failures: 0")
    first = run_cli(job, "-o", "first.jsonl")
    assert first.returncode == 1, first.stdout + first.stderr
    rows = records(tmp_path / "first.jsonl")
    assert rows["h1"]["change"]["state"] == "changed"
    assert rows["h2"]["change"]["state"] == "rolled back"
    assert "line 5 of 5 refused: 'ip routx 198.51.100.0/24'" in rows["h2"]["message"]
    assert rows["h3"]["failed"] and rows["h3"]["change"] is None  # never started
    assert same_config(running(frr_lab, "r2"), restored["r2"])
    assert running(frr_lab, "r3") == restored["r3"]  # untouched
    assert "config: 1 host changed, 1 host rolled back" in first.stdout
    # The run's page: in a browser, the change states as the records say, the refused line.
    page = run_cli_command("report", "first.jsonl", "-o", "first.html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    if CHROMIUM is not None:  # .ci/run installs it; the page's own tests say when it lacks
        dom, _ = in_browser(tmp_path / "first.html", tmp_path)
        assert 'data-ready="1"' in dom and "data-errors" not in dom
        assert "config: 1 host changed, 1 host rolled back" in dom
        assert 'data-state="rolled back" data-host="h2"' in dom
        assert "line 5 of 5 refused: 'ip routx 198.51.100.0/24'" in dom
    job = change_job(frr_lab, tmp_path, runner, refuse=[],
                     options=", batches: [1], max_failures: 0")
    again = run_cli(job, "--rerun-failed", "first.jsonl", "-o", "again.jsonl")
    assert again.returncode == 0, again.stdout + again.stderr
    rows = records(tmp_path / "again.jsonl")
    assert sorted(rows) == ["h2", "h3"]
    assert all(r["change"]["state"] == "changed" for r in rows.values())


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_template_error_fails_its_host_before_any_device_of_the_rollout_is_touched(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    """h3's lines name an undefined variable. Every host's lines are made before the step
    touches a device: in a canary rollout allowing no failure, no router is touched (h1 and
    h2 are not run); without a limit, h3 fails first and the others change."""
    job = change_job(frr_lab, tmp_path, runner, refuse=[],
                     options=", batches: [1], max_failures: 0")
    (tmp_path / "change.j2").write_text(
        TEMPLATE + "{% if host.name == 'h3' %}ip route 198.51.100.0/24 {{ missing }}{% endif %}\n"
    )
    canary = run_cli(job, "-o", "canary.jsonl")
    assert canary.returncode == 1, canary.stdout + canary.stderr
    rows = records(tmp_path / "canary.jsonl")
    assert rows["h3"]["exception"] == "ValueError"
    assert "'missing' is undefined" in rows["h3"]["message"]
    for host in ("h1", "h2"):
        assert rows[host]["exception"] == "RunAborted", rows[host]
        assert "the lines of 1 host could not be made" in rows[host]["message"]
    for router, text in restored.items():
        assert running(frr_lab, router) == text  # untouched
    job.write_text(job.read_text().replace(", batches: [1], max_failures: 0", ""))
    free = run_cli(job, "-o", "free.jsonl")
    assert free.returncode == 1, free.stdout + free.stderr
    lines = (tmp_path / "free.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["host"] == "h3"  # recorded before any host ran
    rows = records(tmp_path / "free.jsonl")
    assert rows["h1"]["change"]["state"] == rows["h2"]["change"]["state"] == "changed"
    assert running(frr_lab, "r3") == restored["r3"]


MANY = """\
{% set k = host.name[1:] | int %}
{% for i in range(150) %}ip route 198.18.{{ 100 + k }}.{{ i }}/32 Null0
{% endfor %}
"""


def change_routes(lab: RunningRouterLab, router: str) -> int:
    """How many of the 150 routes of the MANY change ``router`` holds."""
    prefix = f"ip route 198.18.{100 + int(router[1:])}."
    return sum(line.startswith(prefix) for line in running(lab, router).splitlines())


@pytest.mark.parametrize(
    ("runner", "task"), [*((r, None) for r in JOB_RUNNERS), ("asyncio", "send_config")]
)
def test_ctrl_c_in_the_middle_of_the_lines_lets_each_change_end_whole(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, task: str | None,
    tmp_path: Path,
) -> None:
    """Ctrl-C once a router holds part of a 150-line change (the async runners cancel their
    hosts in flight): each change ends whole, and its record says so; no router is left with
    part of it. The blocking send_config on the asyncio runner is a thread its cancel cannot
    stop, and the command does not wait for: a router may hold part of it, and its record
    then says so (interrupted during change, state unknown, the backup)."""
    (tmp_path / "many.j2").write_text(MANY)
    job = change_job(frr_lab, tmp_path, runner, refuse=[], task=task)
    job.write_text(job.read_text().replace("change.j2", "many.j2"))
    status, stdout, stderr = interrupted_when(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"], tmp_path,
        lambda: any(0 < change_routes(frr_lab, r) < 150 for r in restored), pause=0.05,
    )
    assert status == 130, stdout + stderr
    rows = records(tmp_path / "out.jsonl") if (tmp_path / "out.jsonl").exists() else {}
    for host, router in frr_lab.hosts().items():
        held = change_routes(frr_lab, router)
        said = rows[host]["change"]["state"] if held else None
        if said == "interrupted during change" and task == "send_config":
            assert f"backup at {rows[host]['change']['backup']}" in rows[host]["message"]
        else:
            assert held in (0, 150), (router, held, rows.get(host))
            assert said in (None, "changed"), rows.get(host)


@pytest.mark.parametrize("runner", JOB_RUNNERS)
def test_a_second_ctrl_c_abandons_the_changes_in_flight_and_their_records_say_so(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    """Ctrl-C once r1 holds part of a 150-line change and its staticd is stopped (SIGSTOP: its
    next line waits on it, as a busy router's would), and again once the run said it is
    stopping: the hosts in flight are abandoned, r1's among them. Each router holding part of
    the change (or all of it) has a record saying so: interrupted during change, state
    unknown, with its backup (the configuration before the change)."""
    (tmp_path / "many.j2").write_text(MANY)
    job = change_job(frr_lab, tmp_path, runner, refuse=[])
    job.write_text(job.read_text().replace("change.j2", "many.j2"))
    stopped: list[int] = []

    def r1_held_midway() -> bool:
        if not 0 < change_routes(frr_lab, "r1") < 150:
            return False
        stopped.extend(lab_pids(frr_lab.name, "staticd", "r1"))
        send_signal_to(stopped, signal.SIGSTOP)
        return True

    try:
        status, stdout, stderr = interrupted_when(
            [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
            tmp_path, r1_held_midway, again=lambda: True, pause=0.02,
        )
    finally:
        send_signal_to(stopped, signal.SIGCONT)
    assert status == 130, stdout + stderr
    rows = records(tmp_path / "out.jsonl")
    interrupted = {
        h for h, r in rows.items() if r["change"]["state"] == "interrupted during change"
    }
    assert "h1" in interrupted, rows  # r1 held part of the change at the second press
    assert "INTERRUPTED DURING CHANGE:" in stdout
    for host, router in frr_lab.hosts().items():
        held = change_routes(frr_lab, router)
        if host in interrupted:
            backup = Path(rows[host]["change"]["backup"])
            assert f"state unknown, backup at {backup}" in rows[host]["message"]
            assert same_config(backup.read_text(), restored[router])
        elif held:
            assert held == 150 and rows[host]["change"]["state"] == "changed", rows.get(host)


def test_a_secret_in_a_devices_configuration_is_masked_wherever_a_job_shows_or_keeps_it(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    """Set by a change, then read back by a job's ``show running-config``: masked on the
    terminal, in the records and the log; the backup of the change keeps the configuration
    before it, restorable."""
    peer = next(iter(frr_lab.bgp_at_ready["r1"]))
    job = change_job(frr_lab, tmp_path, "threadpool", refuse=[])
    (tmp_path / "change.j2").write_text(
        "router bgp {{ 65000 + host.name[1:] | int }}\n"
        f"{{% if host.name == 'h1' %}} neighbor {peer} password n0t-2-b3-s33n{{% endif %}}\n"
    )
    done = run_cli(job, "--show", "-o", "out.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "password ********" in done.stdout
    assert "n0t-2-b3-s33n" in running(frr_lab, "r1")
    show = tmp_path / "show.yaml"
    show.write_text(job.read_text().split("task:")[0] + (
        "task: {name: send_command, params: {command: show running-config}}\n"
        "logging: {enabled: true, level: DEBUG, log_file: nornir.log,"
        " loggers: [nornir, nornir_bench, netmiko, paramiko]}\n"
    ))
    read = run_cli(show, "--show", "-o", "show.jsonl")
    assert read.returncode == 0, read.stdout + read.stderr
    assert f"neighbor {peer} password ********" in read.stdout
    for text in (done.stdout, done.stderr, read.stdout, read.stderr,
                 (tmp_path / "out.jsonl").read_text(), (tmp_path / "show.jsonl").read_text(),
                 (tmp_path / "nornir.log").read_text()):
        assert "n0t-2-b3-s33n" not in text


@pytest.mark.parametrize(
    ("runner", "task"),
    # the workers of a runner whose hosts run elsewhere write them too, masked with the
    # secrets the run sends them (runners/_remote/hosts.py, processpool's and dask's)
    [("threadpool", "send_command"), ("asyncio", "asend_command"),
     ("processpool", "asend_command")],
)
def test_a_session_log_per_router_is_written_masked_and_named_in_its_record(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, task: str,
    tmp_path: Path,
) -> None:
    """--session-logs: each router's CLI session, as its driver logged it (netmiko's
    session_log, scrapli's channel_log; in processpool's workers too), masked
    (a BGP neighbour's password in the running configuration), readable by the user alone."""
    peer = next(iter(frr_lab.bgp_at_ready["r1"]))
    router = frr_lab.hosts()["h1"]
    subprocess.run(["vtysh", "-N", f"nb-{frr_lab.name}-{router}", "-c", "configure terminal",
                    "-c", f"router bgp {frr_lab.asn(router)}",
                    "-c", f"neighbor {peer} password s3ss10n-s3cr3t"],
                   capture_output=True, timeout=30, check=True)
    job = change_job(frr_lab, tmp_path, runner, refuse=[])
    show = tmp_path / "show.yaml"
    show.write_text(job.read_text().split("runner:")[0] + (
        f"runner: {{plugin: {runner}, options: {{num_workers: 3}}}}\n"
        f"task: {{name: {task}, params: {{command: show running-config}}}}\n"
    ))
    done = run_cli(show, "--session-logs", "-o", "out.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path / "out" / "sessions"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    rows = records(tmp_path / "out.jsonl")
    for host in ("h1", "h2", "h3"):
        log = Path(rows[host]["session_log"])
        assert log == folder / f"{host}.log"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        text = log.read_text()
        assert "show running-config" in text and f"hostname {frr_lab.hosts()[host]}" in text
        assert "s3ss10n-s3cr3t" not in text
    assert f"neighbor {peer} password ********" in (folder / "h1.log").read_text()


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_session_lost_mid_change_says_the_state_is_unknown_and_where_the_backup_is(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    """r1's CLI is killed once it holds part of a 150-line change: h1 fails saying so, with
    its backup, instead of the library's bare error; the other routers change whole."""
    (tmp_path / "many.j2").write_text(MANY)
    job = change_job(frr_lab, tmp_path, runner, refuse=[])
    # Each exchange given 10 s, not the default 60: a read that missed the end of file ends sooner.
    job.write_text(job.read_text().replace("change.j2", "many.j2") + "    timeout: 10\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        assert not wait_for(
            lambda: process.poll() is None and not 0 < change_routes(frr_lab, "r1") < 150,
            pause=0.05,
        ), process.communicate()
        send_signal_to(lab_pids(frr_lab.name, "vtysh", "r1"), signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, stdout + stderr
    rows = records(tmp_path / "out.jsonl")
    assert rows["h1"]["exception"] == "ConfigChangeFailed", rows["h1"]
    assert rows["h1"]["message"].startswith("the session failed during the change (")
    assert rows["h1"]["change"]["state"] == "interrupted during change"
    backup = rows["h1"]["change"]["backup"]
    assert rows["h1"]["message"].endswith(f"state unknown, backup at {backup}")
    assert Path(backup).read_text().rstrip() == restored["r1"].rstrip()
    assert ("INTERRUPTED DURING CHANGE: 1 host (h1): each host's message says what may hold"
            in stdout)
    for host in ("h2", "h3"):
        assert rows[host]["change"]["state"] == "changed"


@pytest.mark.parametrize(
    ("runner", "ended"),
    [("threadpool", "SessionClosed: the device at 127.0.0.1:"),
     ("asyncio", "ScrapliConnectionError: ")],
)
def test_a_cli_killed_while_a_line_is_in_flight_fails_its_host_at_once_as_interrupted(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, ended: str,
    tmp_path: Path,
) -> None:
    """Once r1 holds part of a 150-line change, its staticd is stopped, so the line in flight
    waits (the session's vtysh blocked on the daemon, the driver reading for the prompt), and
    r1's CLI is killed: h1 fails on the driver's end of file (netmiko's through the task's
    channel), interrupted during change, with its backup. Each exchange is given 600 s: a driver
    reading on past the end of file would meet the hang guard, not its timeout."""
    (tmp_path / "many.j2").write_text(MANY)
    job = change_job(frr_lab, tmp_path, runner, refuse=[])
    job.write_text(job.read_text().replace("change.j2", "many.j2") + "    timeout: 600\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        assert not wait_for(
            lambda: process.poll() is None and not 0 < change_routes(frr_lab, "r1") < 150,
            pause=0.05,
        ), process.communicate()
        stdout, stderr = cli_killed_mid_command(frr_lab, "r1", process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, stdout + stderr
    rows = records(tmp_path / "out.jsonl")
    assert rows["h1"]["exception"] == "ConfigChangeFailed", rows["h1"]
    assert rows["h1"]["message"].startswith(f"the session failed during the change ({ended}")
    assert rows["h1"]["change"]["state"] == "interrupted during change"
    backup = rows["h1"]["change"]["backup"]
    assert rows["h1"]["message"].endswith(f"state unknown, backup at {backup}")
    assert Path(backup).read_text().rstrip() == restored["r1"].rstrip()
    for host in ("h2", "h3"):
        assert rows[host]["change"]["state"] == "changed"


# h1's change is long, the others' short: h1 is caught with part of it, h2 and h3 end in time.
LONG_ON_H1 = """\
{% set k = host.name[1:] | int %}
{% for i in range(150 if k == 1 else 3) %}ip route 198.18.{{ 100 + k }}.{{ i }}/32 Null0
{% endfor %}
"""


def hung_midway(
    frr_lab: RunningRouterLab, tmp_path: Path, runner: str, task: str, template: str,
) -> tuple[Path, str, str]:
    """The change job on ``template`` (each exchange may take 600 s, a host 3 s), r1's CLI
    stopped (SIGSTOP) once it holds part of h1's change and let go once the command ended
    (exit status 1 asserted): the job, the command's output and error."""
    (tmp_path / "midway.j2").write_text(template)
    job = change_job(frr_lab, tmp_path, runner, refuse=[], task=task,
                     options=", task_timeout: 3")
    job.write_text(job.read_text().replace("change.j2", "midway.j2") + "    timeout: 600\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    stopped: list[int] = []
    try:
        assert not wait_for(
            lambda: process.poll() is None and not 0 < change_routes(frr_lab, "r1") < 150,
            pause=0.02,
        ), process.communicate()
        stopped = lab_pids(frr_lab.name, "vtysh", "r1")
        send_signal_to(stopped, signal.SIGSTOP)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        send_signal_to(stopped, signal.SIGCONT)
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, stdout + stderr
    return job, stdout, stderr


@pytest.mark.parametrize(
    ("runner", "task"),
    # every runner, each driver on two: the blocking one on threads here and in a worker
    [("threadpool", "send_config"), ("asyncio", "asend_config"),
     ("processpool", "send_config"), ("dask", "asend_config")],
)
def test_a_deadline_ends_a_change_on_a_hung_device_and_its_record_says_how_far_it_got(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, task: str,
    tmp_path: Path,
) -> None:
    """r1's CLI stops (SIGSTOP) once it holds part of h1's change; each exchange may take 600
    s, the host 3 s (task_timeout). Once, asend_config's shield held the change past its
    deadline until the exchange timed out, and the blocking send_config's record said
    nothing of the change it cut: now h1 fails at its deadline with TaskTimeout, its record
    says interrupted during change with its backup, first in the summary; and
    --rerun-failed completes the change."""
    job, stdout, stderr = hung_midway(frr_lab, tmp_path, runner, task, LONG_ON_H1)
    rows = records(tmp_path / "out.jsonl")
    assert rows["h1"]["exception"] == "TaskTimeout", rows["h1"]
    assert rows["h1"]["change"]["state"] == "interrupted during change"
    backup = rows["h1"]["change"]["backup"]
    assert rows["h1"]["message"].endswith(f"state unknown, backup at {backup}")
    assert Path(backup).read_text().rstrip() == restored["r1"].rstrip()
    assert stdout.index("INTERRUPTED DURING CHANGE: 1 host (h1)") < stdout.index("config:")
    assert {rows[h]["change"]["state"] for h in ("h2", "h3")} == {"changed"}
    # The same job, given the time a whole change takes on a loaded machine.
    job.write_text(job.read_text().replace("task_timeout: 3", "task_timeout: 120"))
    again = run_cli(job, "--rerun-failed", "out.jsonl", "-o", "again.jsonl")
    assert again.returncode == 0, again.stdout + again.stderr
    assert records(tmp_path / "again.jsonl")["h1"]["change"]["state"] == "changed"
    assert change_routes(frr_lab, "r1") == 150


# -- save, changed, a change half made (issue 43) ------------------------------------------


def configure(lab: RunningRouterLab, router: str, lines: list[str]) -> None:
    """``lines`` in ``router``'s configuration mode, as root through vtysh (not the task)."""
    args = ["vtysh", "-N", f"nb-{lab.name}-{router}", "-c", "configure terminal"]
    for line in lines:
        args += ["-c", line.strip()]
    subprocess.run(args, capture_output=True, timeout=60, check=True)


def saved_file(lab: RunningRouterLab, router: str) -> Path:
    return FRR_ETC / f"nb-{lab.name}-{router}" / "frr.conf"


@pytest.fixture
def saved(frr_lab: RunningRouterLab) -> Iterator[None]:
    """Every router's saved configuration (frr.conf: text, owner, mode) put back after."""
    files = {r.name: saved_file(frr_lab, r.name) for r in frr_lab.plan.routers}
    kept = {router: (path.read_bytes(), path.stat()) for router, path in files.items()}
    yield
    for router, path in files.items():
        text, was = kept[router]
        path.parent.chmod(0o770)
        path.write_bytes(text)
        os.chown(path, was.st_uid, was.st_gid)
        path.chmod(stat.S_IMODE(was.st_mode))
        path.with_name("frr.conf.sav").unlink(missing_ok=True)


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_save_writes_the_change_to_each_routers_file_and_a_refused_save_fails_its_host(
    frr_lab: RunningRouterLab, restored: dict[str, str], saved: None, runner: Runner,
    task: Any, tmp_path: Path,
) -> None:
    """``save: true`` on every router, r2's folder not writable (as the lab's were once): FRR
    refuses r2's ``write memory``. h1 and h3 are saved (their frr.conf has the change); h2
    fails naming the refusal, changed, not saved, not rolled back. Run again with r2's
    folder writable, nothing is left to change and h2's change is saved."""
    folder = saved_file(frr_lab, "r2").parent
    folder.chmod(0o750)
    result = run_change(frr_lab, runner, task, tmp_path, save=True)
    assert sorted(result.failed_hosts) == ["h2"], failures(result)
    for host in ("h1", "h3"):
        router = frr_lab.hosts()[host]
        assert result[host][1].change["state"] == "changed"
        assert f"ip route {ROUTE.format(router[1:])} Null0" in saved_file(
            frr_lab, router).read_text()
    error = result["h2"][1].exception
    assert isinstance(error, ConfigChangeFailed) and error.state == "not saved", repr(error)
    assert str(error).startswith(
        "'write memory' refused: % Error: failed to open configuration file "
        f"{saved_file(frr_lab, 'r2')}: Permission denied; changed, not saved: the change is on "
        "the device, verified, not rolled back (backup at "
    ), str(error)
    assert result["h2"][1].changed is True and "+ip route 203.0.113.2/32 Null0" in error.diff
    assert "ip route 203.0.113.2/32 Null0" in running(frr_lab, "r2")  # not rolled back
    assert "203.0.113.2" not in saved_file(frr_lab, "r2").read_text()
    assert summarize(result).changes["not saved"] == ["h2"]
    folder.chmod(0o770)
    again = run_change(frr_lab, runner, task, tmp_path, save=True)
    assert not again.failed, failures(again)
    assert again["h2"][1].change == {"state": "no change", "backup": None}
    assert "ip route 203.0.113.2/32 Null0" in saved_file(frr_lab, "r2").read_text()


def refused_last(host: str, lab: RunningRouterLab) -> list[str]:
    """h2's change has a line its FRR does not know, last of five; the others are fine."""
    lines = change(host, lab)
    return [*lines, "ip routx 198.51.100.0/24"] if host == "h2" else lines


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_failed_change_says_changed_when_it_left_its_router_changed_and_only_then(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    """Line 5 of 5 refused: without rollback, 4 lines stay on r2, and its result, record and
    the summary say changed; rolled back, they say unchanged."""
    kept = run_change(frr_lab, runner, task, tmp_path, lines=refused_last, rollback=False)
    error = kept["h2"][1].exception
    assert isinstance(error, ConfigChangeFailed) and error.state == "not rolled back"
    assert "ip route 203.0.113.2/32 Null0" in running(frr_lab, "r2")
    assert kept["h2"][1].changed is True and kept["h2"].changed is True
    assert host_record("h2", kept["h2"]).changed is True
    assert summarize(kept).changed == 3
    assert restore_config(frr_lab.name, "r2", restored["r2"])
    back = run_change(frr_lab, runner, task, tmp_path, lines=refused_last)
    assert back["h2"][1].exception.state == "rolled back"
    assert back["h2"].changed is False and host_record("h2", back["h2"]).changed is False
    assert summarize(back).changed == 0  # h1 and h3 had nothing left to change


HALF = [f"198.18.{k}.0/32" for k in range(200, 210)]


def half_made(host: str, lab: RunningRouterLab) -> list[str]:
    """Ten routes removed, a BGP neighbour described: on r2, half of it made already."""
    router = lab.hosts()[host]
    peer = next(iter(lab.bgp_at_ready[router]))
    return [*(f"no ip route {route} Null0" for route in HALF),
            f"router bgp {lab.asn(router)}", f" neighbor {peer} description half-{host}"]


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_change_half_made_is_completed_by_sending_only_what_it_still_changes(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    """Every router holds ten routes; r2 lost its first five already, as a change stopped in
    the middle leaves it. Sending the whole change again, FRR would refuse the first line
    (``% Refusing to remove a non-existent route``): only the other five and the neighbour's
    description (with its ``router bgp`` line) are sent, and every change completes."""
    for router in restored:
        configure(frr_lab, router, [f"ip route {route} Null0" for route in HALF])
    configure(frr_lab, "r2", [f"no ip route {route} Null0" for route in HALF[:5]])
    result = run_change(frr_lab, runner, task, tmp_path, lines=half_made)
    assert not result.failed, failures(result)
    for host, router in frr_lab.hosts().items():
        assert result[host][1].change["state"] == "changed"
        text = running(frr_lab, router)
        assert not any(route in text for route in HALF), text
        assert f"description half-{host}" in text


# h1 removes 150 routes, the others 3: h1 is caught with part of its change made.
REMOVE_ON_H1 = LONG_ON_H1.replace("%}ip route", "%}no ip route")


@pytest.mark.parametrize(("runner", "task"),
                         [("threadpool", "send_config"), ("asyncio", "asend_config")])
def test_rerun_failed_completes_a_removal_a_deadline_stopped_in_the_middle(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, task: str,
    tmp_path: Path,
) -> None:
    """Each router holds the routes of LONG_ON_H1; a change removes them. r1's CLI stops
    (SIGSTOP) once it has lost part of them, and h1 fails at its deadline, interrupted during
    change. --rerun-failed sends only the removals left (the others FRR would refuse: ``%
    Refusing to remove a non-existent route``), and completes the change."""
    for router in restored:
        k = int(router[1:])
        configure(frr_lab, router, [f"ip route 198.18.{100 + k}.{i}/32 Null0"
                                    for i in range(150 if k == 1 else 3)])
    job, _, _ = hung_midway(frr_lab, tmp_path, runner, task, REMOVE_ON_H1)
    rows = records(tmp_path / "out.jsonl")
    assert rows["h1"]["change"]["state"] == "interrupted during change", rows["h1"]
    assert 0 < change_routes(frr_lab, "r1") < 150
    job.write_text(job.read_text().replace("task_timeout: 3", "task_timeout: 120"))
    again = run_cli(job, "--rerun-failed", "out.jsonl", "-o", "again.jsonl")
    assert again.returncode == 0, again.stdout + again.stderr
    assert records(tmp_path / "again.jsonl")["h1"]["change"]["state"] == "changed"
    assert change_routes(frr_lab, "r1") == 0
