"""A change's input, checked before any device is touched: its lines (from ``lines``, a
``config_file``, a Jinja2 ``template_file``, or a host's file at a commit of the backup
repository, ``from_history``), its ``mode``, ``scope`` and ``ignore``; for a
job, once when it is loaded (:func:`check_config_params`) and for each host before the step
starts (:func:`prepare_config`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from nornir_bench.core.checks import number
from nornir_bench.tasks.changes._change import ConfigInputError, check_around
from nornir_bench.tasks.changes._templates import check_template
from nornir_bench.tasks.changes.from_history import history_lines, history_source
from nornir_bench.tasks.dialects.config_text import change_lines, ignoring, scoped
from nornir_bench.tasks.dialects.dialects import dialect_of, driver_for

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "MAX_CONFIG_BYTES",
    "MODES",
    "ConfigMode",
    "check_config_params",
    "check_mode",
    "check_scope",
    "config_lines",
    "prepare_config",
    "rendered",
]

MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A change's text, from a file or a template, at most: a larger one is a mistake (a template
looping without end), refused before anything is sent."""


def check_config_params(params: Mapping[str, Any]) -> None:
    """The job loader's check, once for the run: :func:`_check_sources`, the checks and
    ``confirm``, and a template's syntax (each host's render parses it again: a check there
    would parse it twice)."""
    _check_sources(params)
    check_around(params)
    mode = check_mode(params)
    if params.get("template_file") is not None:
        check_template(Path(params["template_file"]))
    elif params.get("from_history") is not None:
        pass  # each host's own file: its scope checked per host (prepare_config)
    elif mode.scope:  # the same lines for every host: their scope checked once
        check_scope(config_lines(None, params.get("lines"),  # type: ignore[arg-type]
                                  params.get("config_file")), mode.scope)


class ConfigMode(NamedTuple):
    """``mode``, ``scope`` and ``ignore``, checked."""

    replace: bool
    scope: tuple[str, ...]
    ignore: tuple[re.Pattern[str], ...]


MODES = ("merge", "replace")


def check_mode(params: Mapping[str, Any]) -> ConfigMode:
    mode = params.get("mode", "merge") or "merge"
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    scope = params.get("scope") or []
    if not isinstance(scope, list) or not all(
            isinstance(entry, str) and entry.strip() == entry and entry for entry in scope):
        raise ValueError(
            "scope must be a list of the first words of sections, such as ['router bgp', "
            f"'ip route'], got {scope!r}"
        )
    if scope and mode != "replace":
        raise ValueError("scope names what a replace replaces: give mode: replace with it")
    if params.get("from_history") is not None and mode != "replace":
        raise ValueError(
            "from_history restores a host's configuration as a replace: give mode: replace "
            "with it (and scope to restore only some sections)"
        )
    ignore = params.get("ignore") or []
    if not isinstance(ignore, list):
        raise ValueError(f"ignore must be a list of regular expressions, got {ignore!r}")
    return ConfigMode(mode == "replace", tuple(scope), tuple(ignoring(ignore)))


def check_scope(lines: Sequence[str], scope: Sequence[str], host: str | None = None) -> None:
    """Each entry of ``scope`` names a section of the intended ``lines``."""
    top = [line.strip() for line in lines if line[:1] not in (" ", "\t") and line.strip()]
    unmatched = [prefix for prefix in scope if not any(scoped(line, [prefix]) for line in top)]
    if unmatched:
        raise ValueError(
            f"scope {', '.join(map(repr, unmatched))} matches no section of the intended "
            "configuration" + (f" of {host}" if host else "") + ": a scope names the first "
            "words of sections it holds, such as 'router bgp' or 'ip route'"
        )


def _check_sources(params: Mapping[str, Any]) -> None:
    """One source of lines, which exists; a list of lines checked; variables, timeout."""
    given = [name for name in _SOURCES if params.get(name) is not None]
    if len(given) != 1:
        raise ValueError(
            f"give the config as exactly one of {', '.join(_SOURCES)}"
            + (f", not {' and '.join(given)}" if given else "")
        )
    source = params[given[0]]
    if given[0] == "lines":
        if not isinstance(source, list):
            raise ValueError(f"lines must be a list of config lines, got {source!r}")
        change_lines(source)
    elif given[0] == "from_history":
        history_source(source)
    elif not isinstance(source, (str, os.PathLike)) or not Path(source).is_file():
        raise ValueError(f"{given[0]}: no such file: {source}")
    variables = params.get("variables")
    if variables is not None and not isinstance(variables, Mapping):
        raise ValueError(f"variables must be a mapping of names to values, got {variables!r}")
    if "timeout" in params:
        number("timeout", params["timeout"], above=0, unit="a number of seconds")


_SOURCES = ("lines", "config_file", "template_file", "from_history")


def config_lines(
    host: Host,
    lines: Sequence[object] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    template_file: str | os.PathLike[str] | None = None,
    variables: Mapping[str, Any] | None = None,
    from_history: Mapping[str, Any] | None = None,
) -> list[str]:
    """The change's lines for ``host``, from exactly one of ``lines``, ``config_file``,
    ``template_file`` (Jinja2, with ``host`` and ``variables``; undefined names fail) and
    ``from_history`` (the host's file at a commit of a backup repository)."""
    if from_history is not None and lines is config_file is template_file is None:
        return history_lines(host.name, history_source(from_history), MAX_CONFIG_BYTES)
    _check_sources({"lines": lines, "config_file": config_file, "template_file": template_file,
                    "from_history": from_history, "variables": variables})
    if lines is not None:
        return change_lines(lines)
    if config_file is not None:
        path = Path(config_file)
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ValueError(f"{path}: larger than {MAX_CONFIG_BYTES:,} bytes: not a change")
        return change_lines(path.read_text(encoding="utf-8").splitlines())
    assert template_file is not None
    return change_lines(rendered(host, template_file, variables).splitlines())


def rendered(
    host: Host, template_file: str | os.PathLike[str], variables: Mapping[str, Any] | None
) -> str:
    """``template_file`` (Jinja2) rendered for ``host`` with ``variables``: a ValueError
    naming the template for its own error, an undefined name, a text past the size cap."""
    path = Path(template_file)
    environment = _environment(str(path.parent))
    chunks: list[str] = []
    size = 0
    try:
        for chunk in environment.get_template(path.name).generate(host=host, **(variables or {})):
            size += len(chunk)
            if size > MAX_CONFIG_BYTES:
                break
            chunks.append(chunk)
    except Exception as exc:  # the template's own error (1/0, a sandbox refusal)
        raise ValueError(f"template {path}: {type(exc).__name__}: {exc}") from exc
    if size > MAX_CONFIG_BYTES:
        raise ValueError(
            f"template {path}: renders past {MAX_CONFIG_BYTES:,} characters for {host.name}: "
            "not a change"
        )
    return "".join(chunks)


@functools.lru_cache(maxsize=32)
def _environment(folder: str) -> Any:
    """The Jinja2 environment of the templates in ``folder``, kept: it keeps each template
    compiled (compiling one costs more than rendering it for a host) and compiles it again
    when its file changes. Sandboxed: a template reads host data; it cannot call into the
    host, nornir or Python."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, autoescape=False,
    )


def prepare_config(host: Host, params: Mapping[str, Any]) -> None:
    """A host's lines made as the task will make them, before any device is touched: a
    template's error (an undefined variable, its own exception, past the size cap) is a
    ``ValueError`` naming the template; a host whose file the commit of ``from_history``
    lacks, one naming the commit and the file. Lines and files are the same for every host,
    and checked once when the job is loaded. A replace on a host without a driver for its
    dialect, or whose intended configuration its scope misses, stops the run
    (:class:`ConfigInputError`)."""
    mode = check_mode(params)
    if mode.replace:
        try:
            driver_for(dialect_of(host), replace=True)
        except ValueError as exc:
            raise ConfigInputError(f"{host.name}: {exc}") from None
    if params.get("template_file") is not None or params.get("from_history") is not None:
        lines = config_lines(host, template_file=params.get("template_file"),
                             variables=params.get("variables"),
                             from_history=params.get("from_history"))
        try:
            check_scope(lines, mode.scope, host.name)
        except ValueError as exc:
            raise ConfigInputError(str(exc)) from None
