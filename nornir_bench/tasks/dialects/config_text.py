"""A device's configuration as text, worked on without the device, with hier_config: what a
change would make of it, the diff to review, the lines that get from one configuration to
another, and whether two are the same.

A configuration is hier_config's :class:`~hier_config.HConfig`, a tree by indentation, read
with the host's dialect (:mod:`nornir_bench.tasks.dialects.dialects`): its negation, its settings
that take a new value in place, the lines it prints that are not configuration.

- :func:`merged` is what a change of lines makes of a configuration, as the device does
  (hier_config's ``future``): a line added, ``no X`` removing ``X`` and the lines that begin
  ``X `` (``no neighbor 192.0.2.1``), a setting's new value replacing the old.
- :func:`replaced` is the configuration a replace aims at: the intended configuration, within
  the sections its ``scope`` names, the running one outside them.
- :func:`remediation` is the lines that take one configuration to another (hier_config's
  remediation, with each section's ``exit``), in the order to send them; a rollback is the
  remediation back to the backup.

Nothing here talks to a device; ``tasks.changes.config`` does, with these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hier_config import HConfig, WorkflowRemediation, get_hconfig
from hier_config.platforms.driver_base import HConfigDriverBase

from nornir_bench.tasks.dialects.dialects import FRRDriver, frr_remediation

__all__ = [
    "HConfig",
    "change_lines",
    "config_diff",
    "ignoring",
    "in_scope",
    "merged",
    "parse_config",
    "remediation",
    "replaced",
    "same",
    "save_refusal",
    "scoped",
]

# Saving the configuration refused: a reply line that begins "%" and is not a warning (FRR's
# "% Error: failed to open configuration file ...", IOS's "%Error opening nvram:...").
_SAVE_REFUSAL = re.compile(r"^%(?!\s*warning\b).*$", re.MULTILINE | re.IGNORECASE)


def change_lines(lines: Iterable[object]) -> list[str]:
    """The lines of a change as given (a list), checked: each one line of text; blank lines
    and trailing spaces dropped. ValueError says which line is wrong and why."""
    checked = []
    for number, line in enumerate(lines, 1):
        if not isinstance(line, str):
            raise ValueError(f"config line {number} must be text, got {line!r}")
        if "\n" in line or "\r" in line:
            raise ValueError(
                f"config line {number} holds a line break: give one line per list item, "
                f"got {line!r}"
            )
        if line.strip():
            checked.append(line.rstrip())
    if not checked:
        raise ValueError("the config is empty: give at least one line to send")
    return checked


def save_refusal(reply: str) -> str | None:
    """The device's words when ``reply`` (its answer to ``write memory``) says the
    configuration was not saved; a warning alone (FRR's ``% Warning: can't chown ...``) is
    not a refusal."""
    found = _SAVE_REFUSAL.search(reply)
    return None if found is None else found.group(0).strip()


def parse_config(
    text: str | Sequence[str], driver: HConfigDriverBase, ignore: Sequence[re.Pattern[str]] = ()
) -> HConfig:
    """A configuration (``show running-config``'s text, or a change's lines) as a tree in
    ``driver``'s dialect, without the lines any of ``ignore`` finds (sections whole)."""
    config = get_hconfig(driver, text if isinstance(text, str) else "\n".join(text))
    if ignore:
        for child in tuple(config.all_children()):
            if any(pattern.search(child.text) for pattern in ignore):
                child.delete()
    return config


def ignoring(patterns: Iterable[object]) -> list[re.Pattern[str]]:
    """``ignore:``'s regular expressions, compiled; ValueError names one that does not."""
    compiled = []
    for number, pattern in enumerate(patterns, 1):
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"ignore pattern {number} must be a regular expression, got "
                             f"{pattern!r}")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"ignore pattern {number} {pattern!r} does not compile: {exc}") \
                from None
    return compiled


def scoped(line: str, scope: Sequence[str]) -> bool:
    """Whether ``scope`` names the section a top-level ``line`` opens (``router bgp`` names
    ``router bgp 65001``, not ``router bgpx``)."""
    return any(line == prefix or line.startswith(prefix + " ") for prefix in scope)


def in_scope(config: HConfig, scope: Sequence[str]) -> HConfig:
    """The sections of ``config`` whose first line ``scope`` names (``router bgp`` names
    ``router bgp 65001``, not ``router bgpx``); all of it without a scope."""
    if not scope:
        return config
    kept = HConfig(config.driver)
    for child in config.children:
        if scoped(child.text, scope):
            kept.add_deep_copy_of(child)
    return kept


def merged(config: HConfig, change: HConfig) -> HConfig:
    """What ``change`` makes of ``config`` (a new tree; neither is changed). A ``no X``
    that finds nothing to remove changes nothing (hier_config keeps it, as a sign that it
    did not apply): a change already made is then no change, and a change half made is
    completed without sending a removal the device refuses (FRR's ``% Refusing to remove a
    non-existent route``)."""
    future = config.future(change)
    _drop_idle_negations(future, config)
    return future


def _drop_idle_negations(future: HConfig, config: HConfig) -> None:
    prefix = config.driver.negation_prefix
    for child in tuple(future.children):
        same_line = config.get_child(equals=child.text)
        if same_line is None and child.text.startswith(prefix):
            child.delete()
        elif same_line is not None:
            _drop_idle_negations(child, same_line)  # type: ignore[arg-type]


def replaced(config: HConfig, intended: HConfig, scope: Sequence[str]) -> HConfig:
    """The configuration a replace aims at: ``intended`` within ``scope`` (all of it without
    one), ``config`` outside it."""
    if not scope:
        return intended
    target = HConfig(config.driver)
    for child in config.children:
        if not scoped(child.text, scope):
            target.add_deep_copy_of(child)
    for child in in_scope(intended, scope).children:
        target.add_deep_copy_of(child)
    return target


def remediation(config: HConfig, target: HConfig) -> list[str]:
    """The lines that take ``config`` to ``target``, in the order to send them, each section
    closed by its ``exit``: hier_config's remediation, with the rules of the dialect that it
    has no rule kind for (:func:`~nornir_bench.tasks.dialects.dialects.frr_remediation`)."""
    lines = WorkflowRemediation(config, target).remediation_config
    if isinstance(config.driver, FRRDriver):
        frr_remediation(config, lines)
    return list(lines.lines(sectional_exiting=True))


def same(one: HConfig, other: HConfig) -> bool:
    """Whether two configurations have the same lines in the same sections (in any order)."""
    return next(iter(one.unified_diff(other)), None) is None


def config_diff(before: HConfig, after: HConfig, name: str = "running-config") -> str:
    """A unified diff from ``before`` to ``after`` (empty when they are the same): lines taken
    away ``-``, lines added ``+``, each under its section's line (hier_config's, in the
    layout of ``diff -u``)."""
    lines = [_unified(line) for line in before.unified_diff(after)]
    if not lines:
        return ""
    return "\n".join([f"--- {name} (now)", f"+++ {name} (after the change)", *lines])


_SIGNED = re.compile(r"^(\s*)([-+]) (.*)$")


def _unified(line: str) -> str:
    signed = _SIGNED.match(line)
    if signed is None:
        return " " + line
    indent, sign, text = signed.groups()
    return sign + indent + text
