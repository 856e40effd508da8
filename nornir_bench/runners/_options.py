"""Validation shared by the runners' constructors: fail when the runner is built, not mid-run."""

from __future__ import annotations

__all__ = ["whole_number"]


def whole_number(runner: str, option: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an ``int`` >= ``minimum``; else raise a ``ValueError`` saying so."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"{runner} runner: {option} must be a whole number >= {minimum}, got {value!r}"
        )
    return value
