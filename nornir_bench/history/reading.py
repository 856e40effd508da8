"""A backup repository read, never made or written: what ``nornir-bench history``, ``diff``,
the report and a restore share. Opening it, and the commit a revision names (``HEAD``,
``HEAD~2``, a commit id or its first characters, a branch, a tag).

Each error names the repository as the caller's user named it (``--repo configs``,
``configs``), so its one line reads as the command's.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from nornir_bench.history.repository import RepositoryError

__all__ = ["UnknownRevision", "commit_named", "open_repository"]


class UnknownRevision(RepositoryError):
    """A revision the repository does not have, or one that names no commit (a file's blob,
    a tree)."""


def open_repository(path: Path, named: str) -> pygit2.Repository:
    """The repository at ``path`` (``named`` in messages), opened to read.

    Raises:
        RepositoryError: there is none, or it cannot be opened.
    """
    if not (Path(path) / ".git").is_dir():
        raise RepositoryError(f"{named}: not a git repository: give one nornir-bench backup wrote")
    try:
        return pygit2.Repository(str(path))
    except (pygit2.GitError, OSError) as exc:
        raise RepositoryError(f"{named}: not a usable git repository: {exc}") from None


def commit_named(repo: pygit2.Repository, named: str, revision: str) -> pygit2.Commit:
    """The commit ``revision`` names in ``repo``, its tree read (a missing or corrupt tree is
    found here, not by the first file read).

    Raises:
        UnknownRevision: no such revision, or it names no commit.
        RepositoryError: the repository cannot be read (a corrupt object).
    """
    try:  # not found is a KeyError, a malformed revision a ValueError
        found = repo.revparse_single(revision).peel(pygit2.Commit)
    except (KeyError, ValueError) as exc:
        if repo.head_is_unborn:
            why = " (it has no commit yet)"
        elif isinstance(exc, KeyError):
            why = ""
        else:  # a revision of a blob or a tree, or not one git reads: say which
            why = f" ({str(exc).strip() or type(exc).__name__})"
        raise UnknownRevision(
            f"{named}: no commit {revision!r} in it{why}: give a commit id (or its first "
            "characters), a branch, a tag, HEAD or HEAD~N"
        ) from None
    except pygit2.GitError as exc:
        raise RepositoryError(f"{named}: cannot read {revision}: {exc}") from None
    try:
        len(found.tree)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise RepositoryError(f"{named}: cannot read {revision}: {exc}") from None
    return found
