"""A host's history in a backup repository (``nornir-bench history HOST``): the commits that
changed its file, newest first, each with the file's diff against the commit before it.

The repository is only read (never made, locked or written): a backup may run meanwhile. The
diffs are masked as a run's output is (:func:`~nornir_bench.core.secrets.mask_config_secrets`),
also those of a repository kept with ``--keep-secrets``: a terminal is not where they go.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pygit2

from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.history.reading import open_repository
from nornir_bench.history.repository import RepositoryError, file_name

__all__ = ["HostChange", "host_history"]


@dataclass(frozen=True)
class HostChange:
    """One commit that changed a host's file.

    Attributes:
        commit: its id.
        when: when it was made (UTC).
        summary: its message's first line.
        diff: the file's unified diff against the commit before it (from nothing for the
            commit that added it; to nothing for the one that removed it), masked.
    """

    commit: str
    when: datetime
    summary: str
    diff: str


def host_history(path: Path, host: str) -> Iterator[HostChange]:
    """The commits of the repository at ``path`` that changed ``host``'s file, newest first.

    Raises:
        RepositoryError: ``path`` is not a repository a backup made, or it cannot be read.
    """
    repo = open_repository(path, f"--repo {path}")
    if repo.head_is_unborn:
        return
    name = file_name(host)
    try:
        head = repo.head.target
        for commit in repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL):
            new = _blob(repo, commit.tree, name)
            old = _blob(repo, commit.parents[0].tree, name) if commit.parents else None
            if (new and new.id) == (old and old.id):
                continue
            patch = pygit2.Patch.create_from(old, new, old_as_path=name, new_as_path=name)
            yield HostChange(
                commit=str(commit.id),
                when=datetime.fromtimestamp(commit.commit_time, timezone.utc),
                summary=commit.message.splitlines()[0] if commit.message else "",
                diff=mask_config_secrets(patch.text or ""),
            )
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise RepositoryError(f"--repo {path}: cannot read its history: {exc}") from None


def _blob(repo: pygit2.Repository, tree: pygit2.Tree, name: str) -> pygit2.Blob | None:
    if name not in tree:
        return None
    found = repo[tree[name].id]
    return found if isinstance(found, pygit2.Blob) else None
