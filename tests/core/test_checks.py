"""The option checks every part of the package shares: one rule, one way of saying it."""

from __future__ import annotations

import math

import pytest

from nornir_bench.core.checks import number, seconds_or_none, whole_number
from nornir_bench.lab import LabError


@pytest.mark.parametrize(
    ("value", "options", "message"),
    [
        (True, {"minimum": 1}, "x must be a whole number >= 1, got True"),
        (1.0, {"minimum": 1}, "x must be a whole number >= 1, got 1.0"),
        ("3", {}, "x must be a whole number, got '3'"),
        (0, {"minimum": 1, "maximum": 65535}, "x must be a whole number from 1 to 65535, got 0"),
        (70000, {"maximum": 65535}, "x must be a whole number <= 65535, got 70000"),
    ],
)
def test_whole_numbers_refuse_bools_floats_and_out_of_range(
    value: object, options: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        whole_number("x", value, **options)


def test_a_whole_number_in_range_is_returned() -> None:
    assert whole_number("x", 1_000_000, minimum=1) == 1_000_000


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, False, 0, -1, "1"])
def test_numbers_refuse_nan_infinity_bools_and_out_of_range(value: object) -> None:
    with pytest.raises(ValueError, match=r"^t must be a number of seconds > 0, got "):
        number("t", value, above=0, unit="a number of seconds")


def test_the_callers_error_type_is_raised() -> None:
    with pytest.raises(LabError, match=r"^count must be a whole number >= 1, got 0$"):
        whole_number("count", 0, minimum=1, error=LabError)


def test_seconds_or_none_takes_none_for_no_limit() -> None:
    assert seconds_or_none("t", None) is None
    assert seconds_or_none("t", 2.5) == 2.5
    with pytest.raises(ValueError, match=r"^t must be a number of seconds > 0, or None for no "):
        seconds_or_none("t", math.nan)
