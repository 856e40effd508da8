"""Validation shared by the runners' constructors: fail when the runner is built, not mid-run."""

from __future__ import annotations

import math

__all__ = ["seconds_or_none", "whole_number"]


def whole_number(runner: str, option: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an ``int`` >= ``minimum``; else raise a ``ValueError`` saying so."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"{runner} runner: {option} must be a whole number >= {minimum}, got {value!r}"
        )
    return value


def seconds_or_none(runner: str, option: str, value: object) -> float | None:
    """Return ``value`` if it is ``None`` or a finite number > 0; else raise a ``ValueError``."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(
            f"{runner} runner: {option} must be a number of seconds > 0, or None for no limit, "
            f"got {value!r}"
        )
    return value
