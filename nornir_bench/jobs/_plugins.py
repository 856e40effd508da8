"""The plugins a job names: looked up in nornir's registers, their options checked, built once.

A section that names a plugin (``inventory``, ``runner``) gets its class, or the names that are
installed; its ``options`` are checked against the class's signature (a misspelt option, a value
of the wrong type) and then by the class itself, built once with them, so that a mistake is one
line at its place in the job rather than a traceback when the run starts.
"""

from __future__ import annotations

import importlib.metadata
import warnings
from typing import Any

from ruamel.yaml.comments import CommentedMap

from nornir_bench.jobs._job_file import JobError, JobFile, one_line
from nornir_bench.jobs._signatures import Parameters, parameters_of

__all__ = ["construct", "installed", "named_plugin", "plugin_options"]


def installed(register: Any, group: str) -> dict[str, Any]:
    """The plugins of one kind, by name: nornir's registers share one dict across all kinds, so
    the names come from the kind's entry point ``group``."""
    register.auto_register()
    names = {entry.name for entry in importlib.metadata.entry_points(group=group)}
    return {name: register.available[name] for name in names if name in register.available}


def named_plugin(
    job: JobFile, node: CommentedMap, section: str, plugins: dict[str, Any], default: str
) -> tuple[str, Any]:
    """The plugin ``node`` names (``default`` if none) and its class, or the valid names."""
    name = job.string(node, "plugin", section) if "plugin" in node else default
    if name not in plugins:
        raise job.error(
            node,
            "plugin",
            f"unknown {section} plugin {name!r}; available: {', '.join(sorted(plugins))}",
        )
    return name, plugins[name]


def plugin_options(
    job: JobFile, node: CommentedMap, cls: Any, what: str, where: str
) -> dict[str, Any]:
    """``node`` (at ``where`` in the job) as a dict, each key a parameter of ``cls`` and each
    value of its type; ``what`` names ``cls`` in messages."""
    options: dict[str, Any] = job.plain(node, where)
    taken = parameters_of(cls)
    if taken is None:
        return options
    extra = tuple(getattr(cls, "policy_options", ()))  # a runner's run policies, in **policy
    if extra and taken.takes_any:
        taken = Parameters([*taken.names, *extra], takes_any=False, hints=taken.hints)
    unknown = taken.unknown(options)
    if unknown is not None:
        raise job.error(
            node,
            unknown,
            f"{what} has no option {unknown!r}; options: {', '.join(taken.names) or 'none'}",
            at_key=True,
        )
    mistyped = taken.mistyped(options)
    if mistyped is not None:
        key, problem = mistyped
        raise job.error(node, key, f"{what} option {key} {problem}")
    return options


def construct(
    job: JobFile, cls: Any, options: dict[str, Any], section: CommentedMap, what: str
) -> None:
    """Build the plugin once, so its own checks of the options report here, in one line: at
    the ``section``'s ``options``, or at the section where it has none.

    Its warnings are not shown here: the run builds it again, and warns then.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**options)
    except (TypeError, ValueError) as exc:
        at = job.mapping(section, "options") or section
        raise JobError(f"{job.where(at)}: {what}: {one_line(exc)}") from None
