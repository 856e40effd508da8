"""A host's record, the line of a records file, as one type: :class:`HostRecord`.

The writer (:mod:`nornir_bench.processors.records`) builds one per host and encodes it with
:meth:`HostRecord.as_json`; every reader (the report page, ``diff``, ``--rerun-failed``)
gets them from :mod:`nornir_bench.processors.records_file`, which decodes each line with
:meth:`HostRecord.from_json`. So a key is named in this module alone.

Each line carries ``version`` (:data:`RECORD_VERSION`). Lines without one were written before
records had versions; their keys came one release after another, and a line of any of them
still loads, its missing keys at their defaults (``step``/``task``, ``attempts``/
``failed_attempts``, ``abandoned``, ``changed``/``change``/``diff``, the times, ``session_log``,
``platform``/``groups``, ``checks``, ``job``/``overrides``): their values are read as the
readers of those releases read them, a value of another type shown as text or left out. A line
of this version must hold its types; a line of a newer version is refused (:class:`NewerRecord`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nornir_bench.core.attempts import FailedAttempt

__all__ = ["NOT_RECORDS", "RECORD_VERSION", "HostRecord", "NewerRecord", "NotARecord", "WrongValue"]

RECORD_VERSION = 1
"""The version of the records this nornir-bench writes, and the newest it reads."""


class NotARecord(ValueError):
    """A line that is not a host's record: its text says what was wrong and what is allowed."""


class WrongValue(NotARecord):
    """A record of this version holding a value of a wrong type, or none where one is needed."""


NOT_RECORDS = "not a records file of nornir-bench run"
"""What a line that is no host's record at all (not JSON, cut short, no ``host``) says."""


class NewerRecord(NotARecord):
    """A record of a version newer than :data:`RECORD_VERSION`: written by a newer
    nornir-bench."""


@dataclass(frozen=True)
class HostRecord:
    """One host's run of one step, as a records file holds it.

    Attributes:
        host: the host's name.
        failed: whether the host failed.
        job: the job file's path (a job run), else ``None``.
        overrides: what the command line changed in the job (``limit``, ``runner``, ...).
        step: the step's number (from 1), or its name; ``task``: the step's task.
        elapsed: the host's seconds; ``start``/``end``: seconds from the run's start;
            ``run_start``: that start on the wall clock (ISO 8601, UTC).
        batch: the canary batch it ran in (from 1); ``worker``: the process that ran it.
        result: its task's result (any JSON value; what JSON cannot hold, as its ``repr``).
        exception, message, traceback: why it failed (the type name, its text, in full).
        abandoned: it failed at its deadline in a blocking call that went on in its thread.
        attempts: times the task started; ``failed_attempts``: the runs that did not count.
        changed: nornir's; ``change``: what a configuration change did (``state``,
            ``backup``, ...) and ``diff`` its diff.
        checks: each state check's values (``name``, ``before``, ``after``, ``held``, ...).
        session_log: the host's session log; ``platform``, ``groups``: the host's.
        version: the version the record was written in (0: before records had versions).
    """

    host: str
    failed: bool
    job: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    step: int | str | None = None
    task: str | None = None
    elapsed: float | None = None
    start: float | None = None
    end: float | None = None
    run_start: str | None = None
    batch: int | None = None
    worker: str | None = None
    result: Any = None
    exception: str | None = None
    message: str | None = None
    traceback: str | None = None
    abandoned: bool = False
    attempts: int = 1
    failed_attempts: tuple[FailedAttempt, ...] = ()
    changed: bool = False
    change: Mapping[str, Any] | None = None
    diff: str | None = None
    checks: tuple[Mapping[str, Any], ...] | None = None
    session_log: str | None = None
    platform: str | None = None
    groups: tuple[str, ...] = ()
    version: int = RECORD_VERSION

    @property
    def change_state(self) -> str | None:
        """What the configuration change did (``change``'s ``state``), if the host had one."""
        return None if self.change is None else str(self.change["state"])

    def as_json(self) -> dict[str, Any]:
        """The record as its line holds it (every key, ``version`` first), before encoding."""
        return {
            "version": self.version, "host": self.host, "job": self.job,
            "overrides": dict(self.overrides), "step": self.step, "task": self.task,
            "failed": self.failed, "elapsed": self.elapsed, "start": self.start,
            "end": self.end, "run_start": self.run_start, "batch": self.batch,
            "worker": self.worker, "result": self.result, "exception": self.exception,
            "message": self.message, "traceback": self.traceback, "abandoned": self.abandoned,
            "attempts": self.attempts,
            "failed_attempts": [
                {"exception": f.exception, "message": f.message, "abandoned": f.abandoned,
                 "seconds": f.seconds, "wait": f.wait}
                for f in self.failed_attempts
            ],
            "changed": self.changed,
            "change": None if self.change is None else dict(self.change),
            "diff": self.diff,
            "checks": None if self.checks is None else [dict(c) for c in self.checks],
            "session_log": self.session_log, "platform": self.platform,
            "groups": list(self.groups),
        }

    @classmethod
    def from_json(cls, value: object) -> HostRecord:
        """The record a decoded line holds, of any version up to :data:`RECORD_VERSION`.

        Raises:
            NotARecord: it is not a host's record, or (this version) a value has a wrong type.
            NewerRecord: it is a record of a newer version.
        """
        if not isinstance(value, dict) or not isinstance(value.get("host"), str):
            raise NotARecord(NOT_RECORDS)
        if "version" not in value:
            return cls(**_unversioned(value))
        version = value["version"]
        if type(version) is not int or version < 1:
            raise WrongValue(f"'version' is {_shown(version)}, allowed: a whole number from 1 "
                             f"to {RECORD_VERSION}")
        if version > RECORD_VERSION:
            raise NewerRecord(
                f"a record of version {version}, newer than this nornir-bench reads (up to "
                f"{RECORD_VERSION}): read it with the nornir-bench that wrote it, or a newer one"
            )
        return cls(**_checked(value), version=version)


# -- this version: every value of its type --------------------------------------------------


def _is_text(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_number(value: object) -> bool:
    return value is None or _finite(value) is not None


def _is_whole(value: object) -> bool:
    return type(value) is int


def _is_attempt(value: object) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("exception"), str)
            and isinstance(value.get("message"), str)
            and isinstance(value.get("abandoned", False), bool)
            and _is_number(value.get("seconds")) and _is_number(value.get("wait")))


_TEXT = "a string or null"
_NUMBER = "a number or null"
_BOOL = "true or false"

_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "failed": (lambda v: isinstance(v, bool), _BOOL),
    "job": (_is_text, _TEXT),
    "overrides": (lambda v: isinstance(v, dict), "an object"),
    "step": (lambda v: v is None or _is_whole(v) or isinstance(v, str),
             "a whole number, a string or null"),
    "task": (_is_text, _TEXT),
    "elapsed": (_is_number, _NUMBER),
    "start": (_is_number, _NUMBER),
    "end": (_is_number, _NUMBER),
    "run_start": (_is_text, _TEXT),
    "batch": (lambda v: v is None or _is_whole(v), "a whole number or null"),
    "worker": (_is_text, _TEXT),
    "exception": (_is_text, _TEXT),
    "message": (_is_text, _TEXT),
    "traceback": (_is_text, _TEXT),
    "abandoned": (lambda v: isinstance(v, bool), _BOOL),
    "attempts": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                 "a whole number from 1"),
    "failed_attempts": (
        lambda v: isinstance(v, list) and all(map(_is_attempt, v)),
        "a list of objects of exception and message (strings), abandoned (true or false), "
        "seconds and wait (numbers or null)",
    ),
    "changed": (lambda v: isinstance(v, bool), _BOOL),
    "change": (lambda v: v is None or (isinstance(v, dict) and isinstance(v.get("state"), str)),
               "null or an object with a string 'state'"),
    "diff": (_is_text, _TEXT),
    "checks": (lambda v: v is None or (isinstance(v, list)
                                       and all(isinstance(c, dict) for c in v)),
               "null or a list of objects"),
    "session_log": (_is_text, _TEXT),
    "platform": (_is_text, _TEXT),
    "groups": (lambda v: isinstance(v, list) and all(isinstance(g, str) for g in v),
               "a list of strings"),
}


def _checked(value: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record of this version; each value present must be of its type."""
    if "failed" not in value:
        raise WrongValue("'failed' is missing, allowed: true or false")
    for key, (holds, allowed) in _RULES.items():
        if key in value and not holds(value[key]):
            raise WrongValue(f"{key!r} is {_shown(value[key])}, allowed: {allowed}")
    fields = {key: value[key] for key in ("host", *_RULES, "result") if key in value}
    for key in ("elapsed", "start", "end"):
        if key in fields:
            fields[key] = _finite(fields[key])  # a whole number, as JSON may write one, a float
    fields["failed_attempts"] = tuple(
        FailedAttempt(a["exception"], a["message"], a.get("abandoned", False),
                      _finite(a.get("seconds")), _finite(a.get("wait")))
        for a in fields.get("failed_attempts", ())
    )
    if fields.get("checks") is not None:
        fields["checks"] = tuple(fields["checks"])
    fields["groups"] = tuple(fields.get("groups", ()))
    return fields


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- before versions: read as the readers of those releases did -----------------------------


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: object) -> str | None:
    return None if value is None else value if isinstance(value, str) else str(value)


def _unversioned(value: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a record written before versions: any of its earlier shapes (keys absent
    from it at their defaults), a value of another type shown as text, or left out."""
    step = value.get("step")
    if not (step is None or _is_whole(step) or isinstance(step, str)):
        step = repr(step)  # a key readers group by: hashable, as it was written
    change = value.get("change")
    tried = value.get("failed_attempts")
    checks, groups, overrides = value.get("checks"), value.get("groups"), value.get("overrides")
    attempts, batch = value.get("attempts"), value.get("batch")
    return {
        "host": value["host"],
        "failed": value.get("failed") is not False,  # only false says it did not fail
        "job": _text(value.get("job")),
        "overrides": dict(overrides) if isinstance(overrides, dict) else {},
        "step": step,
        "task": _text(value.get("task")),
        "elapsed": _finite(value.get("elapsed")),
        "start": _finite(value.get("start")),
        "end": _finite(value.get("end")),
        "run_start": value.get("run_start") if isinstance(value.get("run_start"), str) else None,
        "batch": batch if _is_whole(batch) else None,
        "worker": _text(value.get("worker")),
        "result": value.get("result"),
        "exception": _text(value.get("exception")),
        "message": _text(value.get("message")),
        "traceback": _text(value.get("traceback")),
        "abandoned": bool(value.get("abandoned")),
        "attempts": attempts if isinstance(attempts, int) and _is_whole(attempts)
        and attempts >= 1 else 1,
        "failed_attempts": tuple(
            FailedAttempt(_text(a.get("exception")) or "", _text(a.get("message")) or "",
                          bool(a.get("abandoned")), _finite(a.get("seconds")),
                          _finite(a.get("wait")))
            for a in (tried if isinstance(tried, list) else ()) if isinstance(a, dict)
        ),
        "changed": bool(value.get("changed")),
        "change": ({**change, "state": str(change["state"])}
                   if isinstance(change, dict) and "state" in change else None),
        "diff": _text(value.get("diff")),
        "checks": (tuple(c for c in checks if isinstance(c, dict))
                   if isinstance(checks, list) else None),
        "session_log": _text(value.get("session_log")),
        "platform": _text(value.get("platform")),
        "groups": tuple(str(g) for g in groups) if isinstance(groups, list) else (),
        "version": 0,
    }
