"""The two sides ``nornir-bench diff`` and ``report --compare`` compare: records files, or, with
``--repo DIR``, commits of a backup repository (``HEAD~1``, ``main``, a hash, a tag).

A commit is turned into the view a records file gives (:class:`~nornir_bench.report.compare.Seen`
per host): each host's file ``HOST.cfg`` is that host, ok, its output the file's text (masked),
so :func:`~nornir_bench.report.compare.compare_sides` compares it as it compares two runs.

Compared with a commit, a records file stands for configurations: each host's last record
counts (in a job of steps, its last step's), a failed host is failed (newly failed against
the commit's file, or fixed), and a host whose result is not text (a mapping, nothing: not a
configuration) is left out of the comparison and named in a note, not compared as JSON with
a configuration.

Which a side is: with ``--repo``, a side written as a path (``./x``, ``../x``, ``/x``) is a
records file; otherwise a file that exists is a records file and a revision the repository
has is a commit; a name that is both, or neither, is refused in one line.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.core.wording import hosts_named
from nornir_bench.history.commits import Commit, CommitReader
from nornir_bench.history.reading import UnknownRevision
from nornir_bench.report.compare import Checks, Key, RecordsSide, Seen, Side

__all__ = ["CommitSide", "RecordsAsConfigs", "SideError", "sides_of"]

CONFIG_STEP = 1  # a commit's hosts are a run of one task's: step 1, as its records say


class SideError(NornirBenchError):
    """A side that is neither a records file nor a revision, or is both: one line."""


class CommitSide:
    """A commit of a backup repository as a side: each host's file, ok, its text its output."""

    def __init__(self, reader: CommitReader, commit: Commit, *, by_id: bool = False) -> None:
        self.reader = reader
        self.commit = commit
        self.name = self.label = commit.revision
        self.by_id = by_id  # digests of blob ids: for a side that is a commit too

    def seen(self) -> dict[Key, Seen]:
        return {(host, CONFIG_STEP): Seen(False, None, digest, blob)
                for host, blob, digest in self.reader.each_digest(self.commit, by_id=self.by_id)}

    def output(self, seen: Seen) -> object:
        return self.reader.text(str(seen.where))

    def checks(self, seen: Seen) -> Checks:
        return None

    def notes(self) -> list[str]:
        commit = self.commit
        return [f"{commit.revision}: commit {commit.id[:12]} of {self.reader.path}, "
                f"{commit.when:%Y-%m-%d %H:%M:%S} UTC: {mask_config_secrets(commit.summary)}"]

    def as_json(self) -> dict[str, Any]:
        return {"skipped_lines": 0, "commit": self.commit.id, "left_out": []}


class RecordsAsConfigs:
    """A records file compared with a commit: its hosts' configurations (see the module)."""

    def __init__(self, records: RecordsSide) -> None:
        self.records = records
        self.name = records.name
        self.label = records.label
        self.left_out: dict[str, None] = {}  # hosts whose result is not a configuration

    def seen(self) -> dict[Key, Seen]:
        configs: dict[Key, Seen] = {}
        for (host, _), seen in self.records.seen().items():
            key = (host, CONFIG_STEP)
            configs[key] = seen if seen.failed or seen.text else replace(seen, left_out=True)
        self.left_out = {host: None for (host, _), seen in configs.items() if seen.left_out}
        return configs

    def output(self, seen: Seen) -> object:
        return self.records.output(seen)

    def checks(self, seen: Seen) -> Checks:
        return None  # a commit holds no checks: none compared

    def notes(self) -> list[str]:
        notes = self.records.notes()
        if self.left_out:
            notes.append(f"{self.records.path}: left out {hosts_named(list(self.left_out))}: "
                         "their result is not a configuration (not text), so not compared "
                         "with the commit's files")
        return notes

    def as_json(self) -> dict[str, Any]:
        return {**self.records.as_json(), "left_out": list(self.left_out)}


def sides_of(old: str, new: str, *, repo: Path | None = None) -> tuple[Side, Side]:
    """The sides ``old`` and ``new`` name: records files, or with ``repo`` also revisions of
    the backup repository there (see the module).

    Raises:
        SideError: a side is both a file and a revision, or neither.
        RepositoryError: ``repo`` is not a git repository, or cannot be read.
    """
    if repo is None:
        return RecordsSide(Path(old)), RecordsSide(Path(new))
    reader = CommitReader(repo)
    before, after = _resolved(old, reader), _resolved(new, reader)
    commits = isinstance(before, Commit) + isinstance(after, Commit)
    return (_side(before, reader, commits), _side(after, reader, commits))


def _side(found: Path | Commit, reader: CommitReader, commits: int) -> Side:
    """A side of a comparison with ``commits`` commits among its two sides."""
    if isinstance(found, Commit):  # two commits: only the files that differ are read
        return CommitSide(reader, found, by_id=commits == 2)
    records = RecordsSide(found)
    return RecordsAsConfigs(records) if commits == 1 else records


def _resolved(given: str, reader: CommitReader) -> Path | Commit:
    if given.startswith(("./", "../", os.sep)):
        return Path(given)
    try:
        commit = reader.commit(given)
    except UnknownRevision:
        commit = None
    is_file = Path(given).exists()
    if commit is not None and is_file:
        raise SideError(
            f"{given}: both a file here and a revision of {reader.path}: give the records file "
            f"as ./{given}, or the commit by its hash ({commit.id[:12]})"
        )
    if commit is not None:
        return commit
    if is_file:
        return Path(given)
    raise SideError(
        f"{given}: neither a records file nor a revision of {reader.path} (a commit's hash, "
        "a branch, a tag, HEAD~1 ...)"
    )


def report_sides(
    records: list[str], compare: str | None, *, repo: Path | None = None
) -> tuple[list[Path], tuple[Side, Side] | None]:
    """``report RECORDS... [--compare OLD] [--repo DIR]``: the records files that get a section
    of the page, and the comparison's sides (``OLD`` and the first of ``RECORDS``). With
    ``repo`` both may be revisions; a commit is only a side (it holds configurations, not a
    run: no times, no outcomes), so a revision first among ``RECORDS`` gets no section.

    Raises:
        SideError: ``--repo`` without ``--compare``; a side both a file and a revision, or
            neither.
        RepositoryError: ``repo`` is not a git repository, or cannot be read.
    """
    if compare is None:
        if repo is not None:
            raise SideError("--repo DIR names the repository of --compare's sides: give "
                            "--compare OLD (a records file or a revision of DIR)")
        return [Path(path) for path in records], None
    old, new = sides_of(compare, records[0], repo=repo)
    shown = records[1:] if isinstance(new, CommitSide) else records
    return [Path(path) for path in shown], (old, new)
