"""``nornir-bench backup`` on real routers (FRR behind OpenSSH, ``frr_lab``), with each driver:
a file per host, a commit per run that changed something, a failed host's last good file kept,
hosts gone from the inventory removed only with ``--prune``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from nornir_bench.lab import RunningRouterLab
from tests.runners.test_config_routers import run_cli_command, running

# (runner, task): netmiko's blocking read, scrapli's async one.
DRIVERS = [("threadpool", "backup_config"), ("asyncio", "abackup_config")]
ROUTE = "ip route 203.0.113.77/32 Null0"


def backup_job(lab: RunningRouterLab, folder: Path, runner: str, task: str,
               hosts_file: Path | None = None) -> Path:
    """A backup job on the lab's inventory (or ``hosts_file`` in its stead)."""
    assert lab.inventory is not None
    job = folder / "backup.yaml"
    job.write_text(
        "inventory:\n"
        "  plugin: SimpleInventory\n"
        "  options:\n"
        f"    host_file: {hosts_file or lab.inventory / 'hosts.yaml'}\n"
        f"    group_file: {lab.inventory / 'groups.yaml'}\n"
        f"    defaults_file: {lab.inventory / 'defaults.yaml'}\n"
        f"runner: {{plugin: {runner}, options: {{num_workers: 10}}}}\n"
        f"task: {{name: {task}}}\n"
        "logging: {enabled: false}\n"
    )
    return job


def backup(job: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli_command("backup", str(job), "--repo", str(repo), "-o",
                           str(job.parent / "records.jsonl"), "--quiet", *args, cwd=job.parent)


def configure(lab: RunningRouterLab, router: str, *lines: str) -> None:
    """``lines`` in ``router``'s configuration mode, as root (not through SSH)."""
    args = ["vtysh", "-N", f"nb-{lab.name}-{router}", "-c", "configure terminal"]
    for line in lines:
        args += ["-c", line]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def commits(repo: Path) -> list[pygit2.Commit]:
    found = pygit2.Repository(str(repo))
    if found.head_is_unborn:
        return []
    return list(found.walk(found.head.target, pygit2.enums.SortMode.TOPOLOGICAL))


def committed(repo: Path, name: str) -> str:
    tree = commits(repo)[0].tree
    return tree[name].read_raw().decode() if name in tree else ""


def changed_lines(repo: Path) -> list[str]:
    """The lines the last commit added or removed, ``+`` or ``-`` first."""
    repository = pygit2.Repository(str(repo))
    last = commits(repo)[0]
    patch = repository.diff(last.parents[0], last).patch or ""
    return [line for line in patch.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_backup_commits_what_changed_and_an_unchanged_fleet_makes_no_commit(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, runner: str,
    task: str,
) -> None:
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, runner, task)
    remote = pygit2.init_repository(str(tmp_path / "remote.git"), bare=True, initial_head="main")
    done = backup(job, repo, "--push", str(tmp_path / "remote.git"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 hosts changed, 0 unchanged, 0 failed" in done.stdout
    assert f"pushed main to {tmp_path / 'remote.git'}\n" in done.stdout
    assert remote.references["refs/heads/main"].target == commits(repo)[0].id
    hosts = frr_lab.hosts()  # h1 -> r1 ...
    for host, router in hosts.items():
        # what the device printed, as FRR's vtysh prints it to root
        assert committed(repo, f"{host}.cfg").strip() == running(frr_lab, router).strip()
        assert (repo / f"{host}.cfg").read_text() == committed(repo, f"{host}.cfg")
    first = commits(repo)
    assert first[0].message.startswith("backup: 3 hosts changed, 0 unchanged, 0 failed (job ")

    nowhere = tmp_path / "nowhere.git"
    done = backup(job, repo, "--push", str(nowhere))  # refused: said, exit 1, nothing lost
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no commit: nothing changed (0 hosts changed, 3 unchanged, 0 failed)" in done.stdout
    assert (f"push to {nowhere} refused: no remote named {str(nowhere)!r} and no repository at "
            f"{nowhere}; the commit stays in {repo} (give --push again once the remote takes "
            "it)\n") in done.stdout
    assert [c.id for c in commits(repo)] == [c.id for c in first]

    configure(frr_lab, "r1", ROUTE)
    done = backup(job, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(commits(repo)) == 2
    message = commits(repo)[0].message
    assert message.startswith("backup: 1 host changed, 2 unchanged, 0 failed"), message
    assert "changed: h1\n" in message
    assert changed_lines(repo) == [f"+{ROUTE}", "+!"]  # FRR closes the new block
    status = pygit2.Repository(str(repo)).status()
    assert status == {}, status  # the work tree and the index are the last commit
    # nornir-bench history: h1's two commits, the newest with exactly the route's lines
    shown = run_cli_command("history", "h1", "--repo", str(repo), "--last", "1",
                            cwd=tmp_path)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert [line for line in shown.stdout.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))] == [f"+{ROUTE}", "+!"]


def test_a_host_that_fails_keeps_its_last_good_file_and_is_named_in_the_commit(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    assert frr_lab.inventory is not None
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, *DRIVERS[1])
    assert backup(job, repo).returncode == 0
    kept = committed(repo, "h2.cfg")
    # h2 now logs in with a password the router refuses; r1 changes meanwhile.
    hosts = (frr_lab.inventory / "hosts.yaml").read_text()
    assert "h2:\n" in hosts
    broken = tmp_path / "hosts.yaml"
    broken.write_text(hosts.replace("h2:\n", "h2:\n  password: not-the-password\n", 1))
    job = backup_job(frr_lab, tmp_path, *DRIVERS[1], hosts_file=broken)
    configure(frr_lab, "r1", ROUTE)
    configure(frr_lab, "r2", "ip route 203.0.113.78/32 Null0")  # not read: h2 fails
    done = backup(job, repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 host changed, 1 unchanged, 1 failed" in done.stdout
    message = commits(repo)[0].message
    assert message.startswith("backup: 1 host changed, 1 unchanged, 1 failed"), message
    assert "failed (their last good file kept):\n  h2: " in message
    assert committed(repo, "h2.cfg") == kept
    assert (repo / "h2.cfg").read_text() == kept
    assert "not-the-password" not in message


def test_hosts_gone_from_the_inventory_are_removed_only_with_prune(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, *DRIVERS[0])
    assert backup(job, repo).returncode == 0
    narrowed = job.read_text() + "filter: {hosts: [h1, h2]}\n"
    job.write_text(narrowed)
    done = backup(job, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no commit: nothing changed (0 hosts changed, 2 unchanged, 0 failed)" in done.stdout
    assert (repo / "h3.cfg").exists()
    done = backup(job, repo, "--prune")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 hosts changed, 2 unchanged, 0 failed, 1 removed" in done.stdout
    assert "removed (--prune): h3" in commits(repo)[0].message
    assert not (repo / "h3.cfg").exists() and "h3.cfg" not in commits(repo)[0].tree
    assert len(commits(repo)) == 2
