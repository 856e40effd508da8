"""Failures said by type, each with a sample message on one line."""

from __future__ import annotations

from typing import Any

__all__ = ["failures_text", "logins_text", "short"]


def failures_text(failures: dict[str, dict[str, Any]]) -> str:
    if not failures:
        return "none"
    ordered = sorted(failures.items(), key=lambda kv: -kv[1]["count"])
    return "; ".join(f"{kind} {f['count']} (\"{short(f['sample'])}\")" for kind, f in ordered)


def short(message: str, width: int = 90) -> str:
    """A failure's message on one line, without the boilerplate netmiko wraps around it."""
    text = " ".join(message.replace("|", "/").split())
    text = text.replace("A paramiko SSHException occurred during connection creation: ", "")
    return text if len(text) <= width else text[: width - 3] + "..."


def logins_text(r: dict[str, Any]) -> str:
    """The summary's login throttling counts."""
    if "login_refusals" not in r:
        return "n/a"
    return f"{r['login_refusals']} / {r['login_retried']} / {r['login_slowed']}"
