"""Job files: what ``nornir-bench run JOB.yaml`` runs, loaded and checked before anything runs.

A job is a nornir configuration file (``inventory``, ``runner``, ``core``, ``logging``, ``ssh``,
``user_defined``: handed to ``InitNornir`` as they are) plus ``task`` (``name``: a built-in task
or ``module:function``; ``params``), an optional ``filter`` (``hosts``, ``groups``,
``platform``) and an optional ``output`` (``path`` of the JSON Lines records, ``repo`` of the
configurations' git repository). Instead of
``task``, ``steps`` lists tasks run one after the other on the same hosts and connections, each
with its own optional ``filter`` and ``on_failed`` (:mod:`~nornir_bench.jobs._steps`)::

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

Here is the job as a whole (its keys, ``output``, and :class:`Job` running it); the ``task``
section is read by :mod:`~nornir_bench.jobs._task`, ``steps`` by
:mod:`~nornir_bench.jobs._steps`, ``filter`` by :mod:`~nornir_bench.jobs._filter`, nornir's
settings by
:mod:`~nornir_bench.jobs._settings`, every value through
:class:`~nornir_bench.jobs._job_file.JobFile`, which knows where it sits in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir.core.configuration import CoreConfig, SSHConfig
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.plugins import init_nornir
from nornir_bench.core.secrets import SecretError
from nornir_bench.jobs._filter import HostFilter, read_filter
from nornir_bench.jobs._job_file import JobError, JobFile, one_line, yaml_error
from nornir_bench.jobs._settings import (
    config_settings,
    inventory_settings,
    logging_settings,
    runner_settings,
)
from nornir_bench.jobs._steps import Step, read_steps
from nornir_bench.jobs._yaml_input import MAX_VALUES, expanded_size, too_many_values
from nornir_bench.jobs.host_keys import JOB_KEYS as HOST_KEY_SETTINGS
from nornir_bench.jobs.host_keys import HostKeySettings, apply_host_keys, read_host_keys
from nornir_bench.jobs.overrides import Overrides, with_variables
from nornir_bench.jobs.secrets import resolve_inventory
from nornir_bench.tasks import connections_of
from nornir_bench.tasks.checks.state_checks import HOSTS

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host

__all__ = ["HostFilter", "Job", "JobError", "Overrides", "Step", "load_job"]

NORNIR_KEYS = ("inventory", "runner", "core", "logging", "ssh", "user_defined")
JOB_KEYS = (*NORNIR_KEYS, "task", "steps", "filter", "output", *HOST_KEY_SETTINGS)


@dataclass(frozen=True)
class Job:
    """A checked job file.

    Attributes:
        path: the job file.
        settings: ``InitNornir`` keyword arguments, paths made absolute.
        steps: its tasks, run one after the other (one for a job with ``task``).
        filter: the hosts to run on.
        output: where the JSON Lines records go, if the job says.
        repo: the git repository its configurations are committed to (``output.repo``), if
            the job names one: a backup's, and a change's before and after
            (:mod:`~nornir_bench.jobs.change_history`).
        secrets: passwords and secrets the job holds, to be masked in all output.
        stepped: the job gave ``steps`` (rather than one ``task``).
        session_logs: a session log per device (``output: {session_logs: true}``; see
            :mod:`nornir_bench.jobs.sessions`).
        overrides: what the command line changed (:mod:`nornir_bench.jobs.overrides`); its
            ``--limit`` narrows the hosts the filter leaves.
        host_keys: the job's ``host_key_checking`` and ``known_hosts``
            (:mod:`nornir_bench.jobs.host_keys`).
    """

    path: Path
    settings: dict[str, Any]
    steps: tuple[Step, ...]
    filter: HostFilter = field(default_factory=HostFilter)
    output: Path | None = None
    repo: Path | None = None
    secrets: frozenset[str] = frozenset()
    stepped: bool = False
    session_logs: bool = False
    overrides: Overrides = field(default_factory=Overrides)
    host_keys: HostKeySettings = field(default_factory=HostKeySettings)

    @property
    def runner_plugin(self) -> str:
        return str(self.settings["runner"]["plugin"])

    @property
    def task_name(self) -> str:
        """The (first) step's task name, as written in the job."""
        return self.steps[0].task_name

    @property
    def task(self) -> Callable[..., Any]:
        """The (first) step's task function."""
        return self.steps[0].task

    @property
    def params(self) -> dict[str, Any]:
        """The (first) step's task parameters."""
        return self.steps[0].params

    def connections(self) -> frozenset[str] | None:
        """The connection plugins the steps' tasks open; ``None``: not known, so every one."""
        wanted: set[str] = set()
        for step in self.steps:
            needed = connections_of(step.task)
            if needed is None:
                return None
            wanted |= needed
        return frozenset(wanted)

    def nornir(self) -> tuple[Nornir, frozenset[str]]:
        """Load the inventory and runner, expand ``${NAME}`` credentials, apply the filter.

        Returns:
            The ``Nornir`` object and every secret known (the job's and the inventory's).

        Raises:
            JobError: when the inventory cannot be loaded, a variable is unset, or the filter
                or ``--limit`` matches no host.
        """
        try:
            nr = init_nornir(connections=self.connections(), **self.settings)
        except MarkedYAMLError as exc:
            raise JobError(yaml_error(exc, "inventory")) from None
        except Exception as exc:  # noqa: BLE001 - any plugin's error, reported in one line
            raise JobError(f"{self.path}: cannot load the inventory: {one_line(exc)}") from None
        self._check_inventory_data(nr)
        try:
            secrets = resolve_inventory(nr.inventory)
        except SecretError as exc:
            raise JobError(f"{self.path}: {exc}") from None
        try:
            secrets |= apply_host_keys(nr, self.host_keys, self.settings["inventory"])
        except NornirBenchError as exc:
            raise JobError(f"{self.path}: inventory: {exc}") from None
        missing = sorted(set(self.filter.hosts) - set(nr.inventory.hosts))
        if missing:
            raise JobError(
                f"{self.path}: filter: no such host in the inventory: {', '.join(missing)}"
            )
        filtered = self.filter.apply(nr)
        for step in self.steps:  # from the whole inventory: a neighbour may be filtered out
            _check_hosts(step, nr, filtered.inventory.hosts.values())
        nr = filtered
        if not nr.inventory.hosts:
            raise JobError(
                f"{self.path}: no host to run on: the filter matches none of the inventory"
            )
        for step in self.steps:
            self._check_step_filter(step, nr)
        # After the step filters are checked against the job's hosts: a step the limit leaves
        # no host to is not a mistake in the job, it runs on none.
        nr = self.overrides.apply_limit(nr)
        return nr, self.secrets | secrets

    def _check_step_filter(self, step: Step, nr: Nornir) -> None:
        """Fail if ``step``'s filter names a host the inventory lacks, or leaves none of the
        job's hosts (``nr``): a step that could never run is a mistake in the job."""
        missing = sorted(set(step.filter.hosts) - set(nr.inventory.hosts))
        if missing:
            raise JobError(
                f"{step.at}: {step.label}: filter: no such host among the job's hosts: "
                f"{', '.join(missing)}"
            )
        if not step.filter.apply(nr).inventory.hosts:
            raise JobError(
                f"{step.at}: {step.label}: its filter matches none of the job's hosts"
            )

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


def load_job(path: str | Path, overrides: Overrides | None = None) -> Job:
    """Read and check the job file at ``path``, with what the command line changes in it
    (``overrides``: the runner, its worker count, template variables; the limit applies when
    the inventory loads).

    Raises:
        JobError: for anything wrong with it (see the module's docstring), or with
            ``overrides``.
    """
    overrides = overrides or Overrides()
    job = JobFile(Path(path))
    root = job.read()
    if not isinstance(root, CommentedMap):
        raise JobError(
            f"{job.path}:1:1: a job file must be a mapping with keys: {', '.join(JOB_KEYS)}"
        )
    job.keys(root, JOB_KEYS, "the job")
    steps, stepped = read_steps(job, root)
    steps = with_variables(steps, overrides.variables, job.secrets)
    settings: dict[str, Any] = {
        "inventory": inventory_settings(job, root),
        "runner": runner_settings(job, root, steps, stepped=stepped, runner=overrides.runner,
                                  workers=overrides.workers),
        "core": config_settings(job, root, "core", CoreConfig),
        "logging": logging_settings(job, root),
        "ssh": config_settings(job, root, "ssh", SSHConfig, paths=("config_file",)),
        "user_defined": job.plain(job.mapping(root, "user_defined"), "user_defined"),
    }
    output, repo = _output(job, root)
    return Job(
        session_logs=_session_logs(job, root),
        path=job.path,
        settings=settings,
        steps=steps,
        filter=read_filter(job, root),
        output=output,
        repo=repo,
        secrets=frozenset(job.secrets),
        stepped=stepped,
        overrides=overrides,
        host_keys=read_host_keys(job, root),
    )


def _output(job: JobFile, root: CommentedMap) -> tuple[Path | None, Path | None]:
    """Where the ``output`` section says the records go, and the repository of the
    configurations (``repo``), where it does."""
    node = job.mapping(root, "output")
    job.keys(node, ("path", "session_logs", "repo"), "output")
    found = [job.relative(job.string(node, key, "output")) if key in node else None
             for key in ("path", "repo")]
    return found[0], found[1]


def _session_logs(job: JobFile, root: CommentedMap) -> bool:
    """Whether the ``output`` section asks for a session log per device."""
    node = job.mapping(root, "output")
    value = node.get("session_logs", False)
    if not isinstance(value, bool):
        raise job.error(node, "session_logs", f"output: session_logs must be true or false, "
                        f"got {value!r}")
    return value


def _check_hosts(step: Step, nr: Nornir, job_hosts: Iterable[Host]) -> None:
    """Give each state check of ``step`` its host as the inventory's ``Host``, which a worker
    without the inventory can reach (for ``host_from``, every host the job's hosts' data
    names); a name the inventory lacks is the job's error."""
    checks = step.params.get("checks")
    if not isinstance(checks, list):
        return
    hosts = nr.inventory.hosts
    found = []
    for number, check in enumerate(checks, start=1):
        where = f"{step.at}: {step.label}: checks[{number}]"
        if isinstance(check, dict) and check.get("host") is not None:
            name = str(getattr(check["host"], "name", check["host"]))
            if name not in hosts:
                raise JobError(f"{where}.host: no host {name!r} in the inventory")
            check = {**check, "host": hosts[name]}
        if isinstance(check, dict) and isinstance(check.get("host_from"), str):
            key, named = check["host_from"], {}
            for host in job_hosts:
                name = host.get(key)
                if name not in hosts:
                    said = (f"has no data {key!r} naming the host to check on" if name is None
                            else f"data {key!r} names {name!r}: no such host in the inventory")
                    raise JobError(f"{where}.host_from: host {host.name} {said}")
                named[name] = hosts[name]
            check = {**check, HOSTS: named}
        found.append(check)
    step.params["checks"] = found
