"""A job's ``task`` section: the task it names, found, and the parameters it gives, checked.

``name`` is a built-in task (:data:`nornir_bench.tasks.BUILTIN_TASKS`) or ``module:function``,
imported from the job's folder or the current one; ``params`` (a ``..._file`` or ``..._dir``
found from the job's folder, as the inventory's files are) are checked against the task's
signature (names, then types) and by the task's own check (``check_params_with``), so that a
task that cannot run with them fails before the inventory loads. A change's ``from_history``
has its ``repo`` found from the job's folder too, and its ``commit`` resolved once, here, so
that every host of the run restores from the same commit whatever is committed meanwhile.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from nornir_bench.jobs._job_file import JobError, JobFile, one_line
from nornir_bench.jobs._signatures import parameters_of
from nornir_bench.tasks import (
    BUILTIN_TASKS,
    MissingLibrary,
    params_check_of,
    require_libraries,
)

__all__ = ["TASK_KEYS", "read_task", "task_of"]

TASK_KEYS = ("name", "params")

# The tasks whose from_history restores a host's file at a commit: pinned to the commit.
_RESTORING = ("send_config", "asend_config")

# nr.run's own arguments: a task parameter of the same name would never reach the task.
_RUN_ARGUMENTS = ("task", "raise_on_error", "on_good", "on_failed", "name")


def read_task(job: JobFile, root: CommentedMap) -> tuple[str, Callable[..., Any], dict[str, Any]]:
    """The task's name as written, the task, and its parameters, from the job's ``root``."""
    node = job.mapping(root, "task")
    job.keys(node, TASK_KEYS, "task")
    if "name" not in node:
        raise job.error(root, "task", "task has no 'name': a built-in task or module:function")
    return task_of(job, node, "task")


def task_of(
    job: JobFile, node: CommentedMap, what: str
) -> tuple[str, Callable[..., Any], dict[str, Any]]:
    """The task ``node`` names (it has ``name``), found and checked with its ``params``;
    ``what`` says where it is in messages (``task``, ``step 2``)."""
    name = job.string(node, "name", what)
    task = _find(job, node, name)
    try:
        require_libraries(task)  # before its own check, which may need them
    except MissingLibrary as exc:
        raise job.error(node, "name", str(exc)) from None
    params_node = job.mapping(node, "params")
    params: dict[str, Any] = job.plain(params_node, f"{what}.params")
    for key, value in params.items():  # files and folders are found from the job's folder
        if key.endswith(("_file", "_dir")) and isinstance(value, str):
            params[key] = str(job.relative(value))
    checks = params.get("checks")
    if isinstance(checks, list):  # a state check's template too
        params["checks"] = [
            {**check, "template_file": str(job.relative(check["template_file"]))}
            if isinstance(check, dict) and isinstance(check.get("template_file"), str)
            else check
            for check in checks
        ]
    source = params.get("from_history")
    if isinstance(source, dict) and isinstance(source.get("repo"), str):
        params["from_history"] = {**source, "repo": str(job.relative(source["repo"]))}
    for key in params:
        if key in _RUN_ARGUMENTS:
            raise job.error(
                params_node,
                key,
                f"task parameter {key!r} is taken by nornir's run() "
                f"({', '.join(_RUN_ARGUMENTS)}); rename it in the task",
                at_key=True,
            )
    _check_signature(job, node, params_node, name, task, params)
    _check_own(job, node, name, task, params)
    if name in _RESTORING and isinstance(params.get("from_history"), dict):  # checked
        from nornir_bench.history.at_commit import commit_of  # pygit2: only for a restore

        source = params["from_history"]
        params["from_history"] = {
            **source, "commit": commit_of(Path(source["repo"]), source.get("commit", "HEAD"))}
    return name, task, params


def _check_signature(
    job: JobFile,
    node: CommentedMap,
    params_node: CommentedMap,
    name: str,
    task: Callable[..., Any],
    params: dict[str, Any],
) -> None:
    """Fail for a parameter the task does not take, one it needs and is not given, or one of
    the wrong type; a task without a readable signature passes."""
    taken = parameters_of(task, skip=1)  # the first is nornir's Task
    if taken is None:
        return
    takes = f"it takes: {', '.join(taken.names) or 'no parameters'}"
    unknown = taken.unknown(params)
    if "confirm" in params and "confirm" not in taken.names:  # not only a name it lacks
        raise job.error(
            params_node, "confirm",
            f"task {name} cannot revert a change, so it takes no confirm (send_config, "
            "asend_config, netconf_edit_config and anetconf_edit_config do)", at_key=True,
        )
    if unknown is not None:
        raise job.error(
            params_node,
            unknown,
            f"task {name} has no parameter {unknown!r}; {takes}",
            at_key=True,
        )
    try:
        inspect.signature(task).bind(None, **params)
    except TypeError as exc:
        raise _params_error(job, node, f"task {name}: {exc}; {takes}") from None
    mistyped = taken.mistyped(params)
    if mistyped is not None:
        key, problem = mistyped
        raise job.error(params_node, key, f"task {name} parameter {key} {problem}")


def _check_own(
    job: JobFile, node: CommentedMap, name: str, task: Callable[..., Any], params: dict[str, Any]
) -> None:
    """Run the task's own check of its parameters (``check_params_with``), if it has one."""
    check = params_check_of(task)
    if check is None:
        return
    try:
        check(params)
    except (TypeError, ValueError) as exc:
        raise _params_error(job, node, f"task {name}: {exc}") from None


def _params_error(job: JobFile, node: CommentedMap, message: str) -> JobError:
    """An error with the parameters as a whole: at ``params``, or at ``name`` without them."""
    return job.error(node, "params" if "params" in node else "name", message, at_key=True)


def _find(job: JobFile, node: CommentedMap, name: str) -> Callable[..., Any]:
    """The task ``name`` (at ``node``'s ``name``): built-in, or imported as module:function."""
    if name in BUILTIN_TASKS:
        return BUILTIN_TASKS[name]
    if ":" not in name:
        raise job.error(
            node,
            "name",
            f"unknown task {name!r}; built-in tasks: {', '.join(sorted(BUILTIN_TASKS))}; "
            "or a module:function path",
        )
    module_name, _, attribute = name.partition(":")
    _importable_from(job.folder)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - the user's module may raise anything
        raise job.error(
            node, "name", f"task {name}: cannot import module {module_name!r}: {one_line(exc)}"
        ) from None
    except SystemExit as exc:  # sys.exit() at import: not a run that did nothing, exit 0
        raise job.error(
            node,
            "name",
            f"task {name}: module {module_name!r} stopped the program while being imported "
            f"(SystemExit {exc.code}); a task module must only define functions when imported",
        ) from None
    task = getattr(module, attribute, None)
    if not callable(task):
        raise job.error(
            node, "name", f"task {name}: module {module_name!r} has no function {attribute!r}"
        )
    return typing.cast(Callable[..., Any], task)


def _importable_from(folder: Path) -> None:
    """Let ``module:function`` name a module next to the job file or in the current folder.

    The folders stay on ``sys.path``: process-pool workers import the task by name too, and
    they take their path from this process's.
    """
    for entry in (str(Path.cwd()), str(folder)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
