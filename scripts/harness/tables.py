"""Figures as Markdown tables, and a target said one way: ``<= 1.5 (met)``."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["met", "table"]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A Markdown table, then an empty line."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(flush=True)


def met(ok: bool, target: str) -> str:
    """``target (met)`` or ``target (MISSED)``."""
    return f"{target} ({'met' if ok else 'MISSED'})"
