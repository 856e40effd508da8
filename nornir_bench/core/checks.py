"""Checks of option values, one rule each, so that every option says the same thing the same way.

YAML, JSON and Python all hand over ``True`` where a number was meant (``bool`` is an ``int``),
and ``float("nan")`` passes no comparison and so slips through ``not value > 0``-style checks
the wrong way round: these helpers refuse both. Each raises the caller's error type with
``"{what} must be {allowed}, got {value!r}"``: what was wrong and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeGuard

__all__ = ["flag", "is_number", "is_whole_number", "number", "seconds_or_none", "whole_number"]

ErrorType = Callable[[str], Exception]


def is_whole_number(
    value: object, minimum: int | None = None, maximum: int | None = None
) -> TypeGuard[int]:
    """Whether ``value`` is an ``int`` (not a ``bool``) within ``minimum``..``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)


def is_number(
    value: object,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    above: float | None = None,
) -> TypeGuard[int | float]:
    """Whether ``value`` is a finite ``int`` or ``float`` (not a ``bool``) within the bounds.

    ``minimum``/``maximum`` are inclusive; ``above`` is exclusive (``above=0``: more than 0).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not math.isfinite(value):
        return False
    return (
        (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
        and (above is None or value > above)
    )


def whole_number(
    what: str,
    value: object,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: ErrorType = ValueError,
) -> int:
    """Return ``value`` if it is a whole number within the bounds; else raise ``error``.

    Args:
        what: the option as the message names it, e.g. ``"threadpool runner: num_workers"``.
        value: the value given.
        minimum: the least allowed value (inclusive), if any.
        maximum: the greatest allowed value (inclusive), if any.
        error: the exception type to raise, called with the one-line message.
    """
    if not is_whole_number(value, minimum, maximum):
        raise error(f"{what} must be {_whole_range(minimum, maximum)}, got {value!r}")
    return value


def number(
    what: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    unit: str = "a number",
    error: ErrorType = ValueError,
) -> float:
    """Return ``value`` if it is a finite number within the bounds; else raise ``error``.

    ``unit`` names the kind of number in the message (``"a number of seconds"``).
    """
    if not is_number(value, minimum, maximum, above=above):
        raise error(f"{what} must be {unit}{_range(minimum, maximum, above)}, got {value!r}")
    return value


def seconds_or_none(what: str, value: object, *, error: ErrorType = ValueError) -> float | None:
    """Return ``value`` if it is ``None`` (no limit) or a finite number of seconds > 0."""
    if value is None:
        return None
    if not is_number(value, above=0):
        raise error(
            f"{what} must be a number of seconds > 0, or None for no limit, got {value!r}"
        )
    return value


def flag(what: str, value: object, *, error: ErrorType = ValueError) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 1, 0 or ``"yes"``); else raise."""
    if not isinstance(value, bool):
        raise error(f"{what} must be true or false, got {value!r}")
    return value


def _whole_range(minimum: int | None, maximum: int | None) -> str:
    return "a whole number" + _range(minimum, maximum, None)


def _range(minimum: float | None, maximum: float | None, above: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {_shown(minimum)} to {_shown(maximum)}"
    if maximum is not None:
        return (f" > {_shown(above)} and" if above is not None else "") + f" <= {_shown(maximum)}"
    if minimum is not None:
        return f" >= {_shown(minimum)}"
    if above is not None:
        return f" > {_shown(above)}"
    return ""


def _shown(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"
