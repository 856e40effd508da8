"""Checking keyword arguments read from YAML against a function's or a class's signature.

Job files name tasks and plugins; their options come from YAML as plain values. Reading the
signature catches a misspelt option or a value of the wrong type before anything runs, with a
message that says what is allowed, for any task or plugin, ours or a user's.
"""

from __future__ import annotations

import collections.abc
import inspect
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nornir_bench.core.checks import is_whole_number

__all__ = ["Parameters", "parameters_of", "show"]

_SPREAD = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@dataclass(frozen=True)
class Parameters:
    """The keyword arguments a callable takes.

    Attributes:
        names: the named parameters, in order.
        takes_any: it has ``**kwargs``, so any name is accepted.
        hints: the annotations that could be evaluated, by parameter name.
    """

    names: list[str]
    takes_any: bool
    hints: dict[str, Any]

    def unknown(self, given: Mapping[str, Any]) -> str | None:
        """The first name in ``given`` it does not take, if any."""
        if self.takes_any:
            return None
        return next((key for key in given if key not in self.names), None)

    def mistyped(self, given: Mapping[str, Any]) -> tuple[str, str] | None:
        """The first name in ``given`` whose value does not fit its hint, if any, and what is
        wrong: ``("rtt", "must be a number, got str 'fast'")``."""
        for key, value in given.items():
            hint = self.hints.get(key)
            if hint is not None and not _fits(value, hint):
                return key, f"must be {_describe(hint)}, got {show(value)}"
        return None


def parameters_of(obj: Any, *, skip: int = 0) -> Parameters | None:
    """``obj``'s parameters (a class: its ``__init__``'s), leaving out the first ``skip``;
    ``None`` when it has no readable signature."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())[skip:]
    # getattr, as mypy refuses ``obj.__init__`` on a class (a subclass's may differ)
    annotated = getattr(obj, "__init__") if isinstance(obj, type) else obj  # noqa: B009
    return Parameters(
        names=[p.name for p in params if p.kind not in _SPREAD],
        takes_any=any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params),
        hints=_type_hints(annotated),
    )


def show(value: Any) -> str:
    """A value as messages show it: its type and its ``repr``."""
    return f"{type(value).__name__} {value!r}"


def _type_hints(obj: Any) -> dict[str, Any]:
    """``obj``'s parameter annotations, evaluated one by one: one naming a class imported only
    for type checking (``task: Task``) must not cost the checks of the others."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # noqa: BLE001 - some annotation cannot be evaluated: go one by one
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(inspect.unwrap(obj), "__globals__", {})
    for name, annotation in getattr(obj, "__annotations__", {}).items():
        try:
            if isinstance(annotation, str):
                annotation = eval(annotation, namespace)  # in the function's own module
            hints[name] = annotation
        except Exception:  # noqa: BLE001 - that one stays unchecked
            continue
    return hints


def _is_union(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin is typing.Union or (sys.version_info >= (3, 10) and origin is types.UnionType)


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` (from YAML) can be an argument annotated ``hint``; unknown hints pass."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if _is_union(hint):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None) or hint is None:
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return is_whole_number(value)
    if hint is float:  # not is_number: .inf is a float too; the callee's own check decides
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin in (list, tuple, collections.abc.Sequence):
        return isinstance(value, list)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    return True


def _describe(hint: Any) -> str:
    if _is_union(hint):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if typing.get_origin(hint) in (list, tuple, collections.abc.Sequence):
        return "a list"
    if typing.get_origin(hint) in (dict, collections.abc.Mapping):
        return "a mapping"
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    return names.get(hint, str(hint))
