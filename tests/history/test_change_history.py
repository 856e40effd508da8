"""A change run keeping its history, on real routers (``frr_lab``): with a repository named
(``nornir-bench run --repo DIR``, or the job's ``output: {repo: DIR}``) the configurations the
change read are committed, before (only where the repository's file differs) and after, on
every runner (the configurations travel back from processpool's and Dask's workers); a job's
``output.repo`` is where ``nornir-bench backup`` commits; and the faults: a repository held by
another run or not one stops the run before any device, a commit refused after the change
says the change was made."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pygit2
import pytest

from nornir_bench.history.lock import holding
from nornir_bench.lab import RunningRouterLab
from tests.cli.test_backup_routers import (
    ROUTE,
    backup,
    backup_job,
    commits,
    committed,
    configure,
)
from tests.history.full_disk import on_full_disk
from tests.history.test_backup_faults import one_line_error, valid
from tests.runners.test_config_routers import (
    change_job,
    lab_job,
    records,
    run_cli,
    run_cli_command,
    running,
)


def files(repo: Path, commit: int = 0) -> dict[str, str]:
    """Each host's file in the ``commit``-th newest commit."""
    tree = commits(repo)[commit].tree
    return {entry.name: entry.read_raw().decode() for entry in tree}


def assert_runs(lab: RunningRouterLab, repo: Path) -> None:
    """The last commit's files are what the routers run now, as a backup reads them."""
    for host, router in lab.hosts().items():
        assert committed(repo, f"{host}.cfg").strip() == running(lab, router).strip(), host


@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool", "dask"])
def test_a_change_run_commits_the_drift_before_it_and_what_the_routers_run_after_it(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, runner: str,
) -> None:
    """Backed up; r1 drifts (a route added by hand); a change on every router, h2's refused
    and rolled back: a commit of h1's drift alone, then one of the configurations the change
    read back. Run again, nothing differs: no commit."""
    repo = tmp_path / "history"
    assert backup(backup_job(frr_lab, tmp_path, "asyncio", "abackup_config"), repo).returncode == 0
    backed_up = files(repo)
    configure(frr_lab, "r1", ROUTE)
    job = change_job(frr_lab, tmp_path, runner, refuse=["h2"])
    by_job = runner == "asyncio"  # the job's output.repo; the others give --repo
    if by_job:
        job.write_text(job.read_text() + "output: {repo: history}\n")
    done = run_cli(job, "-o", "out.jsonl", "--quiet", *(() if by_job else ("--repo", str(repo))))
    assert done.returncode == 1, done.stdout + done.stderr  # h2 failed: rolled back
    states = {h: r["change"]["state"] for h, r in records(tmp_path / "out.jsonl").items()}
    assert states == {"h1": "changed", "h2": "rolled back", "h3": "changed"}
    after, before, first = commits(repo)
    shown = "history" if by_job else str(repo)
    assert f"{shown}: commit {str(before.id)[:12]} before the change: 1 host differed" \
        in done.stdout
    assert f"{shown}: commit {str(after.id)[:12]} after the change: " in done.stdout

    assert before.message == ("before change: 1 host differed from the last backup (job "
                              "change.yaml)\n\ndiffered: h1\n")
    drifted = files(repo, 1)
    assert ROUTE in drifted["h1.cfg"] and "203.0.113.1/32" not in drifted["h1.cfg"]
    assert {k: v for k, v in drifted.items() if k != "h1.cfg"} == \
        {k: v for k, v in backed_up.items() if k != "h1.cfg"}

    summary, _, *lines = after.message.splitlines()
    assert summary == "change: 2 hosts changed, 1 rolled back, 0 failed (job change.yaml)"
    assert lines[0] == "changed: h1, h3"
    assert lines[lines.index("rolled back:") + 1].startswith(
        "  h2: ConfigChangeFailed: line 5 of 5 refused: 'ip routx 198.51.100.0/24'")
    assert "203.0.113.1/32" in files(repo)["h1.cfg"] and ROUTE in files(repo)["h1.cfg"]
    assert_runs(frr_lab, repo)
    valid(repo)

    if runner == "threadpool":  # again: h1 and h3 have nothing to change, h2 rolls back
        again = run_cli(job, "-o", "again.jsonl", "--quiet", "--repo", str(repo))
        assert again.returncode == 1, again.stdout + again.stderr
        assert [c.id for c in commits(repo)] == [after.id, before.id, first.id]
        assert f"{repo}: no commit before the change: " in again.stdout
        assert f"{repo}: no commit after the change: " in again.stdout


SECRET_TEMPLATE = """\
router bgp {{ 65000 + host.name[1:] | int }}
 neighbor {{ peers[host.name] }} password {{ secret }}-{{ host.name }}
"""


def secret_job(lab: RunningRouterLab, folder: Path, secret: str) -> Path:
    """A change giving each router's first BGP peer the password ``secret``-HOST."""
    (folder / "secret.j2").write_text(SECRET_TEMPLATE)
    peers = {host: next(iter(lab.bgp_at_ready[router])) for host, router in lab.hosts().items()}
    return lab_job(lab, folder, "asyncio",
                   "    template_file: secret.j2\n"
                   f"    variables: {{peers: {peers}, secret: {secret}}}\n"
                   f"    backup_dir: {folder / 'backups'}\n")


def every_text(repo: Path) -> str:
    """Every blob, commit message and ref of the repository, as text."""
    found = pygit2.Repository(str(repo))
    texts = [found.references[name].name for name in found.references]
    for commit in commits(repo):
        texts.append(commit.message)
        texts += [entry.read_raw().decode() for entry in commit.tree]
    return "\n".join(texts)


def test_a_change_commits_its_secrets_masked_unless_told_to_keep_them(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    done = run_cli(secret_job(frr_lab, tmp_path, "s3cr3t"), "--repo", str(repo), "--quiet",
                   "-o", "masked.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "password ********" in files(repo)["h1.cfg"]
    assert "s3cr3t" not in every_text(repo)
    assert "secrets kept" not in done.stdout

    done = run_cli(secret_job(frr_lab, tmp_path, "k3pt"), "--repo", str(repo), "--quiet",
                   "--keep-secrets", "-o", "kept.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"secrets kept (--keep-secrets): {repo} is readable by its owner alone" \
        in done.stdout
    peer = next(iter(frr_lab.bgp_at_ready["r1"]))
    assert f"neighbor {peer} password k3pt-h1" in files(repo)["h1.cfg"]
    assert f"neighbor {peer} password s3cr3t-h1" in files(repo, 1)["h1.cfg"]  # before, kept
    assert stat.S_IMODE(repo.stat().st_mode) == 0o700
    assert stat.S_IMODE((repo / "h1.cfg").stat().st_mode) == 0o600
    assert "k3pt" not in commits(repo)[0].message


def test_a_jobs_output_repo_is_where_a_backup_commits_and_repo_wins_over_it(
    frr_lab: RunningRouterLab, tmp_path: Path,
) -> None:
    job = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")
    job.write_text(job.read_text() + "output: {repo: history}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli_command("backup", str(job), "-o", str(tmp_path / "records.jsonl"),
                           "--quiet", cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"repository {tmp_path / 'history'}\n" in done.stdout  # beside the job, not cwd
    assert sorted(files(tmp_path / "history")) == ["h1.cfg", "h2.cfg", "h3.cfg"]
    other = tmp_path / "other"
    assert backup(job, other).returncode == 0
    assert len(commits(other)) == 1 and len(commits(tmp_path / "history")) == 1

    bare = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")  # no output.repo
    done = run_cli_command("backup", str(bare), "--quiet", cwd=elsewhere)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("nornir-bench: error: no repository to back up into: give --repo "
                           f"DIR, or output: {{repo: DIR}} in {bare}\n")


def test_a_repository_held_by_another_run_or_not_one_stops_a_change_before_any_device(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    assert backup(backup_job(frr_lab, tmp_path, "asyncio", "abackup_config"), repo).returncode == 0
    job = change_job(frr_lab, tmp_path, "asyncio", refuse=[])
    with holding(repo, repo / ".git"):  # a backup under way, as far as others can tell
        done = run_cli(job, "--repo", str(repo), "--no-wait", "-o", "held.jsonl")
    one_line_error(done, f"--repo {repo}: another backup or change is writing it (pid "
                   f"{os.getpid()} ")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    one_line_error(run_cli(job, "--repo", str(other), "-o", "other.jsonl"),
                   f"--repo {other}: not a git repository, and not empty")
    (repo / ".git" / "HEAD").write_text("garbage\n")
    one_line_error(run_cli(job, "--repo", str(repo), "-o", "corrupt.jsonl"),
                   f"--repo {repo}: not a usable git repository: ")
    for router, text in restored.items():
        assert running(frr_lab, router) == text  # no device touched
    assert not (tmp_path / "backups").exists()
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    show = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")  # changes nothing
    one_line_error(run_cli(show, "--repo", str(other), "-o", "show.jsonl"),
                   f"--repo {other}: job {show} changes no configuration (no send_config or "
                   "asend_config step): nornir-bench backup commits a job's configurations")


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="a full disk is a tmpfs in a mount namespace of the test's own")
def test_a_commit_refused_after_the_change_says_the_change_was_made(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    """The repository on a small tmpfs filled up (a mount namespace of the test's own): the
    change is made, the run's outcome and records stand, the commit's refusal is one line,
    exit 2, and the repository is as it was."""
    seed, full, after = tmp_path / "seed", tmp_path / "full", tmp_path / "after"
    assert backup(backup_job(frr_lab, tmp_path, "asyncio", "abackup_config"), seed).returncode == 0
    first = commits(seed)[0].id
    job = change_job(frr_lab, tmp_path, "asyncio", refuse=[])
    done = on_full_disk(seed, full, after, "run", job, "-o", tmp_path / "full.jsonl",
                        "--quiet")
    one_line_error(done, f"--repo {full}: cannot write the run: ")
    assert done.stderr.endswith(f"; the change was made (its outcome above, its records in "
                                f"{tmp_path / 'full.jsonl'}): not committed\n"), done.stderr
    assert "config: 3 hosts changed" in done.stdout
    states = {h: r["change"]["state"] for h, r in records(tmp_path / "full.jsonl").items()}
    assert set(states.values()) == {"changed"}
    for router, text in restored.items():
        assert running(frr_lab, router) != text  # the change stands
    assert commits(after)[0].id == first
    valid(after)
