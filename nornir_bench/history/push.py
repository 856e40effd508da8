"""A backup repository's branch pushed to a remote (``nornir-bench backup --push REMOTE``).

``REMOTE`` is a remote the repository names (``git remote add``), or a URL or a path. A push
the remote refuses (its branch has commits this one lacks, a hook said no, it cannot be
reached) is said in one line: the commit stays here, and the next ``--push`` sends it. Over
SSH the keys come from the user's agent.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from nornir_bench.history.repository import BRANCH, ConfigRepository

__all__ = ["push"]


class _Callbacks(pygit2.RemoteCallbacks):
    def __init__(self) -> None:
        super().__init__()
        self.refused: str | None = None

    def credentials(self, url: str, username_from_url: str | None,
                    allowed_types: int) -> pygit2.KeypairFromAgent:
        return pygit2.KeypairFromAgent(username_from_url or "git")

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message is not None:
            self.refused = f"{refname}: {message}"


def push(repository: ConfigRepository, remote: str) -> str | None:
    """Push the repository's branch to ``remote``; ``None`` once the remote has it, else why
    it was refused (one line). A repository with no commit yet has nothing to push."""
    repo = repository.repo
    if repo.head_is_unborn:
        return None
    if remote not in repo.remotes.names() and not _reachable_form(remote):
        return f"no remote named {remote!r} and no repository at {remote}"
    callbacks = _Callbacks()
    try:
        target = (repo.remotes[remote] if remote in repo.remotes.names()
                  else repo.remotes.create_anonymous(remote))
        target.push([f"{BRANCH}:{BRANCH}"], callbacks=callbacks)
    except (pygit2.GitError, KeyError, ValueError, OSError) as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return callbacks.refused


def _reachable_form(remote: str) -> bool:
    """A URL (``ssh://``, ``https://``, ``file://``), scp's ``user@host:path``, or a path that
    exists."""
    if "://" in remote:
        return True
    if ":" in remote.split("/", 1)[0]:  # host:path, user@host:path
        return True
    return Path(remote).exists()
