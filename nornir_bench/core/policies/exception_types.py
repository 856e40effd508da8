"""Exception types an option names (``retry_on``, ``retry_never``), as classes or dotted names.

A device library's errors are named without importing the library (see :class:`ExceptionTypes`).
"""

from __future__ import annotations

import builtins
import importlib
import sys

__all__ = ["MAX_NAMES", "MAX_NAME_LENGTH", "ExceptionTypes"]

MAX_NAMES = 100
"""The most items one option names: exception types, groups or host attributes."""

MAX_NAME_LENGTH = 200
"""The longest one of those names may be."""


class ExceptionTypes:
    """A set of exception types given by class or dotted name (``"netmiko.ReadTimeout"``).

    Builtin names and classes are resolved when built. A dotted name is checked when built only
    if ``strict`` (names the user gave must exist: a typo must not silently retry nothing);
    at match time it is looked up in the modules already imported, so naming a device
    library's errors never imports the library.
    """

    def __init__(self, what: str, given: object, *, strict: bool) -> None:
        if isinstance(given, (str, type)):
            given = [given]
        if not isinstance(given, (list, tuple)) or len(given) > MAX_NAMES:
            raise ValueError(
                f"{what} must be a list of exception types (classes or dotted names such as "
                f"'netmiko.exceptions.ReadTimeout'), at most {MAX_NAMES}, got {given!r}"
            )
        self.names: tuple[str, ...] = ()
        self._resolved: list[type[BaseException]] = []
        self._lazy: list[str] = []
        for item in given:
            if isinstance(item, type) and issubclass(item, BaseException):
                self._resolved.append(item)
                self.names += (f"{item.__module__}.{item.__qualname__}",)
                continue
            if not isinstance(item, str) or not item or len(item) > MAX_NAME_LENGTH:
                raise ValueError(
                    f"{what}: each item must be an exception class or its dotted name, "
                    f"got {item!r}"
                )
            self.names += (item,)
            if "." not in item:
                self._resolved.append(_builtin(what, item))
            elif strict:
                self._resolved.append(_imported(what, item))
            else:
                self._lazy.append(item)

    def matches(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an instance of one of the types."""
        if isinstance(exc, tuple(self._resolved)):
            return True
        for name in self._lazy:
            cls = _loaded(name)
            if cls is not None and isinstance(exc, cls):
                return True
        return False

    def __repr__(self) -> str:
        return repr(list(self.names))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExceptionTypes) and other.names == self.names

    def __hash__(self) -> int:
        return hash(self.names)


def _builtin(what: str, name: str) -> type[BaseException]:
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise ValueError(
            f"{what}: {name!r} is not a builtin exception; give other types by dotted name "
            "('module.Class')"
        )
    return cls


def _imported(what: str, name: str) -> type[BaseException]:
    module, _, attr = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # noqa: BLE001 - any import error: the name is not usable
        raise ValueError(
            f"{what}: no exception type {name!r} ({type(exc).__name__}: {exc})"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise ValueError(f"{what}: {name!r} is not an exception type")
    return cls


def _loaded(name: str) -> type[BaseException] | None:
    module, _, attr = name.rpartition(".")
    cls = getattr(sys.modules.get(module), attr, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None
