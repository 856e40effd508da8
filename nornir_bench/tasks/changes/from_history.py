"""A restore's intended configuration: a host's file at a commit of the backup repository
``nornir-bench backup`` writes (``from_history: {repo: DIR, commit: REV}``), replaced onto
the device as any intended configuration is (``mode: replace``, with its scope).

A file backed up masked (the default) holds ``********`` where the device held a secret. A
restore never sends it: each line of the file holding the mask is left out of both the
running and the intended configuration, as ``ignore`` leaves lines out, so the device keeps
the lines it has there (with its own secret), and the result says so once (:func:`notes`).

The repository is read with pygit2, imported by the functions that read it: a change that
restores nothing does not pay for its import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from hier_config.platforms.driver_base import HConfigDriverBase

from nornir_bench.core.secrets import MASK
from nornir_bench.tasks.dialects.config_text import change_lines, parse_config

__all__ = ["HISTORY_KEYS", "HistorySource", "history_lines", "history_source", "masked_lines",
           "notes"]

HISTORY_KEYS = ("repo", "commit")
DEFAULT_COMMIT = "HEAD"


class HistorySource(NamedTuple):
    """``from_history``, checked: the repository and the commit it names, resolved."""

    repo: Path
    commit: str  # the commit's id

    def pinned(self) -> dict[str, str]:
        """As ``from_history`` names it, its commit the id: read again, the same commit."""
        return {"repo": str(self.repo), "commit": self.commit}


def history_source(value: object) -> HistorySource:
    """``from_history``'s mapping checked, its revision resolved to a commit id.

    Raises:
        ValueError: not a mapping of ``repo`` and ``commit``, not a repository, no such commit.
    """
    if not isinstance(value, Mapping) or not set(value) <= set(HISTORY_KEYS) or \
            "repo" not in value:
        raise ValueError(
            "from_history must be {repo: DIR, commit: REV} (commit: HEAD unless given), got "
            f"{value!r}"
        )
    from nornir_bench.history.at_commit import commit_of
    from nornir_bench.history.repository import RepositoryError

    repo, revision = value["repo"], value.get("commit", DEFAULT_COMMIT)
    if not isinstance(repo, (str, os.PathLike)) or not str(repo):
        raise ValueError(f"from_history: repo must be the backup repository's folder, got "
                         f"{repo!r}")
    if not isinstance(revision, str) or not revision:
        raise ValueError(f"from_history: commit must be a revision (HEAD, HEAD~1, a commit id, "
                         f"a branch, a tag), got {revision!r}")
    try:
        return HistorySource(Path(repo), commit_of(Path(repo), revision))
    except RepositoryError as exc:
        raise ValueError(f"from_history: repo {exc}") from None


def history_lines(host: str, source: HistorySource, max_bytes: int) -> list[str]:
    """``host``'s configuration at the source's commit, as the lines of a change.

    Raises:
        ValueError: the commit holds no file of ``host`` (naming the commit and the file), or
            one past ``max_bytes``, or empty.
    """
    from nornir_bench.history.at_commit import config_at
    from nornir_bench.history.repository import RepositoryError, file_name

    try:
        text = config_at(source.repo, host, source.commit, max_bytes)
    except RepositoryError as exc:
        raise ValueError(f"from_history: {exc}") from None
    try:
        return change_lines(text.splitlines())
    except ValueError as exc:
        raise ValueError(f"from_history: {file_name(host)} at commit {source.commit[:12]}: "
                         f"{exc}") from None


def masked_lines(lines: Sequence[str], driver: HConfigDriverBase) -> tuple[re.Pattern[str], ...]:
    """The lines of ``lines`` holding the mask, as ``ignore`` patterns: each finds its own
    line, and a device's line that differs from it only where the mask stands (its secret).
    Built from the lines as ``driver`` parses them, the text the patterns are matched with."""
    if not any(MASK in line for line in lines):
        return ()
    texts = {child.text for child in parse_config(lines, driver).all_children()
             if MASK in child.text}
    return tuple(re.compile("^" + ".+".join(map(re.escape, text.split(MASK))) + "$")
                 for text in sorted(texts))


def notes(host: str, source: HistorySource, lines: Sequence[str]) -> tuple[str, ...]:
    """What a restore says in its result: where its intended configuration is from, and, once,
    how many of its lines hold a masked secret and were left out."""
    from nornir_bench.history.repository import file_name

    where = f"{file_name(host)} at commit {source.commit[:12]} of {source.repo}"
    said = [f"intended configuration: {where}"]
    masked = sum(MASK in line for line in lines)
    if masked:
        said.append(
            f"{masked} line{'s' if masked != 1 else ''} of it {'was' if masked == 1 else 'were'} "
            f"backed up masked ({MASK}): left out of both sides, not sent; the device keeps "
            "its own lines there (a repository backed up with --keep-secrets restores them)"
        )
    return tuple(said)
