"""A job file's values, read from its YAML nodes, and every mistake in it reported where it is.

The sections' meaning (:mod:`nornir_bench.jobs.load` and the modules it reads sections with)
asks here for a mapping, a non-empty string or a plain value; a value of the wrong kind, or an
unknown key, is a :class:`JobError` at its ``file:line:column``. Plain values come with
``${NAME}`` expanded and the secrets among them noted (the rules are
:mod:`nornir_bench.core.secrets`'), so that whatever the job holds is masked in what a run
writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.secrets import (
    SecretError,
    expand_env,
    is_secret_key,
    secret_text,
)
from nornir_bench.jobs._signatures import show
from nornir_bench.jobs._yaml_input import (
    MAX_DEPTH,
    YamlInputError,
    position,
    read_job_yaml,
    too_deep,
)

__all__ = ["JobError", "JobFile", "one_line", "yaml_error"]


class JobError(NornirBenchError, ValueError):
    """A job that cannot run: one line saying where, what was wrong and what is allowed."""

    # Public as nornir_bench.jobs.load.JobError: tracebacks and pickles name it there.
    __module__ = "nornir_bench.jobs.load"


class JobFile:
    """The job file at ``path``: its YAML, and its values read knowing where each one sits.

    Attributes:
        path: the job file, as given (messages name it so).
        folder: the job file's folder, which relative paths in the job are relative to.
        secrets: every password and secret read so far (:meth:`plain` notes them).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder = path.resolve().parent
        self.secrets: set[str] = set()

    def read(self) -> Any:
        """The job file's YAML document, its nodes knowing their line and column."""
        try:
            return read_job_yaml(self.path)
        except OSError as exc:
            raise JobError(
                f"{self.path}: cannot read the job file: {exc.strerror or exc}"
            ) from None
        except MarkedYAMLError as exc:
            raise JobError(yaml_error(exc, "job", str(self.path))) from None
        except YamlInputError as exc:
            raise JobError(str(exc)) from None

    def relative(self, name: str) -> Path:
        """``name`` as the job means it: a relative path is relative to the job's folder."""
        return self.folder / name

    def keys(self, node: CommentedMap, allowed: tuple[str, ...], what: str) -> None:
        """Fail at the first key of ``node`` that is not ``allowed``."""
        for key in node:
            if key not in allowed:
                raise self.error(
                    node,
                    key,
                    f"unknown key {key!r} in {what}; allowed: {', '.join(allowed)}",
                    at_key=True,
                )

    def mapping(self, parent: CommentedMap, key: str) -> CommentedMap:
        """``parent[key]``, which must be a mapping; an empty one if it is left out or null."""
        node = parent.get(key)
        if node is None:
            return CommentedMap()
        if not isinstance(node, CommentedMap):
            raise self.error(
                parent, key, f"{key} must be a mapping, got {show(self.plain(node, key))}"
            )
        return node

    def string(self, node: CommentedMap, key: str, what: str) -> str:
        """``node[key]`` (at ``what`` in the job), which must be a non-empty string."""
        value = self.plain(node[key], f"{what}.{key}")
        if not isinstance(value, str) or not value:
            raise self.error(
                node, key, f"{what} {key} must be a non-empty string, got {show(value)}"
            )
        return value

    def plain(self, node: Any, where: str, depth: int = 1) -> Any:
        """``node`` (at ``where`` in the job) as plain dicts, lists and scalars, with
        ``${NAME}`` expanded and the values of secret keys noted in :attr:`secrets`.

        ``depth`` is how many mappings and lists ``node`` sits in, itself included: past
        ``MAX_DEPTH`` the job is refused rather than recursing on.
        """
        if isinstance(node, (CommentedMap, CommentedSeq)) and depth > MAX_DEPTH:
            raise self.error(node, None, too_deep())
        if isinstance(node, CommentedMap):
            out = {}
            for key, child in node.items():
                value = out[str(key)] = self.plain(child, f"{where}.{key}", depth + 1)
                if is_secret_key(key) and (text := secret_text(value)) is not None:
                    self.secrets.add(text)
            return out
        if isinstance(node, CommentedSeq):
            return [self.plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(node)]
        if isinstance(node, str):
            try:
                return expand_env(str(node), f"{self.path}: {where}")
            except SecretError as exc:
                raise JobError(str(exc)) from None
        # ruamel's numbers are subclasses that keep their formatting: hand on the plain types
        if isinstance(node, bool):
            return bool(node)
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            return float(node)
        return node

    def where(self, node: Any, key: Any = None, *, at_key: bool = False) -> str:
        """``file:line:column`` of ``node[key]`` (of the key itself with ``at_key``); the
        file alone for a value that is not in it."""
        at = position(node, key, at_key=at_key)
        return str(self.path) if at is None else f"{self.path}:{at[0]}:{at[1]}"

    def error(self, node: Any, key: Any, message: str, *, at_key: bool = False) -> JobError:
        """A :class:`JobError` saying ``message`` at ``node[key]`` (see :meth:`where`)."""
        return JobError(f"{self.where(node, key, at_key=at_key)}: {message}")


def one_line(exc: BaseException) -> str:
    """``exc`` in one line, for a message: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def yaml_error(exc: MarkedYAMLError, what: str, name: str | None = None) -> str:
    """A YAML syntax error in the ``what`` file (``name``, else the file the error names)."""
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return f"{name or what}: YAML syntax error: {problem}"
    where = f"{name or mark.name}:{mark.line + 1}:{mark.column + 1}"
    return f"{where}: YAML syntax error in the {what} file: {problem}"
