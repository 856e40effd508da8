"""A restore from the backup repository (``from_history``) on real routers (``frr_lab``: r1 -
r2 - r3; hosts h1 on r1, h2 on r2, h3 on r3), with each driver: the routers backed up, a change
made with ``send_config``, backed up again; the history shows exactly the changed lines; a
restore from the first commit shows the diff with ``--check`` (drifted, exit 1), then brings
r1 back byte for byte. Its faults: a revision the repository lacks, a host missing at the
commit, a masked secret never sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from nornir_bench.core.secrets import MASK
from nornir_bench.lab import RunningRouterLab
from tests.cli.test_backup_routers import (
    backup,
    backup_job,
    changed_lines,
    commits,
    configure,
)
from tests.runners.test_config_routers import (
    lab_job,
    records,
    run_cli,
    run_cli_command,
    running,
)

ROUTE = "ip route 203.0.113.77/32 Null0"
# (runner, backup task, change task): netmiko on threads, scrapli on the event loop.
DRIVERS = [("threadpool", "backup_config", "send_config"),
           ("asyncio", "abackup_config", "asend_config")]


def restore_job(lab: RunningRouterLab, folder: Path, runner: str, task: str, repo: Path,
                commit: str, extra: str = "") -> Path:
    """A job restoring every host from ``commit`` of ``repo`` (``repo`` relative to the job's
    folder, as a job file would name it)."""
    return lab_job(lab, folder, runner, task=task, params=(
        f"    from_history: {{repo: {repo.relative_to(folder)}, commit: '{commit}'}}\n"
        f"    mode: replace\n    backup_dir: {folder / 'backups'}\n" + extra))


def blob(repo: Path, commit: str, name: str) -> bytes:
    found = [c for c in commits(repo) if str(c.id) == commit]
    return found[0].tree[name].read_raw()


@pytest.mark.parametrize(("runner", "backup_task", "task"), DRIVERS)
def test_a_restore_from_the_first_commit_brings_r1_back_byte_for_byte(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, runner: str,
    backup_task: str, task: str,
) -> None:
    repo = tmp_path / "history"
    saving = backup_job(frr_lab, tmp_path, runner, backup_task)
    assert backup(saving, repo).returncode == 0
    first = str(commits(repo)[0].id)
    change = lab_job(frr_lab, tmp_path, runner, task=task,
                     params=f"    lines: ['{ROUTE}']\n    backup_dir: {tmp_path / 'backups'}\n")
    made = run_cli(change, "--limit", "h1", "-o", "change.jsonl")
    assert made.returncode == 0, made.stdout + made.stderr
    done = backup(saving, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 host changed, 2 unchanged, 0 failed" in done.stdout
    shown = run_cli_command("history", "h1", "--repo", str(repo), "--last", "1", cwd=tmp_path)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert [line for line in shown.stdout.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))] == [f"+{ROUTE}", "+!"]

    job = restore_job(frr_lab, tmp_path, runner, task, repo, first[:7])
    check = run_cli(job, "--check", "--show", "-o", "check.jsonl")
    assert check.returncode == 1, check.stdout + check.stderr  # drifted
    assert "config: 1 host drifted, 2 hosts compliant" in check.stdout
    assert f"-{ROUTE}" in check.stdout
    rows = records(tmp_path / "check.jsonl")
    assert rows["h1"]["change"]["remediation"] == [f"no {ROUTE}"]
    assert rows["h1"]["change"]["notes"] == [
        f"intended configuration: h1.cfg at commit {first[:12]} of {repo}"]
    assert ROUTE in running(frr_lab, "r1")  # a check changes nothing

    done = run_cli(job, "-o", "restore.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "config: 1 host changed, 2 hosts with nothing to change" in done.stdout
    assert running(frr_lab, "r1") == restored["r1"]
    # read back as a backup reads it: the first commit's file, byte for byte
    again = backup(saving, repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (repo / "h1.cfg").read_bytes() == blob(repo, first, "h1.cfg")
    assert changed_lines(repo) == [f"-{ROUTE}", "-!"]


def test_a_revision_the_repository_lacks_or_no_repository_is_refused_before_any_device(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    assert backup(backup_job(frr_lab, tmp_path, *DRIVERS[1][:2]), repo).returncode == 0
    for commit, says in [
        ("HEAD~1", f"task asend_config: from_history: repo {repo}: no commit 'HEAD~1' in it: "
                   "give a commit id (or its first characters), a branch, a tag, HEAD or "
                   "HEAD~N"),
        ("0" * 40, f"no commit '{'0' * 40}' in it"),
    ]:
        job = restore_job(frr_lab, tmp_path, "asyncio", "asend_config", repo, commit)
        done = run_cli(job, "-o", "out.jsonl")
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    job = restore_job(frr_lab, tmp_path, "asyncio", "asend_config", plain, "HEAD")
    done = run_cli(job, "-o", "out.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.endswith(f"from_history: repo {plain}: not a git repository: give one "
                                "nornir-bench backup wrote\n"), done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()
    assert not (tmp_path / "backups").exists()
    assert frr_lab.configs() == restored


@pytest.mark.parametrize(("runner", "task"), [("threadpool", "send_config"),
                                             ("processpool", "asend_config")])
def test_a_host_the_commit_lacks_fails_naming_the_commit_and_file_the_others_restore(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, runner: str,
    task: str,
) -> None:
    """Also on processpool: its workers, forked, read the repository themselves."""
    repo = tmp_path / "history"
    saving = backup_job(frr_lab, tmp_path, *DRIVERS[0][:2])
    saving.write_text(saving.read_text() + "filter: {hosts: [h1, h2]}\n")
    assert backup(saving, repo).returncode == 0
    first = str(commits(repo)[0].id)
    configure(frr_lab, "r2", ROUTE)
    job = restore_job(frr_lab, tmp_path, runner, task, repo, "HEAD")
    done = run_cli(job, "-o", "out.jsonl")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = records(tmp_path / "out.jsonl")
    assert rows["h3"]["failed"]
    assert (f"from_history: commit {first[:12]} of {repo} holds no h3.cfg: h3 was not backed "
            "up by then, or was pruned") in rows["h3"]["message"]
    assert {h: rows[h]["change"]["state"] for h in ("h1", "h2")} == {
        "h1": "no change", "h2": "changed"}
    assert running(frr_lab, "r2") == restored["r2"]
    assert running(frr_lab, "r3") == restored["r3"]  # h3's device never touched


PEER_PASSWORD = "neighbor {peer} password {secret}"


@pytest.mark.parametrize(("runner", "backup_task", "task"), DRIVERS)
def test_a_masked_secret_is_never_sent_and_the_device_keeps_its_own(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path, runner: str,
    backup_task: str, task: str,
) -> None:
    """r1's BGP neighbour has a password when backed up (masked in the file); it is changed,
    and a route added, before the restore: the route goes, the device's own password stays,
    the mask reaches no device, and the result says so once."""
    asn = frr_lab.asn("r1")
    peer = next(iter(frr_lab.bgp_peers("r1")))
    configure(frr_lab, "r1", f"router bgp {asn}", PEER_PASSWORD.format(peer=peer,
                                                                      secret="old-s3cret"))
    repo = tmp_path / "history"
    saving = backup_job(frr_lab, tmp_path, runner, backup_task)
    assert backup(saving, repo).returncode == 0
    first = str(commits(repo)[0].id)
    kept = blob(repo, first, "h1.cfg").decode()
    assert f"password {MASK}" in kept and "old-s3cret" not in kept
    configure(frr_lab, "r1", ROUTE, f"router bgp {asn}",
              PEER_PASSWORD.format(peer=peer, secret="new-s3cret"))

    job = restore_job(frr_lab, tmp_path, runner, task, repo, first, extra="    timeout: 30\n")
    done = run_cli(job, "--limit", "h1", "--show", "-o", "out.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    text = running(frr_lab, "r1")
    assert ROUTE not in text
    assert PEER_PASSWORD.format(peer=peer, secret="new-s3cret") in text
    assert MASK not in text
    row = records(tmp_path / "out.jsonl")["h1"]
    assert row["change"]["state"] == "changed"
    assert row["change"]["notes"][1] == (
        f"1 line of it was backed up masked ({MASK}): left out of both sides, not sent; the "
        "device keeps its own lines there (a repository backed up with --keep-secrets "
        "restores them)")
    assert done.stdout.count("backed up masked") == 1, done.stdout
    assert "new-s3cret" not in done.stdout + (tmp_path / "out.jsonl").read_text()
