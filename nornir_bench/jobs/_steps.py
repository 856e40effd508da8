"""A job's tasks: one ``task``, or ``steps``, a list of tasks run one after the other.

Each step is read as ``task`` is (:func:`~nornir_bench.jobs._task.task_of`: its name, its
``params`` and every check of them), and may add a ``filter`` (the job's hosts narrowed further
for that step) and ``on_failed`` (run on the hosts that failed an earlier step too; by default
they are left out, as nornir's ``nr.run`` leaves out its failed hosts). A job with ``task`` is
a job of one step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from nornir_bench.jobs._filter import HostFilter, read_filter
from nornir_bench.jobs._job_file import JobError, JobFile
from nornir_bench.jobs._signatures import show
from nornir_bench.jobs._task import TASK_KEYS, read_task, task_of

__all__ = ["MAX_STEPS", "STEP_KEYS", "Step", "read_steps"]

# A job is a short playbook; hundreds of steps would be a generated program, better written
# as a script over nornir (and each step's summary line would scroll the rest away).
MAX_STEPS = 100
STEP_KEYS = (*TASK_KEYS, "filter", "on_failed")

_STEPS_ARE = (
    f"steps must be a list of 1 to {MAX_STEPS} tasks, each a mapping with "
    f"{', '.join(STEP_KEYS)} (filter and on_failed optional)"
)


@dataclass(frozen=True)
class Step:
    """One task of a job, and the hosts it runs on.

    Attributes:
        number: its place in the job, from 1.
        task_name: as written in the job (a built-in name or ``module:function``).
        task: the task function.
        params: the task's keyword arguments.
        filter: narrows the job's hosts for this step.
        on_failed: run on the hosts that failed an earlier step too.
        at: ``file:line:column`` of the step, for what only the inventory shows wrong with it.
    """

    number: int
    task_name: str
    task: Callable[..., Any]
    params: dict[str, Any]
    filter: HostFilter = field(default_factory=HostFilter)
    on_failed: bool = False
    at: str = ""

    @property
    def label(self) -> str:
        """``step 2 send_command``: how messages name it."""
        return f"step {self.number} {self.task_name}"


def read_steps(job: JobFile, root: CommentedMap) -> tuple[tuple[Step, ...], bool]:
    """The job's steps, and whether it gave them as ``steps`` (else as one ``task``)."""
    if "steps" in root and "task" in root:
        raise job.error(
            root,
            "steps",
            "the job has both 'task' and 'steps': give one task, or a list of steps",
            at_key=True,
        )
    if "steps" not in root:
        if "task" not in root:
            raise JobError(
                f"{job.path}:1:1: the job has no 'task' (with 'name' and 'params'), nor "
                "'steps' (a list of tasks)"
            )
        name, task, params = read_task(job, root)
        return (Step(1, name, task, params, at=job.where(root, "task", at_key=True)),), False
    node = root["steps"]
    if not isinstance(node, CommentedSeq) or not 1 <= len(node) <= MAX_STEPS:
        got = f"a list of {len(node)}" if isinstance(node, CommentedSeq) and node else None
        raise job.error(
            root, "steps", f"{_STEPS_ARE}, got {got or show(job.plain(node, 'steps'))}"
        )
    return tuple(_step(job, node, index) for index in range(len(node))), True


def _step(job: JobFile, steps: CommentedSeq, index: int) -> Step:
    """The step at ``steps[index]``."""
    number = index + 1
    what = f"step {number}"
    node = steps[index]
    if not isinstance(node, CommentedMap):
        raise job.error(
            steps,
            index,
            f"{what} must be a mapping with keys {', '.join(STEP_KEYS)}, "
            f"got {show(job.plain(node, f'steps[{index}]'))}",
        )
    job.keys(node, STEP_KEYS, what)
    if "name" not in node:
        raise job.error(
            steps, index, f"{what} has no 'name': a built-in task or module:function"
        )
    name, task, params = task_of(job, node, what)
    on_failed = job.plain(node.get("on_failed", False), f"{what}.on_failed")
    if not isinstance(on_failed, bool):
        raise job.error(
            node, "on_failed", f"{what} on_failed must be true or false, got {show(on_failed)}"
        )
    return Step(
        number,
        name,
        task,
        params,
        filter=read_filter(job, node, f"{what} filter"),
        on_failed=on_failed,
        at=job.where(steps, index),
    )
