"""What the command line changes in a job: ``--limit``, ``--runner``, ``--workers`` and ``-e``.

Each is checked as the job file is, and a mistake is one line naming the option: a ``--limit``
pattern that matches no host, an unknown runner, a runner without a worker count, a malformed
``-e``. The runner and worker count replace the job's (``runner.plugin``,
``runner.options.num_workers``) before its runner section is checked; ``-e`` adds to the
``variables`` of every step whose task takes them; ``--limit`` narrows the hosts the job's
filter leaves. The records (``overrides``) and the run's first line say what was changed.

``--limit`` reads as Ansible's: patterns separated by commas, each a host name or glob (``*``,
``?``, ``[...]``) or ``group:NAME`` (a glob too); ``!PATTERN`` leaves those hosts out and
``&PATTERN`` keeps only those hosts also matched. The hosts are those of the plain patterns
(all of the job's when there are none), then those of each ``&`` pattern, less those of each
``!`` pattern.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nornir_bench.core.secrets import is_secret_key
from nornir_bench.core.wording import hosts_named
from nornir_bench.jobs._job_file import JobError
from nornir_bench.jobs._signatures import parameters_of
from nornir_bench.jobs._steps import Step
from nornir_bench.tasks import params_check_of

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host

__all__ = ["Overrides", "check_limit", "parse_variable", "with_variables"]

_GROUP = "group:"


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in a job; ``None`` (or empty): as the job says.

    Attributes:
        limit: ``--limit``'s patterns, as given.
        runner: the runner plugin to use instead of the job's.
        workers: the runner's ``num_workers``.
        variables: ``-e`` names and values (strings, as Ansible's ``key=value``).
    """

    limit: str | None = None
    runner: str | None = None
    workers: int | None = None
    variables: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.limit is not None:
            check_limit(self.limit)

    def as_record(self) -> dict[str, Any]:
        """What was changed, for each record line: ``{}`` when nothing was."""
        given = {
            "limit": self.limit,
            "runner": self.runner,
            "workers": self.workers,
            "variables": dict(self.variables) or None,
        }
        return {key: value for key, value in given.items() if value is not None}

    def text(self) -> str:
        """``--limit 'r1,r2', --workers 50``: what was changed, as options; ``""`` if nothing."""
        parts = [
            f"--limit {self.limit!r}" if self.limit is not None else "",
            f"--runner {self.runner}" if self.runner is not None else "",
            f"--workers {self.workers}" if self.workers is not None else "",
        ]
        parts += [f"-e {key}={value!r}" for key, value in self.variables.items()]
        return ", ".join(part for part in parts if part)

    def apply_limit(self, nr: Nornir) -> Nornir:
        """``nr`` narrowed to ``--limit``'s hosts.

        Raises:
            JobError: a pattern matches none of ``nr``'s hosts, or no host is left.
        """
        if self.limit is None:
            return nr
        hosts = nr.inventory.hosts
        plain: set[str] = set()
        kept: set[str] = set(hosts)
        left_out: set[str] = set()
        patterns = check_limit(self.limit)
        for pattern in patterns:
            matched = _matching(pattern.lstrip("!&"), hosts)
            if not matched:
                raise JobError(
                    f"--limit {self.limit!r}: {pattern.lstrip('!&')!r} matches none of the "
                    f"job's {hosts_named(list(hosts))}{_groups_known(pattern, hosts)}"
                )
            if pattern.startswith("!"):
                left_out |= matched
            elif pattern.startswith("&"):
                kept &= matched
            else:
                plain |= matched
        # As Ansible: no plain pattern means every host, before the & and ! patterns.
        chosen = plain if any(p[0] not in "!&" for p in patterns) else set(hosts)
        chosen = (chosen & kept) - left_out
        if not chosen:
            raise JobError(f"--limit {self.limit!r}: no host is left to run")
        return nr.filter(filter_func=lambda host: host.name in chosen)


def check_limit(text: str) -> list[str]:
    """``--limit``'s patterns, each checked for its form (what they match is known once the
    inventory is loaded).

    Raises:
        ValueError: an empty pattern, or a prefix with nothing after it.
    """
    patterns = [part.strip() for part in text.split(",")]
    for pattern in patterns:
        name = pattern.lstrip("!&")
        if len(pattern) - len(name) > 1 or not name or name == _GROUP:
            raise ValueError(
                f"--limit {text!r}: {pattern!r} is not a pattern; give host names or globs, "
                "group:NAME, each optionally after ! (leave out) or & (and also), separated "
                "by commas"
            )
    return patterns


def _matching(pattern: str, hosts: Mapping[str, Host]) -> set[str]:
    """The names of ``hosts`` that ``pattern`` (a name or glob, or ``group:`` one) matches."""
    if pattern.startswith(_GROUP):
        group = pattern[len(_GROUP) :]
        return {
            name
            for name, host in hosts.items()
            if any(fnmatch.fnmatchcase(g.name, group) for g in host.extended_groups())
        }
    return {name for name in hosts if fnmatch.fnmatchcase(name, pattern)}


def _groups_known(pattern: str, hosts: Mapping[str, Host]) -> str:
    """For a ``group:`` pattern: the groups the job's hosts are in."""
    if _GROUP not in pattern:
        return ""
    names = sorted({g.name for host in hosts.values() for g in host.extended_groups()})
    return f"; their groups: {', '.join(names[:20]) or 'none'}" + (
        " ..." if len(names) > 20 else ""
    )


def parse_variable(text: str) -> tuple[str, str]:
    """``-e KEY=VALUE``: the name (a template variable: a Python identifier, not ``host``) and
    its value, a string.

    Raises:
        ValueError: no ``=``, or a name a template cannot use.
    """
    key, equals, value = text.partition("=")
    if not equals or not key.isidentifier() or key == "host":
        raise ValueError(
            f"-e {text!r}: give KEY=VALUE, KEY a name a template can use (letters, digits and "
            "_, not starting with a digit; not 'host', which is the host itself)"
        )
    return key, value


def with_variables(
    steps: tuple[Step, ...], variables: Mapping[str, str], secrets: set[str]
) -> tuple[Step, ...]:
    """``steps`` with ``-e``'s ``variables`` added to (over) the ``variables`` of each step
    whose task takes them, checked again by the task's own check; the values of names that
    hold secrets (``password``, ``token`` ...) added to ``secrets``, to be masked.

    Raises:
        JobError: no step's task takes ``variables``, or a task's check refuses them.
    """
    if not variables:
        return steps
    taking = {step.number for step in steps if "variables" in _named_parameters(step)}
    if not taking:
        names = ", ".join(sorted({step.task_name for step in steps}))
        raise JobError(
            f"-e {next(iter(variables))}=...: no task of the job takes variables ({names}); "
            f"{_variable_takers()} do, for their template"
        )
    secrets.update(value for key, value in variables.items() if is_secret_key(key) and value)
    changed = []
    for step in steps:
        if step.number in taking:
            given = step.params.get("variables")
            merged = {**(given if isinstance(given, Mapping) else {}), **variables}
            step = replace(step, params={**step.params, "variables": merged})
            check = params_check_of(step.task)
            if check is not None:
                try:
                    check(step.params)
                except (TypeError, ValueError) as exc:
                    raise JobError(f"-e: {step.label}: {exc}") from None
        changed.append(step)
    return tuple(changed)


def _variable_takers() -> str:
    """The built-in tasks that take ``variables``, in words."""
    from nornir_bench.tasks._builtin import BUILTIN_TASKS

    names = []
    for name, task in BUILTIN_TASKS.items():
        taken = parameters_of(task, skip=1)
        if taken is not None and "variables" in taken.names:
            names.append(name)
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def _named_parameters(step: Step) -> list[str]:
    taken = parameters_of(step.task, skip=1)
    return [] if taken is None else taken.names
