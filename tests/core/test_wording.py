"""Hosts counted and named, seconds and long texts shown, the same way in every message."""

from __future__ import annotations

from nornir_bench.core.exceptions import TaskTimeout
from nornir_bench.core.wording import hosts_named, hosts_text, seconds_text, shortened
from nornir_bench.tasks.synthetic.tcp import TcpPing


def test_one_host_is_one_host() -> None:
    assert [hosts_text(n) for n in (0, 1, 2)] == ["0 hosts", "1 host", "2 hosts"]


def test_past_the_names_shown_the_rest_are_counted() -> None:
    names = [f"dev{n}" for n in range(7)]
    assert hosts_named(names) == "7 hosts (dev0, dev1, dev2, dev3, dev4, ... (+2))"
    assert hosts_named(names[:1]) == "1 host (dev0)"
    assert hosts_named(names[:3], shown=3) == "3 hosts (dev0, dev1, dev2)"


def test_seconds_read_as_a_person_would_write_them() -> None:
    """A time computed from a deadline (14.99981 s left) reads as 15, not 14.9998."""
    shown = [seconds_text(s) for s in (14.99981, 600, 1.5, 0.05, 0.0012345, 0)]
    assert shown == ["15", "600", "1.5", "0.05", "0.00123", "0"]


def test_a_timeout_message_rounds_the_seconds_it_waited() -> None:
    assert str(TaskTimeout("send_config", "r1", 14.99981)) == (
        "task 'send_config' on host 'r1' timed out after 15 s"
    )
    ping = TcpPing("192.0.2.1", 22, 14.99981, None)  # a timeout bounded by the time left
    assert str(ping.no_connection()) == "192.0.2.1:22: no TCP connection within 15 s"


def test_a_long_text_loses_its_middle_and_says_how_much() -> None:
    text = "refused: " + "x" * 300 + " backup at /b/r1.cfg"
    short = shortened(text, 90)
    assert short == f"{text[:60]} [... {len(text) - 90} characters cut ...] {text[-30:]}"
    assert shortened("short", 90) == "short"
