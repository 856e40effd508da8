"""Hosts counted and named in one line, seconds and long text shown, worded the same in every
message: a policy's reason for stopping a run, a summary, a job's failure lines, a command's
header."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LINE_SHOWN", "hosts_named", "hosts_text", "seconds_text", "shortened"]

# A failure's cause in a line of text (a job's failure lines, diff, the report page) at most
# about this long: past it, :func:`shortened` cuts its middle (records hold it whole).
LINE_SHOWN = 300


def hosts_text(count: int) -> str:
    """``"1 host"``, ``"7 hosts"``."""
    return f"{count} host{'s' * (count != 1)}"


def hosts_named(names: Sequence[str], *, shown: int = 5) -> str:
    """``"7 hosts (dev1, dev3, dev5, dev7, dev9, ... (+2))"``: a count and the first names."""
    more = f", ... (+{len(names) - shown})" if len(names) > shown else ""
    return f"{hosts_text(len(names))} ({', '.join(names[:shown])}{more})"


def seconds_text(seconds: float) -> str:
    """``"15"``, ``"1.5"``, ``"0.05"``: seconds as a person reads them (3 significant digits
    below one second, 2 decimals below ten, 1 above), not a computed ``14.9998``."""
    if 0 < seconds < 1:
        text = f"{float(f'{seconds:.3g}'):f}"  # 3 significant digits, never an exponent
    else:
        text = f"{seconds:.{1 if seconds >= 10 else 2}f}"
    return text.rstrip("0").rstrip(".")


def shortened(text: str, limit: int = LINE_SHOWN) -> str:
    """``text`` in at most about ``limit`` characters: past it, its middle is cut, with a
    marker saying how much, so that both its start and its end (a path, an advice) show."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    head = limit - tail
    cut = len(text) - head - tail
    return f"{text[:head]} [... {cut:,} characters cut ...] {text[-tail:]}"
