"""Which tasks say they change nothing: the built-in ones that only read, show commands, and
users' tasks marked with ``read_only``."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from nornir_bench.tasks import (
    BUILTIN_TASKS,
    asend_command,
    is_read_only,
    read_only,
    send_command,
)


def test_the_builtin_tasks_that_only_read() -> None:
    always = {name for name, task in BUILTIN_TASKS.items() if is_read_only(task, {})}
    assert always == {"sim_rtt", "asim_rtt", "tcp_ping", "atcp_ping", "parse_interfaces",
                      "check_state", "acheck_state",  # their checks' commands only read
                      "backup_config", "abackup_config",
                      "netconf_get", "anetconf_get", "netconf_get_config", "anetconf_get_config"}


@pytest.mark.parametrize("task", [send_command, asend_command])
@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("show version", True),
        ("  SHOW clock", True),
        ("display interface brief", True),
        ("ping 10.0.0.1", True),
        ("reload", False),
        ("configure terminal", False),
        ("show run\nreload", False),  # a second line is a second command
        ("showx", False),
        ("", False),
    ],
)
def test_device_commands_read_when_their_first_word_does(
    task: Any, command: str, reads: bool
) -> None:
    assert is_read_only(task, {"command": command}) is reads


def test_users_mark_their_tasks_and_partials_keep_the_mark() -> None:
    def reboot(task: Any) -> None: ...

    @read_only()
    def facts(task: Any) -> None: ...

    @read_only(when=lambda params: params.get("dry_run") is True)
    def push(task: Any, dry_run: bool = False) -> None: ...

    assert not is_read_only(reboot, {})
    assert is_read_only(facts, {})
    assert not is_read_only(push, {}) and is_read_only(push, {"dry_run": True})
    assert is_read_only(functools.partial(push, dry_run=True), {})
    assert is_read_only(functools.partial(send_command, command="show clock"), {})


def test_read_only_without_parentheses_marks_the_task_itself() -> None:
    """Written as most decorators are: the function stays the task (it used to become the
    decorator's inner function, and every host reported ok with a Task as its result)."""

    @read_only
    async def facts(task: Any) -> str:
        return "facts"

    assert facts.__name__ == "facts" and is_read_only(facts, {})


def test_read_only_given_anything_but_a_task_or_when_by_name_fails_at_once() -> None:
    with pytest.raises(TypeError, match="read_only is used as @read_only, @read_only"):
        read_only(42)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"read_only\(when=...\) takes a function"):
        read_only(when=True)  # type: ignore[call-overload]
