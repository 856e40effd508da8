"""``nornir-bench backup``'s repository under faults, on real routers (``frr_lab``): two backups
at once, a backup killed in the middle of its write, a repository that is not one, is corrupt
or is on a full disk. Every repository is left valid (``git fsck``), and every refusal is one
line and exit 2."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from nornir_bench.history.lock import LOCK_FILE, holding
from nornir_bench.lab import RunningRouterLab
from tests.cli.test_backup_routers import (
    ROUTE,
    backup,
    backup_job,
    changed_lines,
    commits,
    configure,
)
from tests.history.full_disk import on_full_disk
from tests.waiting import HANG_GUARD

ROOT = Path(__file__).resolve().parents[2]


def valid(repo: Path) -> None:
    """``repo`` passes ``git fsck``, holds no git lock, and its work tree is its last commit."""
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--full", "--strict"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    locks = [str(p) for p in (repo / ".git").rglob("*.lock") if p.name != LOCK_FILE]
    assert locks == []
    assert pygit2.Repository(str(repo)).status() == {}


def one_line_error(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nornir-bench: error: "), \
        done.stderr
    assert says in done.stderr, done.stderr


def test_a_second_backup_waits_for_the_first_or_with_no_wait_says_who_holds_it(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")
    assert backup(job, repo).returncode == 0
    configure(frr_lab, "r1", ROUTE)
    with holding(repo, repo / ".git"):  # a backup under way, as far as others can tell
        done = backup(job, repo, "--no-wait")
        one_line_error(done, f"--repo {repo}: another backup or change is writing it (pid "
                       f"{os.getpid()} ")
        assert len(commits(repo)) == 1
        waiting = subprocess.Popen(
            [sys.executable, "-m", "nornir_bench", "backup", str(job), "--repo", str(repo),
             "-o", str(tmp_path / "second.jsonl"), "--quiet"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert waiting.stderr is not None
            said = waiting.stderr.readline()  # the event: it says it waits, then waits
            assert said.startswith(f"waiting for the backup or change writing {repo} (pid "
                                   f"{os.getpid()} ")
            assert waiting.poll() is None and len(commits(repo)) == 1
        except BaseException:
            waiting.kill()
            waiting.wait(HANG_GUARD)
            raise
    out, err = waiting.communicate(timeout=HANG_GUARD)
    assert waiting.returncode == 0, out + err
    assert "1 host changed, 2 unchanged" in out
    assert changed_lines(repo) == [f"+{ROUTE}", "+!"]
    valid(repo)


@pytest.mark.parametrize("point", ["file", "index"])
def test_a_backup_killed_mid_write_leaves_the_repository_valid_and_the_next_run_commits(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, point: str,
) -> None:
    """Killed (SIGKILL) with a changed file written beside its place, or with the commit made
    and its index not yet git's: the repository passes ``git fsck`` with no lock left; the next
    run leaves the work tree, the index and the branch at one commit holding the change."""
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, "threadpool", "backup_config")
    assert backup(job, repo).returncode == 0
    first = commits(repo)[0].id
    configure(frr_lab, "r1", ROUTE)
    paused = subprocess.Popen(
        [sys.executable, "-m", "tests.history.paused_backup", point, "backup", str(job),
         "--repo", str(repo), "-o", str(tmp_path / "killed.jsonl"), "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert paused.stdout is not None
        assert paused.stdout.readline() == "paused\n", paused.stderr
    finally:
        paused.kill()
        paused.communicate(timeout=HANG_GUARD)
    assert paused.returncode == -signal.SIGKILL
    git_valid = subprocess.run(["git", "-C", str(repo), "fsck", "--full", "--strict"],
                               capture_output=True, text=True, timeout=60, check=False)
    assert git_valid.returncode == 0, git_valid.stderr
    assert not (repo / ".git" / "index.lock").exists()
    if point == "file":
        assert commits(repo)[0].id == first  # nothing half-done committed
        assert list(repo.glob("*.nornir-bench-part")) != []  # the write it was killed in
    else:
        assert commits(repo)[0].parents[0].id == first  # the commit was whole
    done = backup(job, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(commits(repo)) == 2
    assert changed_lines(repo) == [f"+{ROUTE}", "+!"]
    assert list(repo.glob("*.nornir-bench-part")) == []
    valid(repo)


def test_a_folder_that_is_not_a_repository_or_a_corrupt_one_stops_the_command_in_one_line(
    frr_lab: RunningRouterLab, tmp_path: Path,
) -> None:
    job = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    one_line_error(backup(job, other), f"--repo {other}: not a git repository, and not empty")
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    one_line_error(backup(job, a_file), f"--repo {a_file}: not a folder")

    repo = tmp_path / "history"
    assert backup(job, repo).returncode == 0
    tree = commits(repo)[0].tree.id
    loose = repo / ".git" / "objects" / str(tree)[:2] / str(tree)[2:]
    loose.chmod(0o600)
    loose.write_bytes(b"not an object")  # the last commit's tree, corrupt
    one_line_error(backup(job, repo), f"--repo {repo}: not a usable git repository: ")
    (repo / ".git" / "HEAD").write_text("garbage\n")
    one_line_error(backup(job, repo), f"--repo {repo}: not a usable git repository: ")


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="a full disk is a tmpfs in a mount namespace of the test's own")
def test_a_full_disk_stops_the_command_in_one_line_and_leaves_the_repository_as_it_was(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    """The repository on a small tmpfs, filled up, in a mount namespace of the test's own
    (gone with its process); a copy of it taken there after the failed run is checked."""
    seed, full, after = tmp_path / "seed", tmp_path / "full", tmp_path / "after"
    job = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")
    assert backup(job, seed).returncode == 0
    first = commits(seed)[0].id
    configure(frr_lab, "r1", ROUTE)
    done = on_full_disk(seed, full, after, "backup", job, "-o", tmp_path / "full.jsonl",
                        "--quiet")
    one_line_error(done, f"--repo {full}: cannot write the run: ")
    assert "No space left on device" in done.stderr or "space" in done.stderr.lower()
    assert commits(after)[0].id == first
    git_valid = subprocess.run(["git", "-C", str(after), "fsck", "--full", "--strict"],
                               capture_output=True, text=True, timeout=60, check=False)
    assert git_valid.returncode == 0, git_valid.stderr
    assert not list(full.iterdir())  # the tmpfs was the namespace's only
