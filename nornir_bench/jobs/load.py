"""Job files: what ``nornir-bench run JOB.yaml`` runs, loaded and checked before anything runs.

A job is a nornir configuration file (``inventory``, ``runner``, ``core``, ``logging``, ``ssh``,
``user_defined``: handed to ``InitNornir`` as they are) plus ``task`` (``name``: a built-in task
or ``module:function``; ``params``), an optional ``filter`` (``hosts``, ``groups``,
``platform``) and an optional ``output`` (``path`` of the JSON Lines records)::

    inventory:
      plugin: SimpleInventory
      options: {host_file: ../inventory/lab/hosts.yaml}
    runner: {plugin: asyncio, options: {num_workers: 100}}
    task:
      name: asend_command
      params: {command: show clock}
    filter: {platform: cisco_ios}

Relative paths in a job (inventory files, ``output.path``, ``logging.log_file``,
``ssh.config_file``) are relative to the job file's folder, so a job runs the same from any
directory. ``${NAME}`` in any string is the environment variable ``NAME``.

Every mistake is a :class:`JobError` of one line, ``file:line:column: what was wrong`` and what
is allowed: YAML syntax, unknown keys, unknown plugins and tasks (listing the valid names),
options of the wrong type, parameters the task does not take or its own check refuses, missing
inventory files, unset environment variables, a filter that matches nothing; and files no job
is, found before they cost time or memory (:mod:`nornir_bench.jobs._yaml_input`): too big, not
UTF-8 text, nested too deep, aliases that expand past a bound.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import sys
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir.core.configuration import CoreConfig, LoggingConfig, SSHConfig
from nornir.core.filter import F
from nornir.core.plugins.inventory import InventoryPluginRegister, TransformFunctionRegister
from nornir.core.plugins.runners import RunnersPluginRegister
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from nornir_bench.bench.benchmark import prefers_async_tasks
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.execution import is_async_task
from nornir_bench.core.plugins import init_nornir
from nornir_bench.jobs._signatures import parameters_of, show
from nornir_bench.jobs._yaml_input import (
    MAX_DEPTH,
    MAX_VALUES,
    YamlInputError,
    expanded_size,
    read_job_yaml,
    too_deep,
    too_many_values,
)
from nornir_bench.jobs.secrets import SecretError, expand_env, is_secret_key, resolve_inventory
from nornir_bench.tasks import (
    BUILTIN_TASKS,
    MissingLibrary,
    connections_of,
    params_check_of,
    require_libraries,
)

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["HostFilter", "Job", "JobError", "load_job"]

NORNIR_KEYS = ("inventory", "runner", "core", "logging", "ssh", "user_defined")
JOB_KEYS = (*NORNIR_KEYS, "task", "filter", "output")
# nr.run's own arguments: a task parameter of the same name would never reach the task.
_RUN_ARGUMENTS = ("task", "raise_on_error", "on_good", "on_failed", "name")
# The runner a job that names none gets: nornir-bench's threadpool rather than nornir's default,
# threaded: the same options and results, less overhead per host, and it stops by itself on
# Ctrl-C, cancelling nothing in flight (docs/jobs.md). asyncio for async tasks.
_DEFAULT_RUNNER, _DEFAULT_ASYNC_RUNNER = "threadpool", "asyncio"


class JobError(NornirBenchError, ValueError):
    """A job that cannot run: one line saying where, what was wrong and what is allowed."""


@dataclass(frozen=True)
class HostFilter:
    """Which hosts a job runs on: all of them unless narrowed.

    Each field is a list of accepted values (any of them); fields combine with "and".
    """

    hosts: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    def apply(self, nr: Nornir) -> Nornir:
        if self.hosts:
            nr = nr.filter(F(name__any=list(self.hosts)))
        if self.groups:
            nr = nr.filter(F(groups__any=list(self.groups)))
        if self.platforms:
            nr = nr.filter(F(platform__any=list(self.platforms)))
        return nr


@dataclass(frozen=True)
class Job:
    """A checked job file.

    Attributes:
        path: the job file.
        settings: ``InitNornir`` keyword arguments, paths made absolute.
        task_name: as written in the job (a built-in name or ``module:function``).
        task: the task function.
        params: the task's keyword arguments.
        filter: the hosts to run on.
        output: where the JSON Lines records go, if the job says.
        secrets: passwords and secrets the job holds, to be masked in all output.
    """

    path: Path
    settings: dict[str, Any]
    task_name: str
    task: Callable[..., Any]
    params: dict[str, Any]
    filter: HostFilter = field(default_factory=HostFilter)
    output: Path | None = None
    secrets: frozenset[str] = frozenset()

    @property
    def runner_plugin(self) -> str:
        return str(self.settings["runner"]["plugin"])

    def nornir(self) -> tuple[Nornir, frozenset[str]]:
        """Load the inventory and runner, expand ``${NAME}`` credentials, apply the filter.

        Returns:
            The ``Nornir`` object and every secret known (the job's and the inventory's).

        Raises:
            JobError: when the inventory cannot be loaded, a variable is unset, or the filter
                matches no host.
        """
        try:
            nr = init_nornir(connections=connections_of(self.task), **self.settings)
        except MarkedYAMLError as exc:
            raise JobError(_yaml_error(exc, "inventory")) from None
        except Exception as exc:  # noqa: BLE001 - any plugin's error, reported in one line
            raise JobError(f"{self.path}: cannot load the inventory: {_one_line(exc)}") from None
        self._check_inventory_data(nr)
        try:
            secrets = resolve_inventory(nr.inventory)
        except SecretError as exc:
            raise JobError(f"{self.path}: {exc}") from None
        missing = sorted(set(self.filter.hosts) - set(nr.inventory.hosts))
        if missing:
            raise JobError(
                f"{self.path}: filter: no such host in the inventory: {', '.join(missing)}"
            )
        nr = self.filter.apply(nr)
        if not nr.inventory.hosts:
            raise JobError(
                f"{self.path}: no host to run on: the filter matches none of the inventory"
            )
        return nr, self.secrets | secrets

    def _check_inventory_data(self, nr: Nornir) -> None:
        """Fail if some host's, group's or the defaults' ``data`` expands past ``MAX_VALUES``.

        Inventory files are loaded by nornir, whose YAML loader keeps an alias's data shared:
        harmless until something copies or compares it value by value (the processpool
        runner compares each host's data after the task), which an alias bomb makes endless.
        """
        inventory = nr.inventory
        owners = [
            *((f"host {name}", host.data) for name, host in inventory.hosts.items()),
            *((f"group {name}", group.data) for name, group in inventory.groups.items()),
            ("defaults", inventory.defaults.data),
        ]
        sizes: dict[int, int] = {}  # shared: data that hosts share is measured once
        for owner, data in owners:
            try:
                too_big = expanded_size(data, sizes) > MAX_VALUES
            except RecursionError:  # nornir's own loader stops sooner; another plugin may not
                raise JobError(
                    f"{self.path}: inventory: {owner} data nests too deep to be checked"
                ) from None
            if too_big:
                raise JobError(
                    f"{self.path}: inventory: {too_many_values(f'{owner} data')}; at most "
                    f"{MAX_VALUES:,} values per host, group or defaults"
                )


def load_job(path: str | Path) -> Job:
    """Read and check the job file at ``path``.

    Raises:
        JobError: for anything wrong with it (see the module's docstring).
    """
    return _Loader(Path(path)).load()


class _Loader:
    """Checks a job file section by section, knowing where each value sits in the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder = path.resolve().parent
        self.secrets: set[str] = set()

    def load(self) -> Job:
        try:
            root = read_job_yaml(self.path)
        except OSError as exc:
            raise JobError(
                f"{self.path}: cannot read the job file: {exc.strerror or exc}"
            ) from None
        except MarkedYAMLError as exc:
            raise JobError(_yaml_error(exc, "job", str(self.path))) from None
        except YamlInputError as exc:
            raise JobError(str(exc)) from None
        if not isinstance(root, CommentedMap):
            raise JobError(
                f"{self.path}:1:1: a job file must be a mapping with keys: {', '.join(JOB_KEYS)}"
            )
        self.keys(root, JOB_KEYS, "the job")
        if "task" not in root:
            raise JobError(f"{self.path}:1:1: the job has no 'task' (with 'name' and 'params')")

        task_name, task, params = self.task(root)
        settings: dict[str, Any] = {
            "inventory": self.inventory(root),
            "runner": self.runner(root, task_name, task),
            "core": self.options(root, "core", CoreConfig),
            "logging": self.options(root, "logging", LoggingConfig, paths=("log_file",)),
            "ssh": self.options(root, "ssh", SSHConfig, paths=("config_file",)),
            "user_defined": self.plain(self.mapping(root, "user_defined"), "user_defined"),
        }
        output = self.mapping(root, "output")
        self.keys(output, ("path",), "output")
        out_path = self.string(output, "path", "output") if "path" in output else None
        return Job(
            path=self.path,
            settings=settings,
            task_name=task_name,
            task=task,
            params=params,
            filter=self.host_filter(root),
            output=None if out_path is None else self.folder / out_path,
            secrets=frozenset(self.secrets),
        )

    # -- sections ------------------------------------------------------------------------

    def task(self, root: CommentedMap) -> tuple[str, Callable[..., Any], dict[str, Any]]:
        node = self.mapping(root, "task")
        self.keys(node, ("name", "params"), "task")
        if "name" not in node:
            raise self.error(root, "task", "task has no 'name': a built-in task or module:function")
        name = self.string(node, "name", "task")
        task = self.resolve_task(node, name)
        try:
            require_libraries(task)
        except MissingLibrary as exc:
            raise self.error(node, "name", str(exc)) from None
        params = self.plain(self.mapping(node, "params"), "task.params")
        node_params = self.mapping(node, "params")
        for key in params:
            if key in _RUN_ARGUMENTS:
                raise self.error(
                    node_params,
                    key,
                    f"task parameter {key!r} is taken by nornir's run() "
                    f"({', '.join(_RUN_ARGUMENTS)}); rename it in the task",
                    at_key=True,
                )
        taken = parameters_of(task, skip=1)  # the first is nornir's Task
        if taken is None:
            self.check_params(node, name, task, params)
            return name, task, params
        takes = f"it takes: {', '.join(taken.names) or 'no parameters'}"
        unknown = taken.unknown(params)
        if unknown is not None:
            raise self.error(
                node_params,
                unknown,
                f"task {name} has no parameter {unknown!r}; {takes}",
                at_key=True,
            )
        try:
            inspect.signature(task).bind(None, **params)
        except TypeError as exc:
            raise self.error(
                node,
                "params" if "params" in node else "name",
                f"task {name}: {exc}; {takes}",
                at_key=True,
            ) from None
        for key, value in params.items():
            problem = taken.type_problem(key, value)
            if problem is not None:
                raise self.error(node_params, key, f"task {name} parameter {key} {problem}")
        self.check_params(node, name, task, params)
        return name, task, params

    def check_params(
        self, node: CommentedMap, name: str, task: Callable[..., Any], params: dict[str, Any]
    ) -> None:
        """Run the task's own check of its parameters (``check_params_with``), if it has one."""
        check = params_check_of(task)
        if check is None:
            return
        try:
            check(params)
        except (TypeError, ValueError) as exc:
            raise self.error(
                node, "params" if "params" in node else "name", f"task {name}: {exc}", at_key=True
            ) from None

    def resolve_task(self, node: CommentedMap, name: str) -> Callable[..., Any]:
        if name in BUILTIN_TASKS:
            return BUILTIN_TASKS[name]
        if ":" not in name:
            raise self.error(
                node,
                "name",
                f"unknown task {name!r}; built-in tasks: {', '.join(sorted(BUILTIN_TASKS))}; "
                "or a module:function path",
            )
        module_name, _, attribute = name.partition(":")
        _importable_from(self.folder)
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - the user's module may raise anything
            raise self.error(
                node, "name", f"task {name}: cannot import module {module_name!r}: {_one_line(exc)}"
            ) from None
        except SystemExit as exc:  # sys.exit() at import: not a run that did nothing, exit 0
            raise self.error(
                node,
                "name",
                f"task {name}: module {module_name!r} stopped the program while being imported "
                f"(SystemExit {exc.code}); a task module must only define functions when imported",
            ) from None
        task = getattr(module, attribute, None)
        if not callable(task):
            raise self.error(
                node, "name", f"task {name}: module {module_name!r} has no function {attribute!r}"
            )
        return typing.cast(Callable[..., Any], task)

    def inventory(self, root: CommentedMap) -> dict[str, Any]:
        node = self.mapping(root, "inventory")
        self.keys(
            node,
            ("plugin", "options", "transform_function", "transform_function_options"),
            "inventory",
        )
        plugins = _plugins(InventoryPluginRegister, "nornir.plugins.inventory")
        plugin, cls = self.plugin(node, "inventory", plugins, "SimpleInventory")
        options_node = self.mapping(node, "options")
        options = self.plugin_options(
            options_node, cls, f"inventory plugin {plugin}", "inventory.options"
        )
        for key in list(options):
            if key.endswith("_file") and isinstance(options[key], str):
                options[key] = str(self.folder / options[key])
                if not Path(options[key]).is_file():
                    raise self.error(
                        options_node, key, f"inventory option {key}: no such file: {options[key]}"
                    )
        if plugin == "SimpleInventory" and "host_file" not in options:
            options["host_file"] = str(self.folder / "hosts.yaml")
            if not Path(options["host_file"]).is_file():
                if "inventory" not in root:
                    raise JobError(
                        f"{self.path}:1:1: the job has no inventory section, and SimpleInventory "
                        "(nornir's default) found no hosts.yaml next to the job; add "
                        "inventory: {plugin: ..., options: {...}}"
                    )
                raise self.error(
                    node if "plugin" in node else root,
                    "plugin" if "plugin" in node else "inventory",
                    "SimpleInventory needs options.host_file: there is no hosts.yaml next to "
                    "the job",
                    at_key="plugin" not in node,
                )
        self.construct(
            cls, options, options_node if options_node else node, f"inventory plugin {plugin}"
        )
        section: dict[str, Any] = {"plugin": plugin, "options": options}
        if "transform_function" in node:
            transforms = _plugins(TransformFunctionRegister, "nornir.plugins.transform_function")
            transform = self.string(node, "transform_function", "inventory")
            if transform not in transforms:
                raise self.error(
                    node,
                    "transform_function",
                    f"unknown transform function {transform!r}; "
                    f"available: {', '.join(sorted(transforms)) or 'none installed'}",
                )
            section["transform_function"] = transform
            section["transform_function_options"] = self.plain(
                self.mapping(node, "transform_function_options"),
                "inventory.transform_function_options",
            )
        return section

    def runner(
        self, root: CommentedMap, task_name: str, task: Callable[..., Any]
    ) -> dict[str, Any]:
        node = self.mapping(root, "runner")
        self.keys(node, ("plugin", "options"), "runner")
        plugins = _plugins(RunnersPluginRegister, "nornir.plugins.runners")
        is_async = is_async_task(task)
        default = _DEFAULT_ASYNC_RUNNER if is_async else _DEFAULT_RUNNER
        plugin, cls = self.plugin(node, "runner", plugins, default)
        if is_async and not prefers_async_tasks(cls):
            able = sorted(n for n, c in plugins.items() if prefers_async_tasks(c))
            raise self.error(
                node,
                "plugin",
                f"task {task_name} is async (async def) and runner {plugin!r} cannot await it; "
                f"use one of: {', '.join(able)}",
            )
        options_node = self.mapping(node, "options")
        options = self.plugin_options(
            options_node, cls, f"runner plugin {plugin}", "runner.options"
        )
        self.construct(
            cls, options, options_node if options_node else node, f"runner plugin {plugin}"
        )
        return {"plugin": plugin, "options": options}

    def options(
        self, root: CommentedMap, section: str, cls: type, *, paths: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        node = self.mapping(root, section)
        options = self.plugin_options(node, cls, section, section)
        for key in paths:
            if isinstance(options.get(key), str) and options[key]:
                options[key] = str(self.folder / options[key])
        return options

    def host_filter(self, root: CommentedMap) -> HostFilter:
        node = self.mapping(root, "filter")
        self.keys(node, ("hosts", "groups", "platform"), "filter")
        values: dict[str, tuple[str, ...]] = {}
        for key in ("hosts", "groups", "platform"):
            value = self.plain(node.get(key), f"filter.{key}") if key in node else []
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise self.error(
                    node, key, f"filter {key} must be a name or a list of names, got {show(value)}"
                )
            values[key] = tuple(value)
        return HostFilter(
            hosts=values["hosts"], groups=values["groups"], platforms=values["platform"]
        )

    # -- checks --------------------------------------------------------------------------

    def plugin(
        self, node: CommentedMap, section: str, plugins: dict[str, Any], default: str
    ) -> tuple[str, Any]:
        """The plugin ``node`` names (``default`` if none) and its class, or the valid names."""
        name = self.string(node, "plugin", section) if "plugin" in node else default
        if name not in plugins:
            raise self.error(
                node,
                "plugin",
                f"unknown {section} plugin {name!r}; available: {', '.join(sorted(plugins))}",
            )
        return name, plugins[name]

    def plugin_options(self, node: CommentedMap, cls: Any, what: str, where: str) -> dict[str, Any]:
        """``node`` (at ``where`` in the job) as a dict, each key a parameter of ``cls`` and
        each value of its type; ``what`` names ``cls`` in messages."""
        options: dict[str, Any] = self.plain(node, where)
        taken = parameters_of(cls)
        if taken is None:
            return options
        unknown = taken.unknown(options)
        if unknown is not None:
            raise self.error(
                node,
                unknown,
                f"{what} has no option {unknown!r}; options: {', '.join(taken.names) or 'none'}",
                at_key=True,
            )
        for key, value in options.items():
            problem = taken.type_problem(key, value)
            if problem is not None:
                raise self.error(node, key, f"{what} option {key} {problem}")
        return options

    def construct(self, cls: Any, options: dict[str, Any], node: CommentedMap, what: str) -> None:
        """Build the plugin once, so its own checks of the options report here, in one line.

        Its warnings are not shown here: the run builds it again, and warns then.
        """
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls(**options)
        except (TypeError, ValueError) as exc:
            raise JobError(f"{self.where(node)}: {what}: {_one_line(exc)}") from None

    def keys(self, node: CommentedMap, allowed: tuple[str, ...], what: str) -> None:
        for key in node:
            if key not in allowed:
                raise self.error(
                    node,
                    key,
                    f"unknown key {key!r} in {what}; allowed: {', '.join(allowed)}",
                    at_key=True,
                )

    def mapping(self, parent: CommentedMap, key: str) -> CommentedMap:
        node = parent.get(key)
        if node is None:
            return CommentedMap()
        if not isinstance(node, CommentedMap):
            raise self.error(
                parent, key, f"{key} must be a mapping, got {show(self.plain(node, key))}"
            )
        return node

    def string(self, node: CommentedMap, key: str, what: str) -> str:
        value = self.plain(node[key], f"{what}.{key}")
        if not isinstance(value, str) or not value:
            raise self.error(
                node, key, f"{what} {key} must be a non-empty string, got {show(value)}"
            )
        return value

    def plain(self, node: Any, where: str, depth: int = 1) -> Any:
        """``node`` as plain dicts, lists and scalars, with ``${NAME}`` expanded.

        ``depth`` is how many mappings and lists ``node`` sits in, itself included: past
        ``MAX_DEPTH`` the job is refused rather than recursing on.
        """
        if isinstance(node, (CommentedMap, CommentedSeq)) and depth > MAX_DEPTH:
            raise self.error(node, None, too_deep())
        if isinstance(node, CommentedMap):
            out = {}
            for key, value in node.items():
                out[str(key)] = self.plain(value, f"{where}.{key}", depth + 1)
                value = out[str(key)]
                if is_secret_key(key) and isinstance(value, (str, int, float)):
                    if not isinstance(value, bool):  # password: 123456 is read as a number
                        self.secrets.add(str(value))
            return out
        if isinstance(node, CommentedSeq):
            return [self.plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(node)]
        if isinstance(node, str):
            try:
                return expand_env(str(node), f"{self.path}: {where}")
            except SecretError as exc:
                raise JobError(str(exc)) from None
        if isinstance(node, bool):
            return bool(node)
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            return float(node)
        return node

    def where(self, node: Any, key: Any = None, *, at_key: bool = False) -> str:
        """``file:line:column`` of ``node[key]`` (of the key itself with ``at_key``)."""
        try:
            if key is None:
                line, column = node.lc.line, node.lc.col
            elif isinstance(node, CommentedSeq):
                line, column = node.lc.item(key)
            elif at_key or not isinstance(node.get(key), (str, int, float, bool)):
                line, column = node.lc.key(key)
            else:
                line, column = node.lc.value(key)
        except (AttributeError, KeyError, TypeError):
            return str(self.path)
        if line is None or column is None:  # a section the job leaves out: not in the file
            return str(self.path)
        return f"{self.path}:{line + 1}:{column + 1}"

    def error(self, node: Any, key: Any, message: str, *, at_key: bool = False) -> JobError:
        return JobError(f"{self.where(node, key, at_key=at_key)}: {message}")


def _plugins(register: Any, group: str) -> dict[str, Any]:
    """The plugins of one kind: nornir's registers share one dict across all kinds."""
    register.auto_register()
    names = {entry.name for entry in importlib.metadata.entry_points(group=group)}
    return {name: register.available[name] for name in names if name in register.available}


def _yaml_error(exc: MarkedYAMLError, what: str, name: str | None = None) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return f"{name or what}: YAML syntax error: {problem}"
    where = f"{name or mark.name}:{mark.line + 1}:{mark.column + 1}"
    return f"{where}: YAML syntax error in the {what} file: {problem}"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _importable_from(folder: Path) -> None:
    """Let ``module:function`` name a module next to the job file or in the current folder.

    The folders stay on ``sys.path``: process-pool workers import the task by name too, and
    they take their path from this process's.
    """
    for entry in (str(Path.cwd()), str(folder)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
