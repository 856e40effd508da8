"""Per-host records, streamed to a JSON Lines file as each host finishes.

One line per host, written and flushed in ``task_instance_completed``: a run that crashes or is
stopped with Ctrl-C keeps every host that had finished. A line holds::

    {"version": 1, "host": "rtr1", "job": "/jobs/show.yaml", "overrides": {}, "step": 1,
     "task": "send_command", "failed": false, "elapsed": 0.412,
     "start": 0.013, "end": 0.425, "run_start": "2026-11-26T19:16:08.123456+00:00",
     "batch": null, "worker": null,
     "result": "...", "exception": null, "message": null, "traceback": null,
     "abandoned": false, "attempts": 1, "failed_attempts": [],
     "changed": false, "change": null, "diff": null, "checks": null, "session_log": null,
     "platform": "ios", "groups": ["core"]}

Each line is a :class:`~nornir_bench.processors.host_record.HostRecord` (its keys and their
types, ``version`` the record's; records files are read back by
:mod:`nornir_bench.processors.records_file`). ``job``, ``overrides``, ``step`` and ``task`` are
the fields the writer was given (``fields``): a job run gives every line its job, what the
command line changed, its step's number (from 1; 1 in a job of one task) and task name, so that
the lines of a job of several steps, all in one file, say which step each is of. Without
``fields`` they are null (``overrides``: empty).

``start`` and ``end`` are the seconds from the run's start (the job's, for every step) to
the host's start and end, as this process saw them (a host sent to a worker starts as it is
sent); ``run_start`` is that start on the wall clock (UTC), the same in every line of a run.
``batch`` is the canary batch the host ran in (from 1), when the runner's ``batches`` made
some; ``worker`` the process a remote runner's worker ran it in (``host:pid``), else null;
``session_log`` the host's session log, when the job keeps them and the host had a session
(:mod:`nornir_bench.jobs.sessions`), else null; ``platform`` and ``groups`` the host's (null
and empty for a host the run failed itself: stopped in flight, refused before it ran).

``exception`` is the type name of what made the host fail (a failed subtask's own exception is
preferred to the ``NornirSubTaskError`` of its parent), ``message`` its text and ``traceback``
the full traceback, which the terminal never shows; ``abandoned`` says the host failed at its
deadline in a blocking call that went on in its thread. ``attempts`` counts the times the task
started on the host, and ``failed_attempts`` holds ``{"exception", "message", "abandoned",
"seconds", "wait"}`` for each run before the one that counted (``seconds`` it ran, the
``wait`` after it before the next; null when not known). See
:mod:`nornir_bench.core.attempts`: the run's ``retries``, or the process pool running a host
again when another host crashed its worker.
``changed`` is nornir's; ``change`` is what a configuration change did (``state``: ``would
change``, ``no change``, ``changed``, ``rolled back``, ``rollback failed``, ``not rolled
back``, ``interrupted during change``, ``not touched``; ``backup``: the file of the
configuration before it),
and ``diff`` its diff (:mod:`nornir_bench.core.changes`). ``checks`` holds each state check
read around a change or by an audit (``name``, ``host``, ``command``, ``path``, ``expect``,
``before``, ``after``, ``held``, ``failure``; :mod:`nornir_bench.tasks.checks.check_outcomes`), else
null. Values that JSON cannot hold are
written as their ``repr``; known secrets are masked in every
value before it is encoded.
"""

from __future__ import annotations

import json
import os
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from time import perf_counter
from typing import IO, TYPE_CHECKING, Any

from nornir.core.exceptions import NornirSubTaskError

from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.changes import change_of, changed_of, checks_of
from nornir_bench.core.failures import failure_of
from nornir_bench.core.secrets import Redactor
from nornir_bench.processors.host_record import HostRecord
from nornir_bench.processors.timing import HostTimer

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

__all__ = ["RUN_FIELDS", "JsonLinesWriter", "RecordsWriteError", "encoded", "host_record"]

RUN_FIELDS = ("job", "overrides", "step", "task")
"""The fields a writer sets in every line it writes (its ``fields``): the run's, not a host's."""


def host_record(
    name: str, multi: MultiResult, elapsed: float | None = None, **when: Any
) -> HostRecord:
    """The record of one host's run; ``when``: its times (``start``, ``end``, ``run_start``,
    ``batch``), and any other of :class:`HostRecord`'s fields to set."""
    failure = failure_of(multi)
    exc = failure.exception if failure is not None else None
    first = multi[0]
    attempts, failed_attempts = attempts_of(multi)
    change = change_of(multi)
    checks = checks_of(multi)
    return HostRecord(
        host=name,
        failed=bool(multi.failed),
        elapsed=elapsed,
        worker=getattr(first, "worker", None),
        # With an exception, nornir puts the traceback text in ``result``: it goes below.
        result=None if first.exception is not None else first.result,
        exception=None if exc is None else type(exc).__name__,
        message=None if exc is None else str(exc),
        traceback=None if failure is None or exc is None else _traceback(failure.result, exc),
        abandoned=bool(getattr(exc, "abandoned", False)),
        attempts=attempts,
        failed_attempts=tuple(failed_attempts),
        changed=changed_of(multi),
        change=None if change is None else change[0],
        diff=None if change is None or not change[1] else change[1],
        checks=None if checks is None else tuple(checks),
        **when,
    )


def encoded(record: HostRecord, redact: Redactor) -> str:
    """``record``'s line (without its end), its secrets masked."""
    # Masked before encoding: JSON escapes a secret holding '"' or '\\' past recognition.
    return json.dumps(
        redact.value(record.as_json()), default=redact.json_default, ensure_ascii=False
    )


def _traceback(text: object, exc: BaseException) -> str:
    if (
        isinstance(text, str)
        and text.startswith("Traceback")
        and not isinstance(exc, NornirSubTaskError)
    ):
        return text
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines)


class RecordsWriteError(OSError):
    """A record could not be written (the file-size limit, a full disk): its cause is the
    ``OSError`` of the write."""


class JsonLinesWriter(HostTimer):
    """A processor writing each host's record to ``file`` as the host finishes.

    Args:
        file: an open text file; the writer flushes it after each line, and does not close it.
        redact: masks secrets in each line (none by default).
        fields: values of every line: any of :data:`RUN_FIELDS` (a job's ``job``,
            ``overrides``, ``step`` and ``task``).

    It is also a :class:`HostTimer`: ``elapsed`` holds every host's seconds, as in the records.
    Lines are written under a lock, so runners that finish hosts on several threads are safe.
    """

    def __init__(
        self,
        file: IO[str],
        *,
        redact: Redactor | None = None,
        fields: Mapping[str, Any] | None = None,
        origin: float | None = None,
        batch_of: Callable[[int], int | None] | None = None,
        session_logs: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.file = file
        self.redact = redact or Redactor()
        self.fields = dict(fields or {})
        unknown = sorted(set(self.fields) - set(RUN_FIELDS))
        if unknown:
            raise ValueError(f"JsonLinesWriter: fields {', '.join(unknown)} are not a record's: "
                             f"give any of {', '.join(RUN_FIELDS)}")
        self.written = 0
        self._lock = threading.Lock()
        self._sealed = False
        # The run's start: on perf_counter's clock (offsets), and the wall clock's, once.
        self.origin = perf_counter() if origin is None else origin
        self.run_start = datetime.now(timezone.utc) - timedelta(
            seconds=perf_counter() - self.origin
        )
        self._run_start = self.run_start.isoformat(timespec="microseconds")
        self.batch_of = batch_of
        self.session_logs = session_logs or {}
        self._starts = 0
        self._batch: dict[str, int | None] = {}

    def task_instance_started(self, task: Task, host: Host) -> None:
        super().task_instance_started(task, host)  # its start, on HostTimer's clock
        if self.batch_of is not None:  # counted in start order: only then a lock per host
            with self._lock:
                self._batch[host.name] = self.batch_of(self._starts)
                self._starts += 1

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        started = self._started.get(host.name)  # HostTimer forgets it as the host completes
        super().task_instance_completed(task, host, result)
        kind = (host.platform, tuple(group.name for group in host.groups))
        self.write(host.name, result, sealed_too=False, kind=kind, started=started)

    def seal(self) -> None:
        """Write no more hosts as they finish: a run that abandoned its hosts in flight writes
        their records itself (:meth:`write`), and one of them ending later must not add a
        second."""
        with self._lock:
            self._sealed = True

    def write(
        self, name: str, result: MultiResult, *, sealed_too: bool = True,
        kind: tuple[str | None, tuple[str, ...]] | None = None, started: float | None = None,
    ) -> None:
        """Write host ``name``'s record (also once sealed, unless ``sealed_too`` is false);
        ``kind``: its ``platform`` and ``groups``, when known; ``started``: its start on
        ``perf_counter``'s clock (else as HostTimer still holds it: a host not completed)."""
        if started is None:
            started = self._started.get(name)
        log = self.session_logs.get(name)
        record = host_record(
            name, result, self.elapsed.get(name),
            start=None if started is None else round(started - self.origin, 6),
            end=round(perf_counter() - self.origin, 6), run_start=self._run_start,
            batch=self._batch.pop(name, None),
            session_log=log if log is not None and os.path.exists(log) else None,
            **self.fields,
        )
        if kind is not None:
            record = replace(record, platform=kind[0], groups=kind[1])
        line = encoded(record, self.redact)
        with self._lock:
            if self._sealed and not sealed_too:
                return
            try:
                self.file.write(line + "\n")
                self.file.flush()
            except OSError as exc:  # the file-size limit, a full disk: the job says which file
                raise RecordsWriteError(*exc.args) from exc
            self.written += 1
