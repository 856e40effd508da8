"""A backup repository's branch pushed (``nornir-bench backup --push REMOTE``), against bare
repositories on this machine: taken, refused (the remote has commits this one lacks), or no
repository there; a refusal keeps the commit here. (A path is pushed to by libgit2's local
transport, which runs no hook of the remote's: a hook's refusal needs a server.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from nornir_bench.history.push import push
from nornir_bench.history.repository import BRANCH, ConfigRepository, Written


def message(written: Written) -> str:
    return f"backup: {len(written.changed)} changed\n"


def bare(path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(path), bare=True, initial_head="main")


def head_of(repo: pygit2.Repository) -> str:
    return str(repo.references[BRANCH].target)


def test_a_push_gives_the_remote_the_branch_and_again_after_the_next_commit(
    tmp_path: Path,
) -> None:
    remote = bare(tmp_path / "remote.git")
    repository = ConfigRepository(tmp_path / "configs")
    assert push(repository, str(tmp_path / "remote.git")) is None  # no commit: nothing to send
    assert remote.head_is_unborn
    repository.commit_run({"r1": "hostname r1\n"}, message)
    assert push(repository, str(tmp_path / "remote.git")) is None
    assert head_of(remote) == head_of(repository.repo)
    repository.repo.remotes.create("backups", str(tmp_path / "remote.git"))
    repository.commit_run({"r1": "hostname r1\nip route 10.0.0.0/8 Null0\n"}, message)
    assert push(repository, "backups") is None  # a remote the repository names
    assert head_of(remote) == head_of(repository.repo)


def test_a_remote_with_commits_this_one_lacks_refuses_and_the_commit_stays(
    tmp_path: Path,
) -> None:
    remote = bare(tmp_path / "remote.git")
    repository = ConfigRepository(tmp_path / "configs")
    repository.commit_run({"r1": "hostname r1\n"}, message)
    assert push(repository, str(tmp_path / "remote.git")) is None
    # another writer's commit on the remote
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "remote.git"), str(other)], check=True,
                   timeout=60)
    (other / "r2.cfg").write_text("hostname r2\n")
    subprocess.run(["git", "-C", str(other), "add", "-A"], check=True, timeout=60)
    subprocess.run(["git", "-C", str(other), "-c", "user.name=o", "-c", "user.email=o@o",
                    "commit", "-qm", "other"], check=True, timeout=60)
    subprocess.run(["git", "-C", str(other), "push", "-q", "origin", "HEAD:main"], check=True,
                   timeout=60)
    theirs = head_of(remote)
    written = repository.commit_run({"r1": "hostname r1\nip route 10.0.0.0/8 Null0\n"}, message)
    refused = push(repository, str(tmp_path / "remote.git"))
    assert refused is not None and "not present locally" in refused, refused
    assert "\n" not in refused
    assert head_of(remote) == theirs  # the remote as it was
    assert head_of(repository.repo) == written.commit  # the commit kept here


def test_a_path_with_no_repository_is_said_in_one_line(tmp_path: Path) -> None:
    repository = ConfigRepository(tmp_path / "configs")
    written = repository.commit_run({"r1": "hostname r1\n"}, message)
    nowhere = tmp_path / "nowhere.git"
    assert push(repository, str(nowhere)) == (
        f"no remote named {str(nowhere)!r} and no repository at {nowhere}"
    )
    assert head_of(repository.repo) == written.commit
