"""Lines a device prints in its running configuration that change when the configuration does
not: the time of the last change or save, a clock's drift. Left out of what a backup keeps, so
an unchanged device makes no commit (as Oxidized's models drop them).

Only comment and banner lines the devices write themselves, whole lines, matched from their
start: Cisco IOS and IOS XE (``! Last configuration change at ...``, ``! NVRAM config last
updated at ...``, ``! No configuration change since last restart``, ``ntp clock-period N``),
NX-OS (``!Time: ...``, ``!Running configuration last done at: ...``), Junos (``## Last
commit: ...``, ``## Last changed: ...``). FRR prints none.
"""

from __future__ import annotations

import re

__all__ = ["without_volatile_lines"]

_VOLATILE = re.compile(
    r"^(?:! Last configuration change at .*"
    r"|! NVRAM config last updated at .*"
    r"|! No configuration change since last restart.*"
    r"|ntp clock-period \d+"
    r"|!Time: .*"
    r"|!Running configuration last done at: .*"
    r"|## Last (?:commit|changed): .*)\r?\n?",
    re.MULTILINE,
)


def without_volatile_lines(text: str) -> str:
    """``text`` without the lines a device rewrites on its own (see the module)."""
    if "!" not in text and "ntp clock-period" not in text and "## Last" not in text:
        return text
    return _VOLATILE.sub("", text)
