"""A host's configuration as a commit of a backup repository holds it: what a restore makes
the intended configuration of a replace (``send_config``'s ``from_history``).

The repository is only read (never made, locked or written), so a backup may run meanwhile.
A revision (``HEAD``, ``HEAD~2``, a commit id or its prefix, a branch, a tag) is resolved once
to its commit (:func:`commit_of`), so that every host is read from the same one
(:func:`config_at`). Each process keeps the last commits' trees it read: a fleet's hosts are
files of one tree, and parsing the tree again for each host would cost ten times the read.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import pygit2

from nornir_bench.history.reading import commit_named, open_repository
from nornir_bench.history.repository import RepositoryError, file_name

__all__ = ["commit_of", "config_at"]

_KEPT = 4  # trees kept per process: a run restores from one commit, a test from a few
_kept: OrderedDict[tuple[int, str, str], tuple[pygit2.Repository, pygit2.Tree]] = OrderedDict()
_lock = threading.Lock()  # libgit2's objects are not for two threads at once


def commit_of(path: Path, revision: str) -> str:
    """The id of the commit ``revision`` names in the repository at ``path``.

    Raises:
        RepositoryError: ``path`` is not a repository, or ``revision`` names no commit of it.
    """
    with _lock:
        if (os.getpid(), str(path), revision) in _kept:  # an id given before: each host's
            return revision
        return str(commit_named(open_repository(path, str(path)), str(path), revision).id)


def config_at(path: Path, host: str, commit: str, max_bytes: int | None = None) -> str:
    """``host``'s configuration as commit ``commit`` (an id :func:`commit_of` gave) of the
    repository at ``path`` holds it: its file's text.

    Raises:
        RepositoryError: the commit holds no file of ``host`` (it was not backed up by then,
            or pruned), one larger than ``max_bytes``, or not UTF-8 text; the repository
            cannot be read.
    """
    name = file_name(host)
    with _lock:
        repo, tree = _tree(path, commit)
        try:
            entry = tree[name] if name in tree else None
            found = None if entry is None else repo[entry.id]
        except (pygit2.GitError, KeyError, ValueError) as exc:
            raise RepositoryError(f"{path}: cannot read {name} at commit {commit[:12]}: "
                                  f"{exc}") from None
        if not isinstance(found, pygit2.Blob):
            raise RepositoryError(
                f"commit {commit[:12]} of {path} holds no {name}: {host} was not backed up by "
                "then, or was pruned"
            )
        if max_bytes is not None and found.size > max_bytes:
            raise RepositoryError(f"{name} at commit {commit[:12]} of {path} is larger than "
                                  f"{max_bytes:,} bytes: not a configuration")
        data = found.data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RepositoryError(
            f"{name} at commit {commit[:12]} of {path} is not UTF-8 text: not a configuration "
            "nornir-bench backup wrote"
        ) from None


def _tree(path: Path, commit: str) -> tuple[pygit2.Repository, pygit2.Tree]:
    """The tree of ``commit``, kept; per process (a forked worker opens its own)."""
    key = (os.getpid(), str(path), commit)
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    repo = open_repository(path, str(path))
    found = repo, commit_named(repo, str(path), commit).tree
    _kept[key] = found
    while len(_kept) > _KEPT:
        _kept.popitem(last=False)
    return found
