"""What a network device's CLI looks like on the wire: prompts, paging, echoed commands.

Pure text handling, no I/O: :mod:`nornir_bench.tasks.ssh_session` feeds it what the device
sends. Output comes back as netmiko's ``send_command`` returns it (line ends ``\\n``, the echoed
command line and the trailing prompt removed), so ``send_command`` and ``asend_command`` give
the same text for the same command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "ANY_PROMPT",
    "PAGING_OFF",
    "PromptWatch",
    "clean_output",
    "paging_command",
    "prompt_pattern",
]

ANY_PROMPT = re.compile(r"[\w.\-@()/:~]+[>#$%]\s*\Z")
"""A CLI prompt at the end of the text (``r1>``, ``sw1(config)#``, ``user@host$``)."""

_MORE = re.compile(
    r"[ \t]*(?:-+\s*\(?more\b[^\r\n]*?-*|<-+\s*more\s*-+>)\s*\Z",
    re.IGNORECASE,
)  # --More--, -- More --, ---(more 45%)---, <--- More --->
# Terminal line-editing noise: backspaces (a pager erasing its marker) and ANSI escapes.
_NOISE = re.compile(r"[^\n\b]\x08|\x08|\x1b\[[0-9;?]*[A-Za-z]")

PAGING_OFF: Mapping[str, str] = MappingProxyType(
    {
        "cisco_ios": "terminal length 0",
        "cisco_xe": "terminal length 0",
        "cisco_xr": "terminal length 0",
        "cisco_nxos": "terminal length 0",
        "arista_eos": "terminal length 0",
        "juniper_junos": "set cli screen-length 0",
    }
)
"""The command that turns paging off, per netmiko platform name."""

# NAPALM and nornir users often write the short names.
_ALIASES = MappingProxyType(
    {
        "ios": "cisco_ios",
        "iosxr": "cisco_xr",
        "nxos": "cisco_nxos",
        "nxos_ssh": "cisco_nxos",
        "eos": "arista_eos",
        "junos": "juniper_junos",
    }
)

# How far back from the end a prompt or a pager marker can start.
_TAIL = 512


def paging_command(platform: str | None) -> str | None:
    """The command that turns paging off on ``platform``; ``None`` when unknown.

    For an unknown platform the session answers each ``--More--`` with a space instead.
    """
    if platform is None:
        return None
    return PAGING_OFF.get(_ALIASES.get(platform, platform))


def prompt_pattern(prompt: str) -> re.Pattern[str]:
    """The prompt of this session in any mode, learned from the first one seen.

    ``r1>`` gives a pattern matching ``r1>``, ``r1#`` and ``r1(config-if)#`` at the start of a
    line at the end of the text, so output that merely ends in ``>`` or ``#`` is not mistaken
    for the prompt.
    """
    base = re.sub(r"(?:\([^()]*\))?[>#$%]\s*\Z", "", prompt.strip())
    return re.compile(r"(?:\A|[\r\n])" + re.escape(base) + r"(?:\([\w.\-/:]*\))?[>#$%][ \t]*\Z")


class PromptWatch:
    """Collects what the device sends until its prompt: text in, "done?" / "page on?" out.

    Args:
        prompt: the pattern of the prompt ending the output (``ANY_PROMPT`` before the
            session has learned its own).
    """

    def __init__(self, prompt: re.Pattern[str] = ANY_PROMPT) -> None:
        self._prompt = prompt
        self._chunks: list[str] = []
        self._tail = ""
        self.prompt: str | None = None
        """The prompt that ended the output, once :meth:`feed` returned True."""

    def feed(self, chunk: str) -> bool:
        """Add what arrived; True when the text now ends with the prompt."""
        self._chunks.append(chunk)
        self._tail = (self._tail + chunk)[-_TAIL:]
        found = self._prompt.search(self._tail)
        if found is None:
            return False
        self.prompt = found.group().strip()
        return True

    def take_pager(self) -> bool:
        """True (and the marker dropped) when the text ends with a pager's ``--More--``."""
        tail = self._tail
        marker = _MORE.search(tail)
        if marker is None:
            return False
        text = "".join(self._chunks)
        self._chunks = [text[: len(text) - (len(tail) - marker.start())]]
        self._tail = tail[: marker.start()]
        return True

    @property
    def text(self) -> str:
        """Everything received so far."""
        return "".join(self._chunks)


def clean_output(raw: str, command: str) -> str:
    """The command's output as netmiko returns it: ``\\n`` line ends, no echo, no prompt.

    Args:
        raw: everything received after sending ``command``, up to and including the prompt.
        command: the command sent; a first line repeating it is the device's echo.
    """
    text = _NOISE.sub("", raw.replace("\r\n", "\n")).replace("\r", "")
    lines = text.split("\n")
    if lines and lines[0].strip().endswith(command.strip()):
        lines = lines[1:]
    if lines:
        lines = lines[:-1]  # the prompt line
    return "\n".join(lines)
