"""A router of a lab driven as root through its vtysh, not through SSH: a command, and its
running configuration put back (what tests and benchmarks undo with)."""

from __future__ import annotations

import subprocess

__all__ = ["restore_config", "vtysh"]

_SHOW_RUN = "show running-config"
_COMMAND_TIMEOUT = 30.0


def vtysh(name: str, router: str, command: str) -> str:
    """``command`` on router ``router`` (``r1`` ...) of lab ``name``, run as root through its
    vtysh (not through SSH): what it printed."""
    done = subprocess.run(
        ["vtysh", "-N", f"nb-{name}-{router}", "-c", command],
        capture_output=True, text=True, timeout=_COMMAND_TIMEOUT, check=False,
    )
    return done.stdout + done.stderr


def restore_config(name: str, router: str, before: str) -> bool:
    """Put ``router`` of lab ``name`` back to the running configuration ``before`` (as root:
    the lines that undo what changed since, through vtysh); whether it now is."""
    from nornir_bench.tasks.config_text import parse_config, remediation, same
    from nornir_bench.tasks.dialects import FRRDriver

    driver = FRRDriver()
    wanted = parse_config(before, driver)
    undo = remediation(parse_config(vtysh(name, router, _SHOW_RUN), driver), wanted)
    if undo:
        args = ["vtysh", "-N", f"nb-{name}-{router}", "-c", "configure terminal"]
        for line in undo:
            args += ["-c", line.strip()]  # one command each: vtysh keeps the section entered
        subprocess.run(args, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT,
                       check=False)
    return same(parse_config(vtysh(name, router, _SHOW_RUN), driver), wanted)
