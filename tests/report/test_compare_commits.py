"""``nornir-bench diff`` and ``report --compare`` with commits of a backup repository as sides
(``--repo DIR``): two commits, a commit and a records file either way round, and every side
that is not one refused in one line. The repositories are written by the package's own
:class:`ConfigRepository` (as backup writes them, no device needed)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pygit2
import pytest

from nornir_bench.history.repository import ConfigRepository, Written
from tests.cli.in_process import nornir_bench_here
from tests.cli.test_devices import ENV_PASSWORD
from tests.devices import LabProcess
from tests.history.unreadable import KINDS, unreadable
from tests.report.test_page import in_browser

SECRET = "$1$mERr$Abc9secret"
R1 = "hostname r1\nip route 10.0.0.0/8 Null0\n"
R1_CHANGED = ("hostname r1\nip route 10.0.0.0/9 Null0\n"
              f"username admin secret 5 {SECRET}\ninterface e0\n description <b>&up</b>\n")
R1_MASKED = R1_CHANGED.replace(SECRET, "********")


def message(written: Written) -> str:
    return f"backup: {len(written.changed)} changed\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two runs: r1, r2 and the host ``a/b`` (its file ``a%2Fb.cfg``); then r1 changed (its
    secret kept, as --keep-secrets keeps it), r2 removed (--prune), r3 new."""
    path = tmp_path / "configs"
    written = ConfigRepository(path)
    written.commit_run({"r1": R1, "r2": "hostname r2\n", "a/b": "hostname ab\n"}, message)
    written.commit_run({"r1": R1_CHANGED, "r3": "hostname r3\n"}, message, remove=["r2"])
    return path


def head(repo: Path, back: int = 0) -> str:
    commit = pygit2.Repository(str(repo)).head.peel(pygit2.Commit)
    for _ in range(back):
        commit = commit.parents[0]
    return str(commit.id)


def records(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps({"step": 1, "failed": False, **row}) + "\n"
                            for row in rows))
    return path


def diff(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return nornir_bench_here("diff", "--repo", "configs", *args, cwd=cwd)


def test_two_commits_are_compared_as_two_runs_masked(repo: Path) -> None:
    folder = repo.parent
    done = diff(folder, "HEAD~1", "HEAD")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("newly failed: 0, fixed: 0, still failing: 0, added: 1, missing: 1, "
                        "output changed: 1, same: 1")
    assert lines[1:4] == ["added: r3", "missing: r2", "output changed: r1"]
    assert lines[4:6] == ["    --- HEAD~1:r1", "    +++ HEAD:r1"]
    assert "    +username admin secret 5 ********" in lines
    assert "    -ip route 10.0.0.0/8 Null0" in lines and "    +ip route 10.0.0.0/9 Null0" in lines
    assert SECRET not in done.stdout
    assert lines[-2:] == [
        f"HEAD~1: commit {head(repo, 1)[:12]} of configs, {lines[-2].split(', ')[1]}",
        f"HEAD: commit {head(repo)[:12]} of configs, {lines[-1].split(', ')[1]}",
    ]
    assert lines[-1].endswith(" UTC: backup: 2 changed")
    # By hash and by branch; a commit with itself is the same (exit 0); --json names both.
    same = diff(folder, head(repo)[:10], "main", "--json")
    assert same.returncode == 0, same.stdout + same.stderr
    as_json = json.loads(same.stdout)
    assert as_json["same"] == 3 and as_json["changes"] == []
    assert as_json["commits"] == {"old": head(repo), "new": head(repo)}
    assert as_json["old"] == head(repo)[:10] and as_json["new"] == "main"


def test_a_commit_and_a_records_file_are_compared_as_configurations(repo: Path) -> None:
    """The records' text results are configurations; a failed host is failed against the
    commit's file; a result that is not text is left out of both sides, and said."""
    folder = repo.parent
    records(folder / "now.jsonl",
            {"host": "r1", "result": R1_MASKED},  # as a backup's records hold it: the same
            {"host": "r3", "failed": True, "result": None, "exception": "ConnectionError",
             "message": "refused by 127.0.0.1"},
            {"host": "a/b", "result": {"not": "a configuration"}},
            {"host": "r4", "result": "hostname r4\n"})
    done = diff(folder, "HEAD", "now.jsonl")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "newly failed: 1, fixed: 0, still failing: 0, added: 1, missing: 0, output changed: 0, "
        "same: 1",
        "newly failed: r3: ConnectionError: refused by 127.0.0.1",
        "added: r4",
        done.stdout.splitlines()[3],
        "now.jsonl: left out 1 host (a/b): their result is not a configuration (not text), so "
        "not compared with the commit's files",
    ]
    assert done.stdout.splitlines()[3].startswith(f"HEAD: commit {head(repo)[:12]} of configs")
    # The other way round: the records first, the commit after.
    back = diff(folder, "now.jsonl", "HEAD", "--json")
    assert back.returncode == 1, back.stderr
    as_json = json.loads(back.stdout)
    assert [(c["change"], c["host"]) for c in as_json["changes"]] == [
        ("fixed", "r3"), ("missing", "r4")]
    assert as_json["same"] == 1 and as_json["commits"] == {"old": None, "new": head(repo)}
    assert as_json["left_out"] == {"old": ["a/b"], "new": []}
    older = json.loads(diff(folder, "now.jsonl", "HEAD~1", "--json").stdout)
    r1 = [c["diff"] for c in older["changes"] if c["host"] == "r1"][0].splitlines()
    assert r1[:2] == ["--- now.jsonl:r1", "+++ HEAD~1:r1"]
    assert "-username admin secret 5 ********" in r1


def test_files_that_differ_only_in_what_masking_hides_are_the_same(tmp_path: Path) -> None:
    """Two commits of a repository kept with --keep-secrets, where only a secret changed, are
    compared by their blobs' ids: the two files differ, their masked texts do not."""
    written = ConfigRepository(tmp_path / "configs")
    written.commit_run({"r1": R1_CHANGED}, message)
    written.commit_run({"r1": R1_CHANGED.replace(SECRET, "$1$other$Xyz")}, message)
    done = diff(tmp_path, "HEAD~1", "HEAD")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].endswith("output changed: 0, same: 1")
    assert SECRET not in done.stdout and "$1$other$Xyz" not in done.stdout


@pytest.mark.parametrize(
    ("sides", "says"),
    [
        (("HEAD~5", "HEAD"), "HEAD~5: neither a records file nor a revision of configs (a "
         "commit's hash, a branch, a tag, HEAD~1 ...)"),
        (("HEAD", "nothing.jsonl"), "nothing.jsonl: neither a records file nor a revision of "
         "configs"),
        (("main", "HEAD"), "main: both a file here and a revision of configs: give the records "
         "file as ./main, or the commit by its hash"),
        (("HEAD:r1.cfg", "HEAD"), "HEAD:r1.cfg: neither a records file nor a revision"),
        (("./main", "HEAD"), "main: empty: not a records file of nornir-bench run"),
    ],
)
def test_a_side_that_is_no_commit_or_records_is_one_line_and_exit_2(
    repo: Path, sides: tuple[str, str], says: str
) -> None:
    (repo.parent / "main").write_text("")  # a file named as the repository's branch
    done = diff(repo.parent, *sides)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"nornir-bench: error: {says}"), done.stderr


@pytest.mark.parametrize("what", KINDS)
def test_a_repository_that_cannot_be_read_is_one_line_and_exit_2(
    repo: Path, tmp_path: Path, what: str
) -> None:
    path = unreadable(repo, tmp_path, what)
    done = nornir_bench_here("diff", "--repo", str(path), "HEAD~1", "HEAD", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"nornir-bench: error: --repo {path}: "), done.stderr


def test_report_compares_two_commits_on_a_page_escaped_and_masked(repo: Path) -> None:
    folder = repo.parent
    done = nornir_bench_here("report", "--repo", "configs", "--compare", "HEAD~1", "HEAD",
                             "-o", "page.html", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("report: page.html (4 hosts, ")  # the hosts compared
    page = (folder / "page.html").read_text()
    assert SECRET not in page and "<b>&up</b>" not in page
    dom, log = in_browser(folder / "page.html", folder)
    assert 'data-ready="1"' in dom and "data-errors" not in dom
    assert not re.search(r"CONSOLE.*(Uncaught|Error)", log), log[-2000:]
    assert "<h2>HEAD compared with HEAD~1</h2>" in dom
    assert 'data-differ="3"' in dom
    assert "+ description &lt;b&gt;&amp;up&lt;/b&gt;" in dom  # text, not markup
    assert "+username admin secret 5 ********" in dom
    assert f"HEAD: commit {head(repo)[:12]} of configs" in dom
    # A run's records compared with the commit before it: the run has its section.
    records(folder / "now.jsonl", {"host": "r1", "result": R1_MASKED},
            {"host": "r3", "result": "hostname r3\n"})
    done = nornir_bench_here("report", "--repo", "configs", "now.jsonl", "--compare", "HEAD",
                             "-o", "page2.html", cwd=folder)
    assert done.returncode == 0, done.stderr
    page = (folder / "page2.html").read_text()
    assert "<h2>now.jsonl compared with HEAD</h2>" in page and "<section class='run'>" in page
    assert "data-differ='1'" in page and "<td>missing</td><td>a/b</td>" in page


def test_report_with_repo_and_no_compare_is_one_line_and_exit_2(repo: Path) -> None:
    done = nornir_bench_here("report", "--repo", "configs", "HEAD", cwd=repo.parent)
    assert done.returncode == 2
    assert done.stderr == ("nornir-bench: error: --repo DIR names the repository of --compare's "
                           "sides: give --compare OLD (a records file or a revision of DIR)\n")


def test_a_backup_runs_records_are_the_same_as_the_commit_it_made(
    fakenos_lab: LabProcess, tmp_path: Path
) -> None:
    """The package's own backup (netmiko) on emulated devices, which print ``show version`` as
    their configuration here (FakeNOS knows no ``show running-config``): its records,
    compared with its commit, differ in nothing; a host the records have failed is newly
    failed against its file."""
    inventory = fakenos_lab.inventory
    known = inventory / "known_hosts"
    (tmp_path / "defaults.yaml").write_text(
        "username: user\npassword: ${NB_LAB_PASSWORD}\n"
        f"data: {{known_hosts: {known}, running_config_command: show version}}\n")
    (tmp_path / "backup.yaml").write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n"
        f"    host_file: {inventory / 'hosts.yaml'}\n    group_file: {inventory / 'groups.yaml'}\n"
        f"    defaults_file: {tmp_path / 'defaults.yaml'}\n"
        "runner: {plugin: threadpool, options: {num_workers: 4}}\n"
        "task: {name: backup_config}\nlogging: {enabled: false}\n")
    env = {"NB_LAB_PASSWORD": ENV_PASSWORD}
    done = nornir_bench_here("backup", "backup.yaml", "--repo", "configs", "-o", "run.jsonl",
                             "--quiet", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    same = diff(tmp_path, "HEAD", "run.jsonl")
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.splitlines()[0].endswith("output changed: 0, same: 4")
    rows = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    rows[0].update(failed=True, result=None, exception="ConnectionError", message="refused")
    records(tmp_path / "failed.jsonl", *rows)
    failed = diff(tmp_path, "HEAD", "failed.jsonl")
    assert failed.returncode == 1
    assert failed.stdout.splitlines()[1] == (
        f"newly failed: {rows[0]['host']}: ConnectionError: refused")
