"""--session-logs: ``nornir-bench run`` of ``show running-config`` on the ``--hosts`` hosts,
without and with ``--session-logs``, alternately; the best wall of each, and their ratio."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import harness
from harness.fleets import shared_out
from harness.jobs import read_records, run_job, write_job
from harness.lab import Lab
from harness.records import load_text

__all__ = ["session_logs_part"]


def session_logs_part(bench: harness.Bench, lab: Lab, folder: Path, fleet: Path, hosts: int,
                      runners: list[str], in_flight: int, repeat: int) -> None:
    """The same job run by ``nornir-bench run`` without and with ``--session-logs``,
    alternately, ``repeat`` times each; the best wall of each (from outside the process), and
    their ratio against the target (<= 1.1)."""
    print(f"\n### Session logs: {hosts} hosts, {in_flight} in flight, `show running-config`, "
          f"best of {repeat} (load {load_text()})\n")
    print("| runner | without: ok, wall s | with: ok, logs, wall s | with / without |")
    print("|---|---|---|---:|")
    for runner in runners:
        job = write_job(folder / f"show-{runner}.yaml", inventory=fleet, runner=runner,
                        options=shared_out(runner, in_flight),
                        task="send_command" if runner == "threadpool" else "asend_command",
                        params={"command": "show running-config"})
        said: dict[bool, str] = {}

        def one(logged: bool, job: Path = job, runner: str = runner,
                said: dict[bool, str] = said) -> float:
            out = folder / f"{runner}-{logged}.jsonl"
            out.unlink(missing_ok=True)
            done = run_job("run", str(job), "-o", str(out), "--quiet",
                           *(["--session-logs"] if logged else []), timeout=900)
            rows = read_records(out)
            ok = sum(not r["failed"] for r in rows)
            logs = sum(bool(r.get("session_log")) for r in rows)
            said[logged] = f"{ok}/{hosts}" + (f", {logs}" if logged else "") + (
                f" (exit {done.status})" if done.status else "")
            lab.sessions_gone()
            return done.seconds

        walls = harness.alternate({"without": partial(one, False), "with": partial(one, True)},
                                  repeat)
        without, with_logs = min(walls["without"]), min(walls["with"])
        ratio = with_logs / without
        print(f"| {runner} | {said[False]}, {without:.2f} | {said[True]}, {with_logs:.2f} | "
              f"{ratio:.2f} ({'met' if ratio <= 1.1 else 'MISSED'}) |")
        bench.record({"without": walls["without"], "with": walls["with"]},
                     part="session-logs", runner=runner, hosts=hosts, in_flight=in_flight)
