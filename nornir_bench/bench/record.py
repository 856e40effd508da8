"""The machine-readable record of one benchmark run: what ``script.py --record PATH`` writes.

``script.py`` ends with a line for people (``10000 ok, 0 failed | run 0.680 s | process: ...``)
that may be reworded at any time; programs read this record instead. The sweep runs each point
as a child ``script.py --record PATH`` and reads the file back, so nothing but this module's
format binds the two. One JSON object, written once the run is over::

    {"version": 1, "runner": "threadpool", "workers": 1000, "task": "sim_rtt", "hosts": 10000,
     "rtt": 0.05, "ok": 10000, "failed": 0, "changed": 0, "run_wall": 0.68,
     "interrupted": false, "wall": 0.97, "user": 0.55, "sys": 0.38, "cpu_percent": 95.0,
     "max_rss_mib": 75.0}

A reader ignores keys it does not know, so figures can be added without a new ``version``;
``version`` changes only when a key changes meaning or goes away.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nornir_bench.core.checks import is_number, is_whole_number
from nornir_bench.core.exceptions import NornirBenchError

if TYPE_CHECKING:
    from nornir_bench.bench.benchmark import BenchmarkRun
    from nornir_bench.bench.usage import ProcessUsage

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_VERSION",
    "BenchmarkRecord",
    "RecordError",
    "read_record",
    "write_record",
]

RECORD_VERSION = 1
MAX_RECORD_BYTES = 64 * 1024
"""A record is about 300 bytes; a reader reads no more than this of a file that claims to be one."""


class RecordError(NornirBenchError):
    """A record that is missing, unreadable or not what :func:`write_record` writes (one line)."""


@dataclass(frozen=True)
class BenchmarkRecord:
    """One run's figures, as ``script.py`` prints them for people.

    Attributes:
        runner, workers, task: what ran (``workers``: the runner's ``num_workers``, ``None``
            for runners without that option).
        hosts, rtt: the hosts asked for, and the simulated round trip (seconds).
        ok, failed, changed: hosts that finished, by outcome.
        run_wall: seconds of the run itself (``nr.run``).
        interrupted: Ctrl-C or SIGTERM stopped the run; the counts are what finished.
        wall, user, sys, cpu_percent, max_rss_mib: the whole process, as ``time`` reports it.
    """

    runner: str
    workers: int | None
    task: str
    hosts: int
    rtt: float
    ok: int
    failed: int
    changed: int
    run_wall: float
    interrupted: bool
    wall: float
    user: float
    sys: float
    cpu_percent: float
    max_rss_mib: float

    @classmethod
    def of(
        cls, run: BenchmarkRun, usage: ProcessUsage, *, hosts: int, rtt: float
    ) -> BenchmarkRecord:
        """The record of ``run``, with the process's figures from ``usage``."""
        summary = run.summary
        return cls(
            runner=run.runner,
            workers=run.workers,
            task=run.task,
            hosts=hosts,
            rtt=rtt,
            ok=summary.ok,
            failed=summary.failed,
            changed=summary.changed,
            run_wall=summary.wall or 0.0,
            interrupted=run.interrupted,
            wall=usage.wall,
            user=usage.user,
            sys=usage.sys,
            cpu_percent=usage.cpu_percent,
            max_rss_mib=usage.max_rss_mib,
        )

    def to_json(self) -> str:
        """One line of JSON, ``version`` first."""
        return json.dumps({"version": RECORD_VERSION, **dataclasses.asdict(self)})

    @classmethod
    def from_json(cls, text: str | bytes) -> BenchmarkRecord:
        """Parse and check a record.

        Raises:
            RecordError: it is not JSON, not an object, of another version, or a figure is
                missing or of the wrong kind; the message says which, in one line.
        """
        try:
            data = json.loads(text)
        except RecursionError:  # nested thousands deep: no record is
            raise RecordError("the record nests too deep to be a record") from None
        except ValueError as exc:  # UnicodeDecodeError is one
            raise RecordError(f"the record is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise RecordError(f"the record is not a JSON object but {type(data).__name__}")
        if data.get("version") != RECORD_VERSION:
            raise RecordError(
                f"the record's version is {_shown(data.get('version'))}, not {RECORD_VERSION}"
            )
        fields = dataclasses.fields(cls)
        missing = [field.name for field in fields if field.name not in data]
        if missing:
            raise RecordError(f"the record lacks {', '.join(missing)}")
        for field in fields:
            accepts, allowed = _KINDS[str(field.type)]
            if not accepts(data[field.name]):
                raise RecordError(
                    f"the record's {field.name} must be {allowed}, got {_shown(data[field.name])}"
                )
        return cls(**{field.name: data[field.name] for field in fields})


def write_record(path: str | os.PathLike[str], record: BenchmarkRecord) -> None:
    """Write ``record`` to ``path`` (replacing the file), one line ending in a newline.

    Raises:
        OSError: the file cannot be written.
    """
    with open(path, "w", encoding="utf-8") as file:
        file.write(record.to_json() + "\n")


def read_record(path: str | os.PathLike[str]) -> BenchmarkRecord:
    """Read the record at ``path``, at most :data:`MAX_RECORD_BYTES` of it.

    Raises:
        RecordError: the file is missing, unreadable, larger than a record can be, or not a
            record (see :meth:`BenchmarkRecord.from_json`); the message says which, in one line.
    """
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        raise RecordError("no record was written") from None
    except OSError as exc:
        raise RecordError(f"cannot read the record: {exc.strerror or exc}") from None
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"the record is larger than {MAX_RECORD_BYTES // 1024} KiB")
    if not data.strip():
        raise RecordError("the record is empty")
    return BenchmarkRecord.from_json(data)


# Each field's annotation: what it accepts, and how an error names what is allowed.
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "str": (lambda value: isinstance(value, str), "a string"),
    "bool": (lambda value: isinstance(value, bool), "true or false"),
    "int": (lambda value: is_whole_number(value, 0), "a whole number >= 0"),
    "int | None": (lambda value: value is None or is_whole_number(value, 1),
                   "a whole number >= 1 or null"),
    "float": (lambda value: is_number(value, 0), "a finite number >= 0"),
}


def _shown(value: object) -> str:
    """``value`` in an error message: its JSON, cut short, so the message stays one line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else f"{text[:37]}..."
