"""A commit of a backup repository read as its hosts' configurations: what ``nornir-bench diff``
and the report page compare when a side is a revision (``HEAD~1``, ``main``, a hash, a tag).

The repository is only read (never made, locked or written): a backup may run meanwhile. The
files' text is masked as a run's output is (:func:`~nornir_bench.core.secrets.mask_config_secrets`),
also in a repository kept with ``--keep-secrets``. Each blob's digest is kept by its id, so the
two sides of one repository read an unchanged host's file once; two commits are compared by
their blobs' ids, so only the files that differ are read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pygit2

from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.history.reading import commit_named, open_repository
from nornir_bench.history.repository import RepositoryError, host_of

__all__ = ["Commit", "CommitReader"]


@dataclass(frozen=True)
class Commit:
    """A commit a revision names, and its hosts' files.

    Attributes:
        revision: as the user gave it (``HEAD~1``).
        id: the commit's id.
        when: when it was made (UTC).
        summary: its message's first line.
        files: each host's blob id, by host (its file ``HOST.cfg`` unescaped).
    """

    revision: str
    id: str
    when: datetime
    summary: str
    files: dict[str, str]


class CommitReader:
    """The commits of the backup repository at ``path``, read only.

    Raises:
        RepositoryError: ``path`` is not a git repository, or cannot be read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = open_repository(path, f"--repo {path}")
        self._digests: dict[str, int] = {}

    def commit(self, revision: str) -> Commit:
        """The commit ``revision`` names (anything ``git rev-parse`` takes), its files listed.

        Raises:
            UnknownRevision: no such revision, or it names no commit.
            RepositoryError: the repository cannot be read (a corrupt object).
        """
        commit = commit_named(self.repo, f"--repo {self.path}", revision)
        try:
            files = {host: str(entry.id) for entry in commit.tree
                     if entry.type_str == "blob"
                     and (host := host_of(entry.name or "")) is not None}
        except (pygit2.GitError, KeyError, ValueError) as exc:
            raise RepositoryError(f"--repo {self.path}: cannot read {revision}: {exc}") from None
        return Commit(
            revision=revision,
            id=str(commit.id),
            when=datetime.fromtimestamp(commit.commit_time, timezone.utc),
            summary=commit.message.splitlines()[0] if commit.message else "",
            files=files,
        )

    def text(self, blob: str) -> str:
        """A host's file (by its blob id), masked.

        Raises:
            RepositoryError: the blob cannot be read (a corrupt or missing object).
        """
        return mask_config_secrets(self._raw(blob).decode("utf-8", "replace"))

    def digest(self, blob: str) -> int:
        """A digest of the file's text as committed (not masked: masking every file costs more
        than reading it), within this process: equal texts, equal digests, so a file equals a
        records file's text result it was written from. A masked repository's files are that
        text; a file whose digest differs is read again masked for its diff, and one that
        differs only in what masking hides has none."""
        known = self._digests.get(blob)
        if known is None:
            known = self._digests[blob] = hash(self._raw(blob).decode("utf-8", "replace"))
        return known

    def each_digest(
        self, commit: Commit, *, by_id: bool = False
    ) -> Iterator[tuple[str, str, int]]:
        """Each host of ``commit`` with its blob id and its text's digest (``by_id``: its id's,
        read from the tree alone: to compare with another commit), by host name."""
        for host in sorted(commit.files):
            blob = commit.files[host]
            yield host, blob, hash(blob) if by_id else self.digest(blob)

    def _raw(self, blob: str) -> bytes:
        try:
            found = self.repo[blob]
        except (pygit2.GitError, KeyError, ValueError) as exc:
            raise RepositoryError(f"--repo {self.path}: cannot read blob {blob}: {exc}") from None
        return found.data if isinstance(found, pygit2.Blob) else b""
