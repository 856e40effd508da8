"""``nornir-bench run`` changing real routers (FRR behind OpenSSH, ``frr_lab``) from the command
line: where the backups go, and ``-e`` reaching the template, as root."""

from __future__ import annotations

import stat
from pathlib import Path

from nornir_bench.lab import RunningRouterLab
from nornir_bench.lab.vtysh import restore_config
from tests.runners.test_config_routers import change_job, records, run_cli_command, running


def put_back(lab: RunningRouterLab, before: dict[str, str]) -> None:
    for router, text in before.items():
        assert restore_config(lab.name, router, text), router


def private(folder: Path) -> bool:
    return stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_backups_go_to_the_jobs_backup_dir_or_next_to_the_records_readable_by_you_alone(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    """``backup_dir: mybackups`` is the job's folder's, run from anywhere; with none, the
    backups go to ``backups/`` beside the records ``-o`` names; each folder made is private."""
    jobs, elsewhere = tmp_path / "jobs", tmp_path / "elsewhere"
    jobs.mkdir()
    elsewhere.mkdir()
    job = change_job(frr_lab, jobs, "asyncio", refuse=[])
    text = job.read_text()
    job.write_text(text.replace(f"backup_dir: {jobs / 'backups'}", "backup_dir: mybackups"))
    done = run_cli_command("run", str(job), "-o", "one.jsonl", cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = records(elsewhere / "one.jsonl")
    assert {Path(r["change"]["backup"]).parent for r in rows.values()} == {jobs / "mybackups"}
    assert private(jobs / "mybackups") and not (elsewhere / "mybackups").exists()
    put_back(frr_lab, restored)
    job.write_text(text.replace(f"    backup_dir: {jobs / 'backups'}\n", ""))
    done = run_cli_command("run", str(job), "-o", str(tmp_path / "runs" / "two.jsonl"),
                           cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = records(tmp_path / "runs" / "two.jsonl")
    assert {Path(r["change"]["backup"]).parent for r in rows.values()} == {
        tmp_path / "runs" / "backups"
    }
    assert private(tmp_path / "runs" / "backups")


def test_e_sets_a_templates_variable_over_the_jobs(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    """The job's template refuses no host (``refuse: []``); ``-e refuse=h2`` makes h2's lines
    hold one FRR refuses: h2 fails, rolled back, the others change."""
    job = change_job(frr_lab, tmp_path, "asyncio", refuse=[])
    done = run_cli_command("run", str(job), "-o", "out.jsonl", "-e", "refuse=h2", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "from the command line: -e refuse='h2'" in done.stdout
    rows = records(tmp_path / "out.jsonl")
    assert {h: r["change"]["state"] for h, r in rows.items()} == {
        "h1": "changed", "h2": "rolled back", "h3": "changed"
    }
    assert running(frr_lab, "r2") == restored["r2"]
