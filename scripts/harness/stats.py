"""Figures of repeated measurements: a median with its range, written one way everywhere."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Spread", "fit", "slope"]


@dataclass(frozen=True)
class Spread:
    """Samples of one measure: their median, lowest and highest."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Iterable[float], scale: float = 1.0) -> Spread:
        """The samples ``values`` (each times ``scale``: seconds to ms, or per host)."""
        kept = tuple(value * scale for value in values)
        if not kept:
            raise ValueError("a spread of no samples")
        return cls(kept)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def text(self, digits: int = 3) -> str:
        """``median (low-high)``."""
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"

    def unit_text(self, unit: str, digits: int = 3) -> str:
        """``median unit (low-high)``, or ``value unit`` for a single sample."""
        if len(self.values) == 1:
            return f"{self.values[0]:.{digits}f} {unit}"
        return (f"{self.median:.{digits}f} {unit} ({self.low:.{digits}f}-"
                f"{self.high:.{digits}f})")

    def cells(self, digits: int = 2) -> str:
        """``median | low | high``: three cells of a Markdown table."""
        return f"{self.median:.{digits}f} | {self.low:.{digits}f} | {self.high:.{digits}f}"


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares: (intercept, slope) of ``ys`` against ``xs``."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread:
        return mean_y, 0.0
    slope_ = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    return mean_y - slope_ * mean_x, slope_


def slope(ys: list[float]) -> float:
    """Least-squares growth of ``ys`` per step (one sample a step)."""
    return fit([float(x) for x in range(len(ys))], ys)[1]
