"""Reading a records file (:mod:`nornir_bench.processors.records` writes them): its host
records, streamed, each a :class:`~nornir_bench.processors.host_record.HostRecord`.

Every reader (the report page, ``diff``, ``--rerun-failed``) reads them here. A line that is
not a host's record (cut short by a run killed while writing it, not JSON, a value of the wrong
type) is skipped and counted, or with ``strict`` is an error; a line of a newer version of
records is always an error, in one line saying so. A file whose first line is not a host's
record is not a records file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.processors.host_record import (
    NOT_RECORDS,
    HostRecord,
    NewerRecord,
    NotARecord,
    WrongValue,
)

__all__ = [
    "MAX_RECORD_LINE",
    "RecordsFileError",
    "RecordsRead",
    "each_record",
    "each_record_at",
    "record_at",
]


class RecordsFileError(NornirBenchError):
    """A records file that cannot be read, or is not one: one line, saying which and why."""


MAX_RECORD_LINE = 256 * 1024 * 1024
"""A line longer than this (bytes) is not read whole: it is skipped as corrupt."""


@dataclass
class RecordsRead:
    """How reading a records file went: lines read, and those skipped (not JSON, cut short,
    not a host's record), with the first few line numbers and the first reason a value gave."""

    path: Path
    lines: int = 0
    skipped: int = 0
    first_skipped: list[int] = field(default_factory=list)
    reason: str | None = None  # the first skipped line's, when its values said what was wrong

    def skip(self, number: int, why: NotARecord) -> None:
        self.skipped += 1
        if len(self.first_skipped) < 5:
            self.first_skipped.append(number)
        if self.reason is None and isinstance(why, WrongValue):
            self.reason = f"line {number}: {why}"

    def note(self) -> str | None:
        """``skipped 2 of 1,000 lines (not a host's record: 17, 998)``, when some were."""
        if not self.skipped:
            return None
        at = ", ".join(map(str, self.first_skipped)) + (", ..." if self.skipped > 5 else "")
        return (f"{self.path}: skipped {self.skipped:,} of {self.lines:,} lines that are not a "
                f"host's record (corrupt or cut short: line {at})"
                + (f"; {self.reason}" if self.reason else ""))


def each_record(
    path: Path, *, strict: bool = False, read: RecordsRead | None = None
) -> Iterator[HostRecord]:
    """The host records of ``path``, streamed, in order (see the module).

    Raises:
        RecordsFileError: the file cannot be read, is not UTF-8 text, is not a records file,
            holds a record of a newer version, or (``strict``) a line that is not a record.
    """
    for _, record in each_record_at(path, strict=strict, read=read):
        yield record


def each_record_at(
    path: Path, *, strict: bool = False, read: RecordsRead | None = None
) -> Iterator[tuple[int, HostRecord]]:
    """:func:`each_record`, each record with its line's byte offset, to read it again with
    :func:`record_at`."""
    read = read if read is not None else RecordsRead(path)
    try:
        with path.open("rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # /dev/zero, a pipe: endless
                raise RecordsFileError(f"{path}: not a regular file: not a records file")
            offset = 0
            for number, raw in enumerate(iter(lambda: file.readline(MAX_RECORD_LINE), b""), 1):
                read.lines = number
                try:
                    record = _record(raw)
                except NewerRecord as exc:  # not corrupt: skipping it would hide the file
                    raise RecordsFileError(f"{path}: line {number} is {exc}") from None
                except NotARecord as exc:
                    if strict or number == 1:
                        raise RecordsFileError(
                            f"{path}: line {number} is not a host's record: {exc}"
                        ) from None
                    read.skip(number, exc)
                else:
                    yield offset, record
                offset += len(raw)
    except OSError as exc:
        raise RecordsFileError(
            f"{path}: cannot read the records file: {exc.strerror or exc}"
        ) from None
    if read.lines == 0:
        raise RecordsFileError(f"{path}: empty: not a records file of nornir-bench run")


def record_at(path: Path, offset: int) -> HostRecord:
    """The record whose line starts at byte ``offset`` of ``path`` (see
    :func:`each_record_at`)."""
    with path.open("rb") as file:
        file.seek(offset)
        raw = file.readline(MAX_RECORD_LINE)
    try:
        return _record(raw)
    except NotARecord:
        raise RecordsFileError(
            f"{path}: changed while it was read: no record at byte {offset}"
        ) from None


def _record(raw: bytes) -> HostRecord:
    """A line's host record.

    Raises:
        NotARecord: not UTF-8 JSON, cut short, not a host's record, or a value of a wrong type.
    """
    if not raw.endswith(b"\n"):
        raise NotARecord(NOT_RECORDS)  # cut short (or longer than a line may be)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past the stack
        raise NotARecord(NOT_RECORDS) from None
    return HostRecord.from_json(value)
