"""The scripts of scripts/ still run, each once on the smallest input that exercises its code
(``--quick``), and print their figures and records: docs/benchmarks.md tells users to re-run
them, and a script reaching into a private name, or printing nothing useful, breaks silently
otherwise. Only the shape of what they print is checked, never a figure: timings belong to the
benchmarks, not to the tests. The router scripts run on the module's router lab (``--lab``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from nornir_bench.lab import new_lab_name
from nornir_bench.lab._system import LabState, process_started
from tests.netconf_lab import skip_without_netconf_lab
from tests.routers import skip_without_router_lab
from tests.waiting import HANG_GUARD

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
RECORD_KEYS = {"script", "at", "commit", "machine", "parameters", "figures"}

N = r"[\d.,]+"  # a figure: these are benchmarks, only their shape is checked
SIGNED = r"[+-][\d.,]+"
SPREAD = rf"{N} \({N}-{N}\)"  # median (min-max)
MET = r"\((met|MISSED)\)"


class Quick(NamedTuple):
    """A script's quick run: its options beyond ``--quick``, what it needs (``routers``: the
    module's router lab, by ``--lab``; ``labs``: to start router labs of its own, their start
    and stop being what it measures; ``netns``: network namespaces of its own; ``netconf``: a
    NETCONF lab of its own), the lines it
    must print (regexes, one line each), and whether it writes records (``--record``)."""

    id: str
    args: list[str]
    lines: list[str]
    needs: str = ""
    records: bool = True


QUICK = [
    Quick("bench_advise", ["bench_advise.py"], [
        r"## synthetic-50",
        rf"\| 1 \| {N} \(advise {N} s\) \| \w+, {N} on {N} \| {SPREAD} \| {N} \| "
        rf"{SIGNED} % \| (yes|no) \|",
        rf"median off {SIGNED} %, worst {N} % \(target 10 %: (met|MISSED)\); inside the range "
        r"[01] of 1 \(target 4 of 5\)",
    ]),
    Quick("bench_asyncio", ["bench_asyncio.py", "--memory", "--loops", "asyncio"], [
        r"## 200 hosts, RTT 10 ms, median of 1 \(min-max\)",
        rf" asyncio: floor {N} s \({N}-{N}\)  runner {N} s \({N}-{N}\)  runner/floor {N}",
        rf" +runner: peak RSS {N} MiB, run added {N} MiB = {N} bytes/host",
    ]),
    Quick("bench_backup", ["bench_backup.py"], [
        rf"fleet: 100 configurations, {N} MB",
        *(rf"\| {side} \| {N} \| {SPREAD} \| {SPREAD} \| <= 5 {MET} \|"
          for side in ("pygit2", "dulwich", "GitPython", "git add -A && git commit",
                       r"nornir-bench \(pygit2, all hosts given\)")),
        rf"\| pygit2 \| {N} \| {N} \| {N} \| {N} \| <= 2 {MET} \|",
    ]),
    Quick("bench_bastion", ["bench_bastion.py"], [
        rf"\| asyncio \| asend_command \| 6/6 \| 6/6 \| {N} \| {N} \| {N} {MET} "
        r"\| 1 a run \|",  # one bastion connection shared by its sessions
    ], needs="routers"),
    Quick("bench_bastion-down", ["bench_bastion.py", "--down"], [
        rf"\| threadpool \| send_command \| 6/6 \| 1 \| {N} \| {N} {MET} \|",
        rf"\| asyncio \| asend_command \| 6/6 \| 1 \| {N} \| {N} {MET} \|",
    ]),
    Quick("bench_checks", ["bench_checks.py"], [
        rf"\| broken-bgp \| r1 reverted \(run {N} s\) \| change.state rolled back; running "
        r"config byte-identical \| rolled back, identical \(met\) \|",
        rf"\| broken-bgp \| break to r2's session Established \| {N} s .* \| <= 30 s .* \|",
        r"\| broken-bgp \| later routers touched \| 0 of 2 \(2 RunAborted\) \| 0 \(met\) \|",
        rf"\| sigkill \| SIGKILL {N} s after start, all 3 pending; recover {N} s \| 3/3 "
        r"routers byte-identical to before \| 3/3 \(met\) \|",
        r"\| sigkill \| journal's last entry per host / recover records \| 3/3 reverted / "
        r"3/3 'rolled back' \| all \(met\) \|",
        rf"\| overhead \| .* \| {N} s \(6 of 6 ok\) / {N} s \(6 of 6 ok\) = {N} \| .* \|",
        rf"\| parse \| asend_command .* \| {N} s \(6 of 6 ok\) / {N} s \(6 of 6 ok\) = "
        rf"{N} \| .* \|",
    ], needs="routers"),
    Quick("bench_compliance", ["bench_compliance.py"], [
        rf"\| asyncio \| {N} s \(6 of 6 ok; 6 drifted\) \| {N} s \(6 of 6 ok\) \| "
        rf"{N} \| <= 1.2 {MET} \|",
    ], needs="routers"),
    Quick("bench_connections", ["bench_connections.py"], [
        # connections kept across the steps: a login per device; a login per step otherwise
        rf"\| asyncio \| asend_command \| kept \| 2 \| 2 \| {N} \|  \| {N} % \|",
        rf"\| asyncio \| asend_command \| reconnect \| 2 \| 6 \| {N} \| {N} \| {N} % \|",
        rf"\| processpool \| send_command \| kept \| 2 \| 2 \| {N} \|  \| in workers \|",
        rf"\| processpool \| send_command \| reconnect \| 2 \| 6 \| {N} \| {N} \| in workers \|",
        rf"\| processpool, kept workers \| {N} \| {N} \| {N} \| {N} \| {N} \| 2 \| 0 \|",
        rf"\| processpool, keep_workers=False \| {N} \| {N} \| {N} \| {N} \| {N} \| 0 \| 0 \|",
    ]),
    Quick("bench_core", ["bench_core.py"], [
        r"200 hosts, medians \(min-max\) of 1",
        rf"\| processpool asim_rtt 50 ms, kept run \(s\) \| {SPREAD} \|",
        rf"\| asyncio no-op, 1000 workers \(us/host\) \| {SPREAD} \|",
    ]),
    Quick("bench_crashes", ["bench_crashes.py"], [
        r"200 hosts, 2\.0% crash their worker at the start of their task, .*",
        # every host in the result, and each of the 4 crashers failed
        rf" *exit: ended, run {N} s \(process {N} s\); hosts present 200, finished 200; "
        rf"failed: 4 of 4 crashers, \d+ of 196 innocent .*",
    ]),
    Quick("bench_dask", ["bench_dask.py"], [
        r"## noop: an async no-op task on 400 hosts, warm \(median of 1\)",
        rf"\| dask, 1 x 20 \| {N} s \| {N} µs \|",
    ]),
    Quick("bench_devices", ["bench_devices.py"], [
        rf"\| real: `atcp_ping\(probe=\"ping\"\)` \| 200 / 0 \| {N} \({N}–{N}\) \| .*",
        rf"real / simulated: {N} \(target <= 4\); real / bare sockets: {N}",
    ]),
    Quick("bench_faults", ["bench_faults.py"], [
        r"bench_faults: parts dask-connections, hung-change, ctrl-c; nornir_bench of commit .*",
        # connections kept across the three runs: one login per host, whatever the timings
        rf"dask-connections: runs 1, hangs 0, failures 0, logins per run 40 \(1 runs\), "
        rf"wall median {N} s, max {N} s, processes left 0",
        *(rf"\| {runner} \| {task} \| 1 \| \d+ \| {N} \| TaskTimeout \| interrupted during "
          rf"change \| {SIGNED} {MET} \| {SIGNED} \| 3 of 3 \| yes \|"
          for runner, task in (("threadpool", "send_config"), ("asyncio", "asend_config"))),
        *(rf"\| {runner} \| 130 \| {N} \| {N} \| \d+ \| \d+ \| 0 \| .* \| \d+ \|"
          for runner in ("threadpool", "asyncio")),
    ], needs="routers"),
    Quick("bench_host_keys", ["bench_host_keys.py"], [
        r"\| threadpool \| send_command \| strict \| none \| 0 \| HostKeyUnknown \|",
        r"\| asyncio \| asend_command \| accept-new \| another key \| 0 \| HostKeyMismatch \|",
        r"\| processpool \| send_command \| strict \| another key \| 0 \| HostKeyMismatch \|",
        rf"\| 600 \| 600 \| 600 \| 0 \| 600 lines, 0 duplicates \(met\) \| {N} s \|",
        rf"\| asend_command \| asyncio \| {N} \| {N} \| {SIGNED} \|",
    ]),
    Quick("bench_inventory", ["bench_inventory.py", "--million"], [
        rf"synthetic +1,000 hosts: +{N} ms \(min {N}, max {N}\)",
        rf"SimpleInventory +100 hosts: +{N} ms \(min {N}, max {N}\)",
        rf"synthetic 1k / SimpleInventory 0.1k = {N} \(target < 1\)",
        rf"synthetic 10,000 hosts: load {N} s, peak RSS {N} MiB .*",
    ]),
    Quick("bench_memory", ["bench_memory.py"], [
        r"2 runs in one process, 200 hosts, 10% failing, RTT 0; .*",
        # the process stays flat: as many threads and open files after the last run
        *(rf" *{runner}: RSS {N} -> {N} MiB \(.*\); objects {N} -> {N} \(.*\); "
          rf"threads (\d+) -> \1, fds (\d+) -> \2; run {N} s median"
          for runner in ("threadpool", "asyncio")),
    ]),
    Quick("bench_million", ["bench_million.py"], [
        rf"\| floor \| {SPREAD} \| 1.00 \| {N} MiB \| {N} \| {N} \|",
        rf"\| processpool \(\S+\) \| {SPREAD} \| {N} \| {N} MiB \| {N} \| {N} \|",
    ]),
    Quick("bench_mixed", ["bench_mixed.py", "--killed-worker"], [
        # every host back and ok on each row; the worker's death heard, whatever the timings
        rf"\| 2 workers x 50 \| {N} s \| {N} s \| {N} s \| - \| 200 / 0 \| {N} \|",
        rf"\| 1 worker x 50 \| {N} s \| {N} s \| {N} s \| - \| 200 / 0 \| 1\.00 \|",
        rf"\| 2 workers x 50, one SIGKILLed 0\.5 s in \| {N} s \| {N} s \| {N} s \| "
        rf"{N} ms \| 200 / 0 \| {N} \|",
        rf"killed / one worker: {N} \(target <= 1.3: (met|MISSED)\)",
    ]),
    Quick("bench_mixed-runners", ["bench_mixed.py"], [
        rf"200 hosts, 100 in flight, 1 in 10 taking 0\.5 s, the others 0\.1 s: ideal {N} s",
        *(rf"{runner} +{N} s +{N} x ideal  failed 0" for runner in ("threadpool", "asyncio")),
    ]),
    Quick("bench_netconf", ["bench_netconf.py"], [
        r"4 hosts on 2 netconfd servers, 2 <get-config> each, 10 at once; medians \(min-max\) "
        r"of 1",
        rf"\| ncclient as shipped \(TICK 0\.1 s\), threads \| {SPREAD} \| {SPREAD} \| {N} \|",
        rf"\| netconf_get_config, threadpool \| {SPREAD} \| {SPREAD} \| {N} \|",
        rf"\| anetconf_get_config, asyncio \| {SPREAD} \| {SPREAD} \| {N} \|",
        rf"\| scrapli-netconf, asyncssh \(\+0\.2 s after open\) \| {SPREAD} \| {SPREAD} \| "
        rf"{N} \|",
    ], needs="netconf"),
    Quick("bench_netconf-change", ["bench_netconf.py", "--change"], [
        r"2 hosts on 2 netconfd servers, 2 changes in a row each, 10 at once; medians "
        r"\(min-max\) of 1",
        *(rf"\| {client}, {kind} \| {SPREAD} \| {SPREAD} \| {N} \|"
          for kind in ("plain", "confirmed")
          for client in (r"ncclient \(TICK 0\.01 s\), threads",
                         r"ncclient \(TICK 0\.001 s\), threads",
                         "netconf_edit_config, threadpool", "anetconf_edit_config, asyncio",
                         r"scrapli-netconf, asyncssh \(\+0\.2 s after open\)")),
        rf"idle: 10 ncclient sessions open, 1 s: TICK 0\.01 s {N}% of a core, TICK 0\.001 s "
        rf"{N}% of a core",
    ], needs="netconf"),
    Quick("bench_netconf_change", ["bench_netconf_change.py"], [
        r"bench_netconf_change: 4 hosts over 2 netconfd servers, 1 rounds; .*",
        *(rf"\| {runner} \| {SPREAD} \| {SPREAD} \| {SPREAD} \| {SPREAD} \| {SPREAD} \| {N} \| "
          rf"{N} \| {N} \| <= 1\.5 {MET} \|" for runner in ("threadpool", "asyncio")),
        rf"sigkill: 2 servers each pending: True; back byte for byte: 2/2, the last {N} s after "
        rf"the SIGKILL \(<= 665 s \(met\)\); recover: exit 0, nothing to send for 2, servers "
        r"unchanged 2/2 \(all \(met\)\)",
    ], needs="netconf"),
    Quick("bench_open_files", ["bench_open_files.py"], [
        r"hard: 300 hosts in flight",
        rf" +asyncio +\S+: {N} s, 300/300 ok; said: .*in flight.*",
    ]),
    Quick("bench_parent", ["bench_parent.py"], [
        r"200 hosts, task noop, kept workers \(2 processes\), µs a host, median of 1",
        rf"\| settle \| {N} \|",
    ]),
    Quick("bench_policies", ["bench_policies.py"], [
        r"## 1\. Untriggered policies: no-op task on 300 hosts in 100 groups, .*",
        r"## 2\. max_starts_per_second: 2000 on 300 hosts, .*",
        r"## 3\. group_limits: \{group: 5\} on 300 hosts in 100 groups, .*",
        r"## 4\. 20 hosts on a loopback port that accepts and never answers, .*",
        # limits that must hold, whatever the timings: no group above 5 hosts in flight,
        # every hung host failed by its deadline and nothing left once the peer closed
        *(rf"\| {runner} \| \d+ \| {N} \| [0-5] \| \d+ of 100 \| 5 \| yes \|"
          for runner in ("threadpool", "asyncio", "processpool")),
        *(rf"\| {runner} \| \d+ \| {N} \| {N} \| {N} \| .* \| 20 of 20 \(\d+\) \| .* \| "
          r"0 thr, 0 proc \(0 thr\) \(.*\) \|"
          for runner in ("threadpool", "asyncio", "processpool")),
    ]),
    Quick("bench_process", ["bench_process.py"], [
        r"## whole process, 200 hosts, RTT 10 ms, median of 1 \(min-max\); .*python.*",
        *(rf" *{runner} +{workers} workers: wall {N} s \({N}-{N}\), user {N} s, "
          rf"sys {N} s, cpu {N} %" for runner, workers in (("threadpool", 50), ("asyncio", 200))),
    ]),
    Quick("bench_processpool", ["bench_processpool.py"], [
        r"## CPU-bound: parse_interfaces \(TextFSM\) on 20 hosts, \d+ CPUs",
        rf" +the ceiling, a plain CPU loop: {N} x \(\d+ processes / 1; {N}-{N}\)",
        r"## asim_rtt 50 ms on 20 hosts, all in flight",
        rf" +processpool / asyncio: {N} \(target <= 1\.5\)",
        rf" +threadpool, 20 workers: +{N} s \({N}-{N}\) = {N} µs/host",
    ]),
    Quick("bench_report", ["bench_report.py"], [
        rf"report: {N} s, peak RSS {N} MiB, page {N} MB",
        rf"\| diff_s \| {N} \| <= 5 {MET} \|",
    ]),
    Quick("bench_routers", ["bench_routers.py"], [
        r"bench_routers: parts logins, memory, fleet, changes, session-logs, dead-cli; .*",
        *(rf"\| {client} \| 4 / 0 \| {N} \| .*" for client in ("netmiko", "scrapli")),
        rf"\| total, session processes \| \d+ \| {N} \| {N} \|",
        r"\| asyncio \(num_workers 200\) \| asend_command \| none \| 6 / 0 \| .*",
        r"\| --check \| .* \| 3/3 diffs exactly the 2 lines; 3/3 running configurations "
        r"byte-identical \| all \(met\) \|",
        r"\| --rerun-failed \| .* \| ran r2, r3 \| r2 \.\. r3 only \(met\) \|",
        rf"\| asyncio \| 6/6, {N} \| 6/6, 6, {N} \| {N} {MET} \|",
        *(rf"\| {driver} \| \d/1 {MET} \| .*" for driver in ("netmiko \\(threadpool\\)",
                                                               "scrapli \\(asyncio\\)")),
    ], needs="routers"),
    Quick("bench_routers-lab-times", ["bench_routers.py", "--lab-times"], [
        rf"\| run 1 \| {N} \| {N} \| {N} \| {N} \| 0 \(none\).* \|",
        rf"\| new lab stopped \(its own: {N} s\); left \| {N} \| 0 \(none\).* \|",
    ], needs="labs"),
    Quick("bench_runners", ["bench_runners.py"], [
        r"## per-host cost, no-op task, 200 hosts, median of 1 \(min-max\), µs/host",
        *(rf"workers={w}:  serial {SPREAD}  threaded {SPREAD}  threadpool {SPREAD}  "
          rf"threadpool/threaded = {N}" for w in (20, 1000)),
        r"## sim_rtt 10 ms, 200 hosts, 50 workers; ideal ceil\(N/W\)\*RTT = 0\.040 s",
        *(rf" *{runner}: {N} s \(min {N}, max {N}\)  = {N} x ideal"
          for runner in ("bare-threads", "threaded", "threadpool")),
    ]),
    # two sites, each a namespace with its devices and a Dask worker that cannot reach the
    # other's: every host ok on a worker of its own site, site c's (no worker) failed naming it
    Quick("bench_sites", ["bench_sites.py"], [
        *(rf"\| {site} \| 20/20 \| 20/20 \| {N} s, exit 1 \|" for site in ("a", "b")),
        r"\| c \| failed naming the site: 4/4 \| other failures: 0 \| - \|",
    ], needs="netns"),
    Quick("bench_startup", ["bench_startup.py"], [
        r"## start-up, ms: min / median of 1 runs; .*",
        rf"\| python -c pass \(floor\) \| {N} / {N} \|",
        rf"\| script.py 1000 0.05 --hosts 100 \| {N} / {N} \|",
    ]),
    Quick("mutate", ["mutate.py"], [
        r"masking: records are masked before they are JSON-encoded \(.*\)",
    ], records=False),
    Quick("soak", ["soak.py"], [
        r"soak: rounds 1 x tests 1 \(conformance\) on threadpool; busy processes 0, "
        r"cores \d+; round timeout 1800 s",
        rf"round 1/1 threadpool: passed 1, failed 0, hangs 0, leftovers 0, {N} s",
        r"rounds 1, tests 1, failures 0, hangs 0, leftovers 0",
    ]),
]


def test_every_script_has_its_quick_run() -> None:
    """Each script of scripts/ is run here, but script.py (the package's own command, tested
    with the command line) and the tools needing what CI has not (nornir_suite)."""
    scripts = {path.name for path in SCRIPTS.glob("*.py")} - {"script.py"}
    assert scripts == {quick.args[0] for quick in QUICK}


@pytest.mark.timeout(420)
@pytest.mark.parametrize("quick", QUICK, ids=[quick.id for quick in QUICK])
def test_a_script_runs_quick_and_prints_its_figures(
    quick: Quick, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    records = tmp_path / "records.jsonl"
    command = [sys.executable, str(SCRIPTS / quick.args[0]), *quick.args[1:], "--quick",
               "--record", str(records)]
    if quick.needs in ("routers", "labs"):
        skip_without_router_lab()
    if quick.needs == "routers":
        command += ["--lab", request.getfixturevalue("frr_lab").name]
    if quick.needs == "netconf":
        skip_without_netconf_lab()
    if quick.needs == "netns" and (os.geteuid() != 0 or shutil.which("ip") is None):
        pytest.skip("network namespaces need root and iproute2")
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    for line in quick.lines:
        assert re.search(f"^{line}$", done.stdout, re.M), f"no line matches {line}\n{done.stdout}"
    written = [json.loads(row) for row in records.read_text().splitlines()] if (
        records.exists()) else []
    assert bool(written) == quick.records, written
    for row in written:
        assert set(row) == RECORD_KEYS and row["script"] == Path(quick.args[0]).stem, row


def test_a_child_program_past_its_time_is_stopped_as_by_ctrl_c_before_it_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child stopped as by Ctrl-C closes its sessions and puts back a change in flight (on a
    lab the next test shares); killed outright, it could not."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    from harness.child import ChildFailed, run_child

    said = tmp_path / "said"
    with pytest.raises(ChildFailed, match=r"^tests\.stopped_child: not done within 3 s: stopped$"):
        run_child("tests.stopped_child", {"path": str(said), "seconds": HANG_GUARD}, timeout=3,
                  cwd=SCRIPTS.parent)
    assert said.read_text() == "ready\ninterrupted\n"


def test_lab_naming_the_state_a_killed_lab_left_is_refused_at_once(tmp_path: Path) -> None:
    """Its owner is gone, so that lab will never be ready: one line and exit 2 now, not the
    wait for a lab still starting (60 s)."""
    skip_without_router_lab()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=HANG_GUARD, check=True)
    name = new_lab_name()
    state = LabState(name, int(gone.stdout), [], "nobody", "", "", {}, sshd_pid=1,
                     owner_started=0)
    try:
        state.save()
        done = subprocess.run(
            [sys.executable, str(SCRIPTS / "bench_checks.py"), "--quick", "--lab", name],
            cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD,
        )
    finally:
        state.path.unlink(missing_ok=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(f"argument --lab: no router lab named {name!r} is running "
                                f"(nornir-bench lab --routers N --name {name} starts one)\n")


def test_the_soak_counts_no_namespace_of_a_lab_another_session_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A router lab another session starts during a round (its owner alive once the round's
    processes are killed) is no leftover of the round; a namespace no live lab owns is."""
    skip_without_router_lab()
    monkeypatch.syspath_prepend(str(SCRIPTS))
    from soak import Round, Soak

    soak = Soak()
    name = new_lab_name()
    live, left = f"nb-{name}-r1", f"nb-{name}x-r1"
    state = LabState(name, os.getpid(), [live], "nobody", "", "", {},
                     owner_started=process_started(os.getpid()))
    try:
        state.save()
        for namespace in (live, left):
            subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=HANG_GUARD)
        result = Round()
        soak.add(1, 1, "threadpool", result)
        assert result.leftovers == [f"network namespace {left}"]
        assert "left: network namespace" in capsys.readouterr().out
    finally:
        state.path.unlink(missing_ok=True)
        for namespace in (live, left):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True,
                           timeout=HANG_GUARD)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--rounds", "0"], "argument --rounds: must be a whole number >= 1, got '0'"),
        (["--runners", "threadpool,trio"], "argument --runners: runners must be among "
         "threadpool,asyncio,asyncio-uvloop,processpool,dask,threaded,serial,other, got "
         "'threadpool,trio'"),
        (["--runners", "serial", "--tests", "conformance"], "no test of conformance on serial"),
    ],
    ids=["rounds", "runners", "nothing-selected"],
)
def test_the_soak_refuses_what_it_cannot_run_in_one_line(
    options: list[str], error: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "soak.py"), *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"soak.py: error: {error}\n")


@pytest.mark.parametrize(
    ("script", "options", "error"),
    [
        ("bench_core.py", ["--repeat", "0"], "argument --repeat: must be a whole number >= 1, "
         "got '0'"),
        ("bench_runners.py", ["--rtt", "-0.5"], "argument --rtt: must be a number >= 0, "
         "got '-0.5'"),
        ("bench_crashes.py", ["--rate", "much"], "argument --rate: must be a number >= 0, got "
         "'much'"),
        ("bench_routers.py", ["--lab", "nosuchlab"], "argument --lab: no router lab named "
         "'nosuchlab' is running (nornir-bench lab --routers N --name nosuchlab starts one)"),
        ("bench_netconf.py", ["--change", "--hosts", "4"], "--change takes one host a server: "
         "give --servers, not --hosts"),
    ],
    ids=["count", "negative", "not-a-number", "no-lab", "change-hosts"],
)
def test_a_script_refuses_a_count_or_number_out_of_range_in_one_line(
    script: str, options: list[str], error: str, tmp_path: Path
) -> None:
    """The harness's option types: the script does not run on a zero or a negative value, nor
    wait for a lab that was never started."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / script), "--quick", *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"{script}: error: {error}\n")


MINIATURE_CONFTEST = """
import pytest
from nornir.core import Nornir
from nornir.core.inventory import Defaults, Groups, Host, Hosts, Inventory
from nornir.plugins.runners import SerialRunner


@pytest.fixture(scope="session", autouse=True)
def nornir():
    defaults = Defaults()
    hosts = Hosts({name: Host(name, defaults=defaults) for name in ("h1", "h2", "h3")})
    return Nornir(Inventory(hosts=hosts, groups=Groups(), defaults=defaults), runner=SerialRunner())
"""

MINIATURE_TESTS = """
from nornir.plugins import runners
from nornir.plugins.runners import ThreadedRunner


def hello(task):
    return task.host.name


def test_on_the_sessions_nornir(nornir):
    assert not nornir.run(task=hello).failed


def test_on_a_runner_it_builds(nornir):
    assert not nornir.with_runner(ThreadedRunner(num_workers=2)).run(task=hello).failed


def test_that_fails(nornir):
    assert nornir.run(task=hello)["h1"].result == "h2"


def test_on_a_runner_the_swap_misses(nornir):
    assert not nornir.with_runner(runners.SerialRunner()).run(task=hello).failed
"""


def test_the_nornir_suite_tool_swaps_each_runner_in_and_counts(tmp_path: Path) -> None:
    """scripts/nornir_suite/run.py on a miniature of nornir's tests: the same fixture, the same
    runner classes built in a test module."""
    tests = tmp_path / "nornir" / "tests"
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    (tests / "conftest.py").write_text(MINIATURE_CONFTEST)
    (tests / "test_miniature.py").write_text(MINIATURE_TESTS)
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "nornir_suite" / "run.py"), "--nornir-tests",
         str(tests.parent), "--runners", "nornir,threadpool"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    summary = [line for line in done.stdout.splitlines() if not line.startswith("left out")]
    assert summary == [
        "nornir: 3 passed of 4",
        "threadpool: 2 passed of 4",
        "  nornir: test_miniature.py::test_that_fails failed: call: AssertionError: assert 'h1' "
        "== 'h2'",
        "  threadpool: test_miniature.py::test_that_fails failed: call: AssertionError: assert "
        "'h1' == 'h2'",
        "  threadpool: test_miniature.py::test_on_a_runner_the_swap_misses failed: teardown: "
        "AssertionError: nr.run ran on ['SerialRunner'], not on the swapped-in threadpool runner",
    ], done.stdout + done.stderr


def test_the_mutation_check_still_applies_to_the_code(tmp_path: Path) -> None:
    """scripts/mutate.py (minutes: run by hand) names code to break and tests to run: a
    mutation whose text changed, or a test renamed, would go unnoticed until the next run."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "mutate.py"), "--list"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr  # every old text found exactly once
    lines = done.stdout.splitlines()
    names = {line.split(":")[0] for line in lines if not line.startswith(" ")}
    assert names >= {
        "masking", "crash-isolation", "task-timeout", "retry-never", "retry-never-subtask",
        "dask-credentials", "login-pace",
    }
    tests = sorted({line.strip() for line in lines if line.startswith("    tests/")})
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tests],
        cwd=SCRIPTS.parent, capture_output=True, text=True, timeout=120,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
