"""A command's output as data: ``parse: json | textfsm | ttp`` of ``send_command`` and
``asend_command``, and of state checks (:mod:`nornir_bench.tasks.checks.state_checks`).

- ``json``: the device's own JSON (FRR's ``show ... json``, EOS's ``| json``).
- ``textfsm``: a TextFSM template, ``template_file``, or the one ntc-templates has for the
  host's platform and the command (as netmiko's ``use_textfsm``); a list of records.
- ``ttp``: a TTP template, ``template_file``; what TTP makes of the output.

Output that parses to nothing (a template that matched no line) is an error, not an empty
list: a check reading an empty list would say "no BGP peer", which the device never said.
Secrets in configuration text are masked before the output is parsed, so the data holds them
masked as the text would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.core.wording import shortened

__all__ = ["PARSERS", "OutputNotParsed", "check_parser", "parse_output"]

PARSERS = ("json", "textfsm", "ttp")


class OutputNotParsed(Exception):
    """A command's output that its parser could not read, or read as nothing."""


def check_parser(params: Mapping[str, Any], *, where: str = "parse") -> None:
    """Raise ``ValueError`` for a ``parse`` (and ``template_file``) that cannot parse anything:
    an unknown parser, a template missing or not one. Checked before any device is touched."""
    parse = params.get("parse")
    template = params.get("template_file")
    if parse is None:
        if template is not None:
            raise ValueError(f"template_file is for parse: textfsm or ttp, and {where} is not set")
        return
    if parse not in PARSERS:
        raise ValueError(f"{where} must be one of {', '.join(PARSERS)}, got {parse!r}")
    if parse == "json":
        if template is not None:
            raise ValueError(f"{where}: json takes no template_file")
        return
    if template is None:
        if parse == "ttp":
            raise ValueError(f"{where}: ttp needs a template_file")
        return  # ntc-templates', by the host's platform and the command
    if not isinstance(template, (str, os.PathLike)) or not Path(template).is_file():
        raise ValueError(f"{where}: template_file: no such file: {template}")
    if parse == "textfsm":
        import textfsm

        try:
            with open(template, encoding="utf-8") as file:
                textfsm.TextFSM(file)
        except (textfsm.TextFSMTemplateError, UnicodeDecodeError) as exc:
            raise ValueError(f"{where}: {template}: not a TextFSM template: {exc}") from None


def parse_output(
    text: str,
    parse: str,
    *,
    command: str,
    platform: str | None = None,
    template_file: str | os.PathLike[str] | None = None,
) -> Any:
    """``text``, the output of ``command``, as ``parse`` reads it (see the module).

    Raises:
        OutputNotParsed: the output is not what the parser reads, or it matched nothing.
    """
    text = mask_config_secrets(text)
    if parse == "json":
        return _json(text, command)
    if parse == "textfsm":
        data: Any = _textfsm(text, command, platform, template_file)
    elif parse == "ttp":
        data = _ttp(text, template_file)
    else:
        raise ValueError(f"parse must be one of {', '.join(PARSERS)}, got {parse!r}")
    if _empty(data):
        which = template_file or f"ntc-templates' for {platform} {command!r}"
        raise OutputNotParsed(
            f"{parse} template {which} matched nothing in the output of {command!r} "
            f"({_lines(text)}): {_start(text)}"
        )
    return data


def _json(text: str, command: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise OutputNotParsed(
            f"the output of {command!r} is not JSON ({exc}): {_start(text)}"
        ) from None


def _textfsm(text: str, command: str, platform: str | None, template: Any) -> Any:
    import textfsm

    if template is not None:
        with open(template, encoding="utf-8") as file:
            fsm = textfsm.TextFSM(file)
        try:
            rows = fsm.ParseText(text)
        except textfsm.TextFSMError as exc:
            raise OutputNotParsed(f"textfsm template {template}: {exc}") from None
        return [dict(zip((h.lower() for h in fsm.header), row, strict=True)) for row in rows]
    from ntc_templates.parse import ParsingException
    from ntc_templates.parse import parse_output as ntc_parse

    try:
        return ntc_parse(platform=platform, command=command, data=text)
    except ParsingException as exc:
        raise OutputNotParsed(
            f"ntc-templates cannot parse {command!r} on platform {platform} (give the step a "
            f"template_file of your own): {exc}"
        ) from None


def _ttp(text: str, template: Any) -> Any:
    from ttp import ttp

    parser = ttp(data=text, template=Path(template).read_text(encoding="utf-8"))
    parser.parse()
    result = parser.result(format="raw")
    # One input, one template: TTP nests the result in a list per template and per input.
    while isinstance(result, list) and len(result) == 1:
        result = result[0]
    return result


def _empty(data: Any) -> bool:
    if isinstance(data, Mapping):
        return all(_empty(value) for value in data.values()) if data else True
    if isinstance(data, list):
        return all(_empty(item) for item in data) if data else True
    return False


def _lines(text: str) -> str:
    count = len(text.splitlines())
    return "1 line" if count == 1 else f"{count} lines"


def _start(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return repr(shortened(first.strip(), 120)) if first else "the output is empty"
