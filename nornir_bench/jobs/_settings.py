"""A job's nornir settings: ``inventory``, ``runner``, ``core``, ``logging`` and ``ssh``, checked
and made ready for ``InitNornir``.

Each section is what nornir's configuration file holds, with its relative paths made relative
to the job's folder; a plugin section names an installed plugin and gives it options it takes
(:mod:`nornir_bench.jobs._plugins`). A job that names no runner gets one that can run its tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nornir.core.configuration import LoggingConfig
from nornir.core.plugins.inventory import (
    InventoryPluginRegister,
    TransformFunctionRegister,
)
from nornir.core.plugins.runners import RunnersPluginRegister
from ruamel.yaml.comments import CommentedMap

from nornir_bench.core.execution import is_async_task
from nornir_bench.jobs._job_file import JobError, JobFile
from nornir_bench.jobs._plugins import (
    construct,
    installed,
    named_plugin,
    plugin_options,
)
from nornir_bench.jobs._signatures import parameters_of
from nornir_bench.jobs._steps import Step
from nornir_bench.runners.registry import prefers_async_tasks

__all__ = ["config_settings", "inventory_settings", "runner_settings"]

# The runner a job that names none gets: nornir-bench's threadpool rather than nornir's default,
# threaded: the same options and results, less overhead per host, and it stops by itself on
# Ctrl-C, cancelling nothing in flight (docs/jobs.md). asyncio for async tasks.
_DEFAULT_RUNNER, _DEFAULT_ASYNC_RUNNER = "threadpool", "asyncio"
# Runner options given as a mapping of file paths: the dask runner's TLS files
# (``security: {tls_ca_file: ..., tls_client_cert: ..., tls_client_key: ...}``).
_RUNNER_FILE_MAPPINGS = ("security",)
# The option every runner that runs hosts side by side names its worker count with (nornir's
# threaded and all of nornir-bench's); --workers sets it.
_WORKERS = "num_workers"


def inventory_settings(job: JobFile, root: CommentedMap) -> dict[str, Any]:
    """The ``inventory`` section: its plugin, options (their files found) and transform."""
    node = job.mapping(root, "inventory")
    job.keys(
        node,
        ("plugin", "options", "transform_function", "transform_function_options"),
        "inventory",
    )
    plugins = installed(InventoryPluginRegister, "nornir.plugins.inventory")
    plugin, cls = named_plugin(job, node, "inventory", plugins, "SimpleInventory")
    what = f"inventory plugin {plugin}"
    options_node = job.mapping(node, "options")
    options = plugin_options(job, options_node, cls, what, "inventory.options")
    for key in list(options):
        if key.endswith("_file") and isinstance(options[key], str):
            options[key] = str(job.relative(options[key]))
            if not Path(options[key]).is_file():
                raise job.error(
                    options_node, key, f"inventory option {key}: no such file: {options[key]}"
                )
    if plugin == "SimpleInventory" and "host_file" not in options:
        options["host_file"] = str(job.relative("hosts.yaml"))
        if not Path(options["host_file"]).is_file():
            raise _no_hosts_yaml(job, root, node)
    construct(job, cls, options, node, what)
    section: dict[str, Any] = {"plugin": plugin, "options": options}
    if "transform_function" in node:
        transforms = installed(TransformFunctionRegister, "nornir.plugins.transform_function")
        transform = job.string(node, "transform_function", "inventory")
        if transform not in transforms:
            raise job.error(
                node,
                "transform_function",
                f"unknown transform function {transform!r}; "
                f"available: {', '.join(sorted(transforms)) or 'none installed'}",
            )
        section["transform_function"] = transform
        section["transform_function_options"] = job.plain(
            job.mapping(node, "transform_function_options"),
            "inventory.transform_function_options",
        )
    return section


def _no_hosts_yaml(job: JobFile, root: CommentedMap, node: CommentedMap) -> JobError:
    """SimpleInventory, named or by default, with no ``host_file`` and no hosts.yaml to use."""
    if "inventory" not in root:
        return JobError(
            f"{job.path}:1:1: the job has no inventory section, and SimpleInventory "
            "(nornir's default) found no hosts.yaml next to the job; add "
            "inventory: {plugin: ..., options: {...}}"
        )
    return job.error(
        node if "plugin" in node else root,
        "plugin" if "plugin" in node else "inventory",
        "SimpleInventory needs options.host_file: there is no hosts.yaml next to the job",
        at_key="plugin" not in node,
    )


def runner_settings(
    job: JobFile,
    root: CommentedMap,
    steps: Sequence[Step],
    *,
    stepped: bool = False,
    runner: str | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """The ``runner`` section: a runner that can run every step's task, and its options.

    With none named: ``asyncio`` when every step's task is async, else ``threadpool`` (so a
    job mixing both must name a runner that awaits, which runs the blocking steps in threads).
    ``stepped``: the job gave ``steps`` (messages then say which step). ``runner`` and
    ``workers`` (``--runner``, ``--workers``) replace the job's plugin and ``num_workers``; the
    job's other options must suit that runner too.
    """
    node = job.mapping(root, "runner")
    job.keys(node, ("plugin", "options"), "runner")
    plugins = installed(RunnersPluginRegister, "nornir.plugins.runners")
    all_async = all(is_async_task(step.task) for step in steps)
    default = _DEFAULT_ASYNC_RUNNER if all_async else _DEFAULT_RUNNER
    if runner is None:
        plugin, cls = named_plugin(job, node, "runner", plugins, default)
    elif runner not in plugins:
        raise JobError(
            f"--runner {runner}: unknown runner; available: {', '.join(sorted(plugins))}"
        )
    else:
        plugin, cls = runner, plugins[runner]
    for step in steps:
        if is_async_task(step.task) and not prefers_async_tasks(cls):
            raise _cannot_await(job, node, step, plugin, plugins, stepped=stepped,
                                given=runner is not None)
    what = f"runner plugin {plugin}" + (" (--runner)" if runner is not None else "")
    options_node = job.mapping(node, "options")
    taken = parameters_of(cls)
    counts_workers = taken is None or taken.takes_any or _WORKERS in taken.names
    if runner is not None and not counts_workers and _WORKERS in options_node:
        # The job's worker count means nothing to a runner that runs one host at a time.
        del options_node[_WORKERS]
    options = plugin_options(job, options_node, cls, what, "runner.options")
    _runner_files(job, options_node, options)
    if workers is not None:
        if not counts_workers:
            raise JobError(
                f"--workers {workers}: runner {plugin} has no worker count ({_WORKERS}): it "
                "runs one host at a time"
            )
        options[_WORKERS] = workers
        what += " (--workers)"
    construct(job, cls, options, node, what)
    return {"plugin": plugin, "options": options}


def _runner_files(job: JobFile, node: CommentedMap, options: dict[str, Any]) -> None:
    """Runner options that are mappings of file paths (the dask runner's ``security``: its
    TLS files), made relative to the job's folder; a file that is not there is an error at
    its key."""
    for key in _RUNNER_FILE_MAPPINGS:
        files = options.get(key)
        if not isinstance(files, dict) or not isinstance(node.get(key), CommentedMap):
            continue  # not paths: the runner's own check says what it takes
        for name, path in files.items():
            if isinstance(path, str) and path:
                files[name] = str(job.relative(path))
                if not Path(files[name]).is_file():
                    raise job.error(
                        node[key], name, f"runner option {key}.{name}: no such file: {files[name]}"
                    )


def _cannot_await(
    job: JobFile,
    node: CommentedMap,
    step: Step,
    plugin: str,
    plugins: dict[str, Any],
    *,
    stepped: bool,
    given: bool = False,
) -> JobError:
    """An async step on a runner that cannot await it: at the runner named (``given``: by
    ``--runner``), else at the step."""
    able = ", ".join(sorted(n for n, c in plugins.items() if prefers_async_tasks(c)))
    what = f"step {step.number}: task" if stepped else "task"
    message = f"{what} {step.task_name} is async (async def) and runner {plugin!r} cannot await it"
    if given:
        return JobError(f"--runner {plugin}: {message}; use one of: {able}")
    if "plugin" in node:
        return job.error(node, "plugin", f"{message}; use one of: {able}")
    return JobError(
        f"{step.at}: {message} (the default when not every step is async); name a runner that "
        f"can, which runs the blocking steps too: one of: {able}"
    )


def config_settings(
    job: JobFile, root: CommentedMap, section: str, cls: type, *, paths: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A section of nornir's own configuration (``core``, ``logging``, ``ssh``), its options
    those ``cls`` takes; ``paths`` name the options that are file paths."""
    node = job.mapping(root, section)
    options = plugin_options(job, node, cls, section, section)
    for key in paths:
        if isinstance(options.get(key), str) and options[key]:
            options[key] = str(job.relative(options[key]))
    return options


OWN_LOGGER = "nornir_bench"
"""nornir-bench's logger: always among those a job's ``logging`` configures."""


def logging_settings(job: JobFile, root: CommentedMap) -> dict[str, Any]:
    """The ``logging`` section, nornir-bench's own logger added to the loggers it names (or
    nornir's default ones): what nornir-bench decided for the user (a new host key trusted, a
    worker replaced) belongs in the job's log, whatever else the job asks there."""
    options = config_settings(job, root, "logging", LoggingConfig, paths=("log_file",))
    loggers = LoggingConfig.Parameters.loggers.resolve(options.get("loggers"))
    if OWN_LOGGER not in loggers:
        options["loggers"] = [*loggers, OWN_LOGGER]
    return options
