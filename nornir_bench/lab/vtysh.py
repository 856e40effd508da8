"""A router of a lab driven as root through its vtysh, not through SSH: a command, and its
running configuration put back (what tests and benchmarks undo with)."""

from __future__ import annotations

import subprocess

__all__ = ["SHOW_RUNNING", "put_back", "restore_config", "same_config", "vtysh"]

SHOW_RUNNING = "show running-config"
_COMMAND_TIMEOUT = 30.0


def vtysh(name: str, router: str, command: str) -> str:
    """``command`` on router ``router`` (``r1`` ...) of lab ``name``, run as root through its
    vtysh (not through SSH): what it printed. Lines of ``command`` run one after the other."""
    done = subprocess.run(
        ["vtysh", "-N", f"nb-{name}-{router}", "-c", command],
        capture_output=True, text=True, timeout=_COMMAND_TIMEOUT, check=False,
    )
    return done.stdout + done.stderr


def put_back(name: str, router: str, before: str, now: str | None = None) -> str:
    """Put ``router`` of lab ``name`` back to the running configuration ``before`` (as root:
    the lines that undo what changed since, through vtysh); its running configuration after.
    ``now``: its running configuration as just read, if the caller has it."""
    from nornir_bench.tasks.dialects.config_text import parse_config, remediation
    from nornir_bench.tasks.dialects.dialects import FRRDriver

    driver = FRRDriver()
    current = vtysh(name, router, SHOW_RUNNING) if now is None else now
    undo = remediation(parse_config(current, driver), parse_config(before, driver))
    if not undo:
        return current
    args = ["vtysh", "-N", f"nb-{name}-{router}", "-c", "configure terminal"]
    for line in undo:
        args += ["-c", line.strip()]  # one command each: vtysh keeps the section entered
    subprocess.run(args, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT, check=False)
    return vtysh(name, router, SHOW_RUNNING)


def restore_config(name: str, router: str, before: str) -> bool:
    """Put ``router`` of lab ``name`` back to the running configuration ``before`` (as root:
    the lines that undo what changed since, through vtysh); whether it now is."""
    return same_config(put_back(name, router, before), before)


def same_config(one: str, other: str) -> bool:
    """Whether two of FRR's running configurations hold the same lines."""
    from nornir_bench.tasks.dialects.config_text import parse_config, same
    from nornir_bench.tasks.dialects.dialects import FRRDriver

    return same(parse_config(one, FRRDriver()), parse_config(other, FRRDriver()))
