"""``nornir-bench history HOST --repo DIR`` on a repository written as backup writes it (no
device: the runs' configurations given): the commits that changed the host, newest first,
each with exactly its lines, masked; one line and its exit status otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from nornir_bench.cli.main import main
from nornir_bench.history.repository import ConfigRepository, Written
from tests.history.unreadable import KINDS, unreadable


def message(written: Written) -> str:
    return f"backup: {len(written.changed)} changed\n\nchanged: {', '.join(written.changed)}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Four runs: r1 and r2 new; r1 changed; r2 alone changed; r1 removed (pruned)."""
    path = tmp_path / "configs"
    written = ConfigRepository(path)
    written.commit_run({"r1": "hostname r1\nip route 10.0.0.0/8 Null0\n", "r2": "hostname r2\n"},
                       message)
    written.commit_run({"r1": "hostname r1\nip route 10.0.0.0/8 Null0\n"
                              "username admin secret 5 $1$mERr$abc\n", "r2": "hostname r2\n"},
                       message)
    written.commit_run({"r1": "hostname r1\nip route 10.0.0.0/8 Null0\n"
                              "username admin secret 5 $1$mERr$abc\n",
                        "r2": "hostname r2\nip route 10.9.0.0/16 Null0\n"}, message)
    written.commit_run({}, message, remove=["r1"])
    return path


def commits(out: str) -> list[str]:
    return [line.split("  ", 2)[2] for line in out.splitlines() if line.startswith("commit ")]


def test_the_commits_that_changed_a_host_newest_first_with_exactly_their_lines(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "r1", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    # r2's change alone is not r1's; its removal, its secret's line and its birth are.
    assert commits(out) == ["backup: 0 changed", "backup: 1 changed", "backup: 2 changed"]
    added = [line for line in out.splitlines() if line.startswith("+") and line[:3] != "+++"]
    removed = [line for line in out.splitlines() if line.startswith("-") and line[:3] != "---"]
    assert added == ["+username admin secret 5 ********",
                     "+hostname r1", "+ip route 10.0.0.0/8 Null0"]
    assert removed == ["-hostname r1", "-ip route 10.0.0.0/8 Null0",
                       "-username admin secret 5 ********"]
    assert "$1$mERr$abc" not in out
    assert "--- a/r1.cfg" in out and "+++ b/r1.cfg" in out


def test_last_shows_only_the_newest_changes(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "r2", "--repo", str(repo), "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert commits(out) == ["backup: 1 changed"]
    assert "+ip route 10.9.0.0/16 Null0" in out and "+hostname r2" not in out


def test_a_host_no_commit_holds_is_one_line_and_exit_1(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "r9", "--repo", str(repo)]) == 1
    assert capsys.readouterr().out == (
        f"r9: no commit of {repo} holds it (its file would be r9.cfg)\n"
    )


@pytest.mark.parametrize("what", KINDS)
def test_a_repository_that_cannot_be_read_is_one_line_and_exit_2(
    repo: Path, tmp_path: Path, what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = unreadable(repo, tmp_path, what)
    assert main(["history", "r1", "--repo", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"nornir-bench: error: --repo {path}: "), lines
    assert "Traceback" not in captured.err
