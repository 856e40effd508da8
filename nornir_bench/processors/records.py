"""Per-host records, streamed to a JSON Lines file as each host finishes.

One line per host, written and flushed in ``task_instance_completed``: a run that crashes or is
stopped with Ctrl-C keeps every host that had finished. A line holds::

    {"host": "rtr1", "step": 1, "task": "send_command", "failed": false, "elapsed": 0.412,
     "result": "...", "exception": null, "message": null, "traceback": null,
     "abandoned": false, "attempts": 1, "failed_attempts": [],
     "changed": false, "change": null, "diff": null}

``step`` and ``task`` are the fields the writer was given (``fields``): a job run gives every
line its step's number (from 1; 1 in a job of one task) and task name, so that the lines of a
job of several steps, all in one file, say which step each is of. Without ``fields`` a line
has neither.

``exception`` is the type name of what made the host fail (a failed subtask's own exception is
preferred to the ``NornirSubTaskError`` of its parent), ``message`` its text and ``traceback``
the full traceback, which the terminal never shows; ``abandoned`` says the host failed at its
deadline in a blocking call that went on in its thread. ``attempts`` counts the times the task
started on the host, and ``failed_attempts`` holds ``{"exception", "message", "abandoned"}`` for
each run before the one that counted (see :mod:`nornir_bench.core.attempts`: the run's
``retries``, or the process pool running a host again when another host crashed its worker).
``changed`` is nornir's; ``change`` is what a configuration change did (``state``: ``would
change``, ``no change``, ``changed``, ``rolled back``, ``rollback failed``, ``not rolled
back``, ``interrupted during change``, ``not touched``; ``backup``: the file of the
configuration before it),
and ``diff`` its diff (:mod:`nornir_bench.core.changes`). Values that JSON cannot hold are
written as their ``repr``; known secrets are masked in every
value before it is encoded.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from nornir.core.exceptions import NornirSubTaskError

from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.changes import change_of
from nornir_bench.core.failures import failure_of
from nornir_bench.core.secrets import Redactor
from nornir_bench.processors.timing import HostTimer

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

__all__ = ["JsonLinesWriter", "RecordsWriteError", "host_record"]


def host_record(name: str, multi: MultiResult, elapsed: float | None = None) -> dict[str, Any]:
    """The record of one host's run (see the module's docstring for its keys)."""
    failure = failure_of(multi)
    exc = failure.exception if failure is not None else None
    first = multi[0]
    attempts, failed_attempts = attempts_of(multi)
    change = change_of(multi)
    return {
        "host": name,
        "failed": bool(multi.failed),
        "elapsed": elapsed,
        # With an exception, nornir puts the traceback text in ``result``: it goes below.
        "result": None if first.exception is not None else first.result,
        "exception": None if exc is None else type(exc).__name__,
        "message": None if exc is None else str(exc),
        "traceback": None if failure is None or exc is None else _traceback(failure.result, exc),
        "abandoned": bool(getattr(exc, "abandoned", False)),
        "attempts": attempts,
        "failed_attempts": [
            {"exception": f.exception, "message": f.message, "abandoned": f.abandoned}
            for f in failed_attempts
        ],
        "changed": bool(multi.changed),
        "change": None if change is None else change[0],
        "diff": None if change is None or not change[1] else change[1],
    }


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
        fields: keys and values added to every line, after ``host`` (a job's ``step`` and
            ``task``).

    It is also a :class:`HostTimer`: ``elapsed`` holds every host's seconds, as in the records.
    Lines are written under a lock, so runners that finish hosts on several threads are safe.
    """

    def __init__(
        self,
        file: IO[str],
        *,
        redact: Redactor | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.file = file
        self.redact = redact or Redactor()
        self.fields = dict(fields or {})
        self.written = 0
        self._lock = threading.Lock()
        self._sealed = False

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        super().task_instance_completed(task, host, result)
        self.write(host.name, result, sealed_too=False)

    def seal(self) -> None:
        """Write no more hosts as they finish: a run that abandoned its hosts in flight writes
        their records itself (:meth:`write`), and one of them ending later must not add a
        second."""
        with self._lock:
            self._sealed = True

    def write(self, name: str, result: MultiResult, *, sealed_too: bool = True) -> None:
        """Write host ``name``'s record (also once sealed, unless ``sealed_too`` is false)."""
        record = host_record(name, result, self.elapsed.get(name))
        if self.fields:
            record = {"host": record.pop("host"), **self.fields, **record}
        # Masked before encoding: JSON escapes a secret holding '"' or '\\' past recognition.
        line = json.dumps(
            self.redact.value(record), default=self.redact.json_default, ensure_ascii=False
        )
        with self._lock:
            if self._sealed and not sealed_too:
                return
            try:
                self.file.write(line + "\n")
                self.file.flush()
            except OSError as exc:  # the file-size limit, a full disk: the job says which file
                raise RecordsWriteError(*exc.args) from exc
            self.written += 1
