"""Hosts counted and named in one line, worded the same in every message: a policy's reason for
stopping a run, a summary, a job's failure lines, a command's header."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["hosts_named", "hosts_text"]


def hosts_text(count: int) -> str:
    """``"1 host"``, ``"7 hosts"``."""
    return f"{count} host{'s' * (count != 1)}"


def hosts_named(names: Sequence[str], *, shown: int = 5) -> str:
    """``"7 hosts (dev1, dev3, dev5, dev7, dev9, ... (+2))"``: a count and the first names."""
    more = f", ... (+{len(names) - shown})" if len(names) > shown else ""
    return f"{hosts_text(len(names))} ({', '.join(names[:shown])}{more})"
