"""The hung-change part of scripts/bench_faults.py: a deadline in the middle of a change on a
hung device, on a router lab of its own (root).

A lab of ``routers`` FRR routers (:mod:`harness.lab`: a name of its own, stopped at the end, on
an error and on Ctrl-C; or the running lab ``--lab NAME``), one inventory host per router. Per
runner and task: a job changing every router from a Jinja2 template (h1: ``lines`` static
routes; the others 3, so that they end in time), ``task_timeout`` on the runner, each
exchange's own ``timeout`` 60 s, through ``nornir-bench run JOB -o records.jsonl`` in a process
of its own. Once r1 holds 10 of h1's lines, r1's vtysh is stopped (SIGSTOP), and continued
(SIGCONT) once the run ended or was killed.

From the records (``start``/``end``: seconds from the run's start, as the running process saw
them): h1's time from its start to its end, its exception and ``change.state``; the run's end
(its last record's) and the command's exit past h1's deadline (its start + ``task_timeout``;
target: within 2 s); how many records name their change's state. Each case's routers are put
back as they were before it (``restore_config``) and checked.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import harness
from harness.jobs import nornir_bench, read_records, write_job
from harness.lab import Lab, router_lab
from harness.owned import Child

CASES = [("threadpool", "send_config"), ("asyncio", "asend_config"), ("asyncio", "send_config"),
         ("processpool", "asend_config"), ("processpool", "send_config"),
         ("dask", "asend_config")]
CAUGHT_AT = 10  # r1's vtysh is stopped once r1 holds this many of h1's lines
EXCHANGE_TIMEOUT = 60  # each exchange's own timeout: far past the deadline
ATTEMPTS = 3  # runs of a case whose change ended before r1 was caught mid-change
CATCH_SECONDS = 90.0  # for r1 to hold CAUGHT_AT lines (dask's cluster starts first)
CASE_SECONDS = 240.0  # a run at most: past the exchange's timeout, the liveness bound
SESSIONS_SECONDS = 30.0  # for the lab's SSH sessions to end after a run
TARGET = 2.0  # seconds past h1's deadline the run may end
SHOW = "show running-config"
TEMPLATE = """\
{% set k = host.name[1:] | int %}
{% for i in range(LINES if k == 1 else 3) %}ip route 198.18.{{ 100 + k }}.{{ i }}/32 Null0
{% endfor %}
"""


def hung_change(bench: harness.Bench, work: Path, routers: int, lines: int,
                task_timeout: float, runners: list[str], attach: str | None) -> None:
    folder = work / "hung-change"
    folder.mkdir()
    print(f"\n## hung-change: {routers} routers, h1 changes {lines} static routes (the others "
          f"3), task_timeout {task_timeout:g} s, each exchange's timeout {EXCHANGE_TIMEOUT} s; "
          f"r1's vtysh stopped once r1 holds {CAUGHT_AT}", flush=True)
    with router_lab(routers, attach=attach, prefix="bf") as lab:
        lab.write_inventory(folder / "inventory", len(lab.ports))
        print(f"{lab.describe()}\n")
        print("| runner | task | exit | r1 held when stopped | h1 start to end s | h1 exception "
              "| h1 change.state | run's end past h1's deadline s | exit past it s | records "
              "naming a state | routers put back |")
        print("|---|---|---:|---:|---:|---|---|---:|---:|---:|---|")
        for runner, task in CASES:
            if runner in runners:
                row = _caught_case(lab, folder, runner, task, lines, task_timeout)
                print(f"| {runner} | {task} | {' | '.join(row)} |", flush=True)
                bench.record({"row": row}, part="hung-change", runner=runner, task=task,
                             lines=lines, task_timeout=task_timeout)


def _caught_case(lab: Lab, folder: Path, runner: str, task: str, lines: int,
                 task_timeout: float) -> list[str]:
    """The case's row, run again (at most :data:`ATTEMPTS` times in all) while the change
    ended before r1 could be caught holding :data:`CAUGHT_AT` of its lines: on a loaded
    machine one look at r1 can take longer than the whole change, and such a run measures
    no hung device. The row of the last attempt says so (``not stopped``)."""
    for attempt in range(1, ATTEMPTS + 1):
        row = _case(lab, folder, f"{runner}-{task}-{attempt}", runner, task, lines, task_timeout)
        if not row[1].endswith("(not stopped)"):
            break
    return row


def _case(lab: Lab, folder: Path, name: str, runner: str, task: str, lines: int,
          task_timeout: float) -> list[str]:
    case = folder / name
    case.mkdir()
    (case / "change.j2").write_text(TEMPLATE.replace("LINES", str(lines)))
    inventory = folder / "inventory"
    options: dict[str, Any] = {"num_workers": 10, "task_timeout": task_timeout}
    if runner == "dask":
        options["num_procs"] = 1  # its embedded cluster: one worker process
    write_job(case / "job.yaml", inventory=inventory, runner=runner, options=options, task=task,
              params={"template_file": "change.j2", "backup_dir": str(case / "backups"),
                      "timeout": EXCHANGE_TIMEOUT}, logging=True)
    before = lab.configs()
    records = case / "records.jsonl"
    command = nornir_bench("run", "job.yaml", "-q", "-o", str(records))
    stopped: list[int] = []
    try:
        with Child(command, case, "run") as child:
            held = _caught(lab, child, lines)
            if CAUGHT_AT <= held < lines:
                stopped = lab.session_clis("r1")
                _signal(stopped, signal.SIGSTOP)
            status = child.wait(CASE_SECONDS)
            exited = time.time()
    finally:
        _signal(stopped, signal.SIGCONT)
        put_back = _put_back(lab, before)
    exit_text = "HANG (killed)" if status is None else str(status)
    held_text = str(held) if stopped else f"{held} (not stopped)"
    back = "yes" if put_back else "NO"
    if not records.exists() or not records.read_text().strip():
        return [exit_text, held_text, *["no records"] * 7, back]
    return [exit_text, held_text, *_figures(records, task_timeout, exited), back]


def _figures(records: Path, task_timeout: float, exited: float) -> list[str]:
    rows = read_records(records)
    h1 = next((r for r in rows if int(r["host"][1:]) == 1), None)
    unnamed = [r for r in rows if not (r.get("change") or {}).get("state")]
    states = f"{len(rows) - len(unnamed)} of {len(rows)}" + "".join(
        f"; {r['host']}: {r['exception'] or 'ok'}" for r in unnamed)
    if h1 is None:
        return ["no record of h1", "", "", "", "", "", states]
    deadline = h1["start"] + task_timeout
    run_end = max(r["end"] for r in rows) - deadline
    exit_past = exited - datetime.fromisoformat(h1["run_start"]).timestamp() - deadline
    target = "met" if run_end <= TARGET else "MISSED"
    return [f"{h1['end'] - h1['start']:.2f}", h1["exception"] or "none (ok)",
            str((h1.get("change") or {}).get("state")), f"{run_end:+.2f} ({target})",
            f"{exit_past:+.2f}", states]


def _caught(lab: Lab, child: Child, lines: int) -> int:
    """r1's count of h1's lines, once it holds CAUGHT_AT of them, all of them, or the run
    ended (or CATCH_SECONDS passed)."""
    ends = time.monotonic() + CATCH_SECONDS
    held = 0
    while child.process.poll() is None and time.monotonic() < ends:
        held = _routes(lab, "r1")
        if held >= CAUGHT_AT:
            break
        time.sleep(0.02)
    return held


def _routes(lab: Lab, router: str) -> int:
    prefix = f"ip route 198.18.{100 + int(router[1:])}."
    return sum(line.startswith(prefix) for line in lab.vtysh(router, SHOW).splitlines())


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, sig)


def _put_back(lab: Lab, before: dict[str, str]) -> bool:
    """Once the run's sessions ended, every router back to ``before``: whether each is."""
    lab.sessions_gone(SESSIONS_SECONDS)
    return lab.put_back(before)
