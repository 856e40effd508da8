"""Jobs on a router lab, as a user runs them: a job file in a folder of its own (its records,
journal and backups beside it), run by ``nornir-bench run`` and timed from outside; the jobs
of a comparison run in turn, the lab's sessions gone and its routers put back after each."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from harness.alternation import alternate
from harness.jobs import read_records, run_job, write_job
from harness.lab import Lab
from harness.stats import Spread

__all__ = ["LabJobs", "Walls"]

BLOCKING_TASKS = ("send_command", "send_config")


class Walls:
    """A job's runs: their walls, and the hosts each left ok."""

    def __init__(self, runs: list[tuple[float, int]], hosts: int) -> None:
        self.walls = [wall for wall, _ in runs]
        self.oks = [ok for _, ok in runs]
        self.hosts = hosts

    @property
    def median(self) -> float:
        return Spread.of(self.walls).median

    def ok_text(self) -> str:
        """``30/30 of 30``: hosts ok in each run."""
        return "/".join(map(str, self.oks)) + f" of {self.hosts}"


class LabJobs:
    """Jobs in ``work`` on the inventories written there for ``lab``."""

    def __init__(self, lab: Lab, work: Path) -> None:
        self.lab, self.work = lab, work

    def job(self, name: str, inventory: str, task: str, params: dict[str, Any],
            **options: Any) -> Path:
        """A job file in ``work``/NAME, on the inventory ``work``/INVENTORY: ``task`` with
        ``params`` (a change's backups beside the job) on threadpool for a blocking task, else
        asyncio, 50 hosts in flight unless ``options`` say otherwise."""
        folder = self.work / name
        folder.mkdir()
        runner = "threadpool" if task in BLOCKING_TASKS else "asyncio"
        if "config" in task:
            params = {"backup_dir": str(folder / "backups"), **params}
        return write_job(folder / "job.yaml", inventory=self.work / inventory, runner=runner,
                         options={"num_workers": 50, **options}, task=task, params=params)

    def run(self, job: Path, records: Path) -> tuple[float, int]:
        """``nornir-bench run JOB -q -o RECORDS``: its wall and the hosts it left ok; then the
        lab's sessions gone."""
        took = run_job("run", str(job), "-q", "-o", str(records))
        self.lab.sessions_gone()
        return took.seconds, sum(not r["failed"] for r in read_records(records))

    def alternate(self, jobs: dict[str, Path], hosts: int, repeat: int,
                  restore: dict[str, str] | None = None) -> dict[str, Walls]:
        """Each job run ``repeat`` times, in turn (every other round backwards), the routers
        put back to ``restore`` after each run if given; each job's runs."""
        count = dict.fromkeys(jobs, 0)

        def one(name: str) -> tuple[float, int]:
            out = jobs[name].parent / f"run-{count[name]}.jsonl"
            count[name] += 1
            got = self.run(jobs[name], out)
            if restore is not None:
                self.lab.put_back(restore)
            return got

        runs = alternate({name: partial(one, name) for name in jobs}, repeat, mirror=True)
        return {name: Walls(runs[name], hosts) for name in jobs}
