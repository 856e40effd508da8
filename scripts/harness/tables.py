"""Figures as Markdown tables, and a target said one way: ``<= 1.5 (met)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.entry import Bench

__all__ = ["met", "table"]


def table(header: Sequence[str], rows: Sequence[Sequence[str]], bench: Bench | None = None,
          **parameters: Any) -> None:
    """A Markdown table, then an empty line; each row a record of ``bench`` if given (its cells
    by their column's heading, with ``parameters``)."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
        if bench is not None:
            bench.record(dict(zip(header, row, strict=True)), **parameters)
    print(flush=True)


def met(ok: bool, target: str) -> str:
    """``target (met)`` or ``target (MISSED)``."""
    return f"{target} ({'met' if ok else 'MISSED'})"
