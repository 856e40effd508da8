"""Reading a device's CLI: prompts, pagers and output clean-up, without a device."""

from __future__ import annotations

import pytest

from nornir_bench.tasks._terminal import (
    ANY_PROMPT,
    PromptWatch,
    clean_output,
    paging_command,
    prompt_pattern,
)


@pytest.mark.parametrize("prompt", ["r1>", "r1#", "sw1(config-if)#", "user@mx1>", "admin@host:~$"])
def test_any_prompt_is_seen_at_the_end(prompt: str) -> None:
    assert ANY_PROMPT.search(f"Banner line\r\n{prompt}")
    assert not ANY_PROMPT.search(f"{prompt}\r\nmore output")


def test_learned_prompt_matches_every_mode_at_a_line_start_only() -> None:
    pattern = prompt_pattern("r1>")
    for text in ("out\r\nr1>", "out\r\nr1#", "out\r\nr1(config)#", "r1# "):
        assert pattern.search(text), text
    for text in ("out\r\nr10>", "out\r\nxr1#", "license r1>", "r1> trailing words"):
        assert not pattern.search(text), text


def test_watch_waits_for_the_prompt_across_chunks() -> None:
    watch = PromptWatch(prompt_pattern("r1#"))
    assert not watch.feed("show clock\r\n*10:00")
    assert not watch.feed(" UTC\r\nr")
    assert watch.feed("1#")
    assert (watch.prompt, watch.text) == ("r1#", "show clock\r\n*10:00 UTC\r\nr1#")


@pytest.mark.parametrize(
    "marker", [" --More-- ", "-- More --", "---(more 45%)---", "<--- More --->"]
)
def test_pager_markers_are_taken_out(marker: str) -> None:
    watch = PromptWatch(prompt_pattern("r1#"))
    assert not watch.feed("line 1\r\nline 2\r\n" + marker)
    assert watch.take_pager()
    assert watch.text == "line 1\r\nline 2\r\n"
    assert not watch.take_pager()
    assert watch.feed("\x08" * 9 + "line 3\r\nr1#")
    assert clean_output(watch.text, "show x") == "line 1\nline 2\nline 3"


def test_output_loses_echo_and_prompt_as_in_netmiko() -> None:
    raw = "show version\r\n\r\nCisco IOS XE\r\nConfiguration register is 0x2102\r\nr1#"
    assert clean_output(raw, "show version") == "\nCisco IOS XE\nConfiguration register is 0x2102"
    assert clean_output("show clock\r\nr1>", "show clock") == ""
    assert clean_output("no echo here\r\nr1>", "show clock") == "no echo here"


@pytest.mark.parametrize(
    ("platform", "command"),
    [
        ("cisco_ios", "terminal length 0"),
        ("ios", "terminal length 0"),
        ("arista_eos", "terminal length 0"),
        ("nxos_ssh", "terminal length 0"),
        ("juniper_junos", "set cli screen-length 0"),
        ("junos", "set cli screen-length 0"),
        ("linux", None),
        (None, None),
    ],
)
def test_paging_command_per_platform(platform: str | None, command: str | None) -> None:
    assert paging_command(platform) == command
