"""What a configuration change did to a host, as the change tasks say it: a ``change``
mapping (``state``, ``backup``) on the task's ``Result``, or on the exception it failed with
(``tasks.changes.config``'s ``ConfigChangeFailed``). The records, the summary and ``--rerun-failed``
read it from here, so they agree.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from nornir_bench.core.failures import each_result

if TYPE_CHECKING:
    from nornir.core.task import MultiResult, Task

__all__ = [
    "CHANGED",
    "COMPLIANT",
    "ConfigsRead",
    "DRIFTED",
    "note_change",
    "noted_change",
    "INTERRUPTED",
    "NOT_ROLLED_BACK",
    "NOT_SAVED",
    "NOT_TOUCHED",
    "NO_CHANGE",
    "ROLLBACK_FAILED",
    "ROLLED_BACK",
    "WOULD_CHANGE",
    "change_of",
    "changed_of",
    "checks_of",
    "configs_of",
    "left_changed",
    "note_left_changed",
]

WOULD_CHANGE, NO_CHANGE, CHANGED = "would change", "no change", "changed"
# A replace's dry run (``--check``): the device holds its intended configuration, or not.
COMPLIANT, DRIFTED = "compliant", "drifted"
ROLLED_BACK, ROLLBACK_FAILED, NOT_ROLLED_BACK = "rolled back", "rollback failed", "not rolled back"
NOT_SAVED = "not saved"  # the change made and verified (or nothing to change), the save refused
INTERRUPTED = "interrupted during change"
NOT_TOUCHED = "not touched"  # abandoned in flight before anything was sent


_NOTE = "_nornir_bench_change"


def note_change(
    task: Task, state: str | None, backup: str | None = None, *, holds: str | None = None
) -> None:
    """A change task says how far its change has got, as it goes: what it did if a deadline
    stops it now (``NOT_TOUCHED`` before its first line, then ``INTERRUPTED`` with its backup;
    ``None`` once its result or error says it), and ``holds``: what holds on the device then,
    when the change knows (said instead of "state unknown"). Kept on the host's own task (a
    subtask's note reaches it), where the core reads it."""
    root = task
    while getattr(root, "parent_task", None) is not None:
        root = root.parent_task  # type: ignore[assignment]
    note = None if state is None else {"state": state, "backup": backup}
    if note is not None and holds is not None:
        note["holds"] = holds
    setattr(root, _NOTE, note)


def noted_change(task: Task) -> dict[str, Any] | None:
    """What a change under ``task`` said of itself last (:func:`note_change`), if any."""
    note: dict[str, Any] | None = getattr(task, _NOTE, None)
    return None if note is None else dict(note)


def change_of(multi: MultiResult) -> tuple[dict[str, Any], str] | None:
    """The last change a host's results say (its ``change`` mapping and its diff), if any."""
    found = None
    for item in each_result(multi):
        for holder in (item, item.exception):
            change = getattr(holder, "change", None)
            if isinstance(change, Mapping) and "state" in change:
                found = holder, change
    if found is None:
        return None
    holder, change = found
    return dict(change), str(getattr(holder, "diff", "") or "")


def checks_of(multi: MultiResult) -> list[dict[str, Any]] | None:
    """The state checks a host's results say (each one's values, as
    ``tasks.checks.check_outcomes.CheckOutcome.record`` makes it), if any: the last task's that has
    them, whether it succeeded or failed."""
    found = None
    for item in each_result(multi):
        for holder in (item, item.exception):
            checks = getattr(holder, "checks", None)
            if isinstance(checks, list) and checks:
                found = checks
    return None if found is None else list(found)


def left_changed(error: BaseException | None) -> bool:
    """Whether a change that failed with ``error`` left its device changed: its error says how
    the configuration now differs from the backup (``diff``; empty once rolled back)."""
    change = getattr(error, "change", None)
    return isinstance(change, Mapping) and bool(getattr(error, "diff", ""))


def changed_of(multi: MultiResult) -> bool:
    """Whether a host's results say its device changed: nornir's ``changed``, or a change that
    failed and left it changed (on a runner that did not say so on its ``Result``: nornir's
    own)."""
    return bool(multi.changed) or any(
        item.exception is not None and left_changed(item.exception) for item in each_result(multi)
    )


def note_left_changed(multi: MultiResult) -> None:
    """Each failed result of a change that left its device changed says ``changed``, as
    nornir-bench's runners finish a host: nornir makes every failed ``Result`` unchanged."""
    for item in each_result(multi):
        if item.exception is not None and not item.changed and left_changed(item.exception):
            item.changed = True


class ConfigsRead(NamedTuple):
    """The running configuration a change read before it sent anything, and the one it read
    back last (after the change, or after its rollback), as the device printed them: kept on
    the result (``configs``) only when asked (``keep_configs``: a job committing its change to
    a repository), zlib-compressed, so that what a worker sends back stays small.

    Attributes:
        packed_before: the text before, compressed.
        packed_after: the text read back last, compressed; ``None`` when nothing was read
            after (nothing was sent, or the device could not be read again).
    """

    packed_before: bytes
    packed_after: bytes | None

    @classmethod
    def of(cls, before: str, after: str | None) -> ConfigsRead:
        return cls(_packed(before), None if after is None else _packed(after))

    @classmethod
    def unchanged(cls, text: str) -> ConfigsRead:
        """Read before, and still what the device runs (nothing sent): one copy, pickled once."""
        packed = _packed(text)
        return cls(packed, packed)

    @property
    def before(self) -> str:
        return zlib.decompress(self.packed_before).decode("utf-8")

    @property
    def after(self) -> str | None:
        return None if self.packed_after is None else \
            zlib.decompress(self.packed_after).decode("utf-8")


def _packed(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 1)  # fast: the worker's CPU is the run's


def configs_of(multi: MultiResult) -> tuple[str | None, str | None]:
    """The configuration a host's changes read first, before anything was sent, and the one
    the device runs after them (each ``None`` when unknown): from every result and error that
    holds :class:`ConfigsRead` (``configs``), in order. A change that ended after it without
    saying what it left (stopped in flight, or not read again) makes the after unknown."""
    before = after = None
    for item in each_result(multi):
        for holder in (item, item.exception):
            configs = getattr(holder, "configs", None)
            change = getattr(holder, "change", None)
            if isinstance(configs, ConfigsRead):
                before = configs.before if before is None else before
                after = configs.after
            elif isinstance(change, Mapping) and change.get("state") != NOT_TOUCHED:
                after = None
    return before, after
