"""A device's configuration as text, worked on without the device: what a change would do to
it, the diff to review, the lines that undo a change, and whether two configurations are the
same.

Cisco-like configurations (IOS, EOS, NX-OS, FRR's vtysh) are trees by indentation: a line
opens a section (``router bgp 65001``) whose lines are indented below it (`` address-family
ipv4 unicast``, then ``  network 203.0.113.0/24``). :func:`parse_config` reads one into a
:class:`Section`, leaving out what only frames the text (``!``, ``end``, ``exit``,
``exit-address-family``, ``Building configuration...``). A change is written the same way, as
the lines one types in configuration mode, indented under their sections.

:func:`applied` is what the change makes of a configuration, as such a device does:

- a line the section lacks is added at its end, its own indented lines under it; a line the
  section has already changes nothing (so applying a change twice changes nothing the second
  time);
- ``no X`` removes the line ``X`` (with its section), and lines that begin with ``X`` and a
  space (``no neighbor 192.0.2.1`` removes every ``neighbor 192.0.2.1 ...``); with nothing to
  remove it changes nothing;
- ``X`` replaces a ``no X`` line (a default the configuration had turned off).

:func:`changing_lines` picks, of a change's lines, those that change the configuration as the
device takes them one after another, with the lines that open their sections: what to send,
so that a change half made (a run stopped in the middle) is completed by sending the rest, not
all of it again (``no ip route ...`` of a route already gone is refused).

Order within a section is the device's: two configurations are :func:`same` when they have the
same lines in the same sections, in any order. What a device does beyond these rules (lines it
rewrites, defaults it adds) shows when the change is verified against the configuration read
back (``tasks.config``).

Nothing here talks to a device; ``tasks.config`` does, with these.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Section",
    "applied",
    "change_lines",
    "changing_lines",
    "config_diff",
    "parse_config",
    "refusal",
    "render",
    "restoring_lines",
    "same",
    "save_refusal",
]

# Lines that only frame a configuration's text, whatever their indentation.
_FRAMING = frozenset({"!", "end", "exit", "exit-address-family", "exit-vrf", "exit-vnc", "quit"})
_HEADERS = ("Building configuration", "Current configuration")
_INDENT = " "
# A Cisco-like CLI refusing a configuration line: a reply line that begins "% " ("% Invalid
# input detected", FRR's "% Unknown command: ..." and "% Refusing to remove a non-existent
# route"); accepted lines print nothing.
_REFUSAL = re.compile(r"^% .*$", re.MULTILINE)
# Saving the configuration refused: a reply line that begins "%" and is not a warning (FRR's
# "% Error: failed to open configuration file ...", IOS's "%Error opening nvram:...").
_SAVE_REFUSAL = re.compile(r"^%(?!\s*warning\b).*$", re.MULTILINE | re.IGNORECASE)


@dataclass
class Section:
    """The lines of a configuration (or of one of its sections), in order, each with the
    section it opens (empty for most lines)."""

    lines: dict[str, Section] = field(default_factory=dict)


def change_lines(lines: Iterable[object]) -> list[str]:
    """The lines of a change as given (a list), checked: each one line of text; blank lines
    and trailing spaces dropped. ValueError says which line is wrong and why."""
    checked = []
    for number, line in enumerate(lines, 1):
        if not isinstance(line, str):
            raise ValueError(f"config line {number} must be text, got {line!r}")
        if "\n" in line or "\r" in line:
            raise ValueError(
                f"config line {number} holds a line break: give one line per list item, "
                f"got {line!r}"
            )
        if line.strip():
            checked.append(line.rstrip())
    if not checked:
        raise ValueError("the config is empty: give at least one line to send")
    return checked


def refusal(reply: str) -> str | None:
    """The device's words when ``reply`` (its answer to one configuration line) refuses it."""
    found = _REFUSAL.search(reply)
    return None if found is None else found.group(0).strip()


def save_refusal(reply: str) -> str | None:
    """The device's words when ``reply`` (its answer to ``write memory``) says the
    configuration was not saved; a warning alone (FRR's ``% Warning: can't chown ...``) is
    not a refusal."""
    found = _SAVE_REFUSAL.search(reply)
    return None if found is None else found.group(0).strip()


def parse_config(text: str | Sequence[str]) -> Section:
    """A configuration (``show running-config``'s text, or a change's lines) as a tree."""
    root = Section()
    stack: list[tuple[int, Section]] = [(-1, root)]
    for raw in text.splitlines() if isinstance(text, str) else text:
        line = raw.rstrip().expandtabs(1)
        words = line.strip()
        if not words or words.startswith("!") or words in _FRAMING or words.startswith(_HEADERS):
            continue
        depth = len(line) - len(line.lstrip(_INDENT))
        while stack[-1][0] >= depth:
            stack.pop()
        section = stack[-1][1].lines.setdefault(words, Section())
        stack.append((depth, section))
    return root


def render(section: Section, depth: int = 0) -> list[str]:
    """``section`` as configuration lines, one space of indentation per level."""
    out = []
    for line, inner in section.lines.items():
        out.append(_INDENT * depth + line)
        out += render(inner, depth + 1)
    return out


def applied(config: Section, change: Section) -> Section:
    """What ``change`` makes of ``config`` (a new tree; neither is changed)."""
    result = _copy(config)
    _apply(result, change)
    return result


def _apply(target: Section, change: Section) -> None:
    for line, inner in change.lines.items():
        _, section = _take(target, line)  # the rules, written once (changing_lines too)
        if section is not None:
            _apply(section, inner)


def _copy(section: Section) -> Section:
    return Section({line: _copy(inner) for line, inner in section.lines.items()})


def same(one: Section, other: Section) -> bool:
    """Whether two configurations have the same lines in the same sections (in any order)."""
    return one.lines.keys() == other.lines.keys() and all(
        same(inner, other.lines[line]) for line, inner in one.lines.items()
    )


def config_diff(before: Section, after: Section, name: str = "running-config") -> str:
    """A unified diff from ``before`` to ``after`` (empty when they are the same): lines taken
    away ``-``, lines added ``+``, each under its section's line."""
    if same(before, after):
        return ""
    old, new = render(before), render(_ordered_like(after, before))
    return "\n".join(
        difflib.unified_diff(old, new, f"{name} (now)", f"{name} (after the change)",
                             lineterm="", n=3)
    )


def _ordered_like(section: Section, model: Section) -> Section:
    """``section`` with the lines ``model`` has first, in ``model``'s order: a diff then shows
    only what changed, not lines the device keeps in an order of its own."""
    first = [line for line in model.lines if line in section.lines]
    rest = [line for line in section.lines if line not in model.lines]
    return Section({
        line: _ordered_like(section.lines[line], model.lines.get(line, Section()))
        for line in first + rest
    })


def restoring_lines(before: Section, after: Section) -> list[str]:
    """Configuration lines that take ``after`` back to ``before``: what was added is removed
    (``no X``; a section added is removed whole), in reverse order, then what was removed is
    added again (with its section); each under its section's line."""
    return list(_restoring(before, after, 0))


def _restoring(before: Section, after: Section, depth: int) -> Iterator[str]:
    indent = _INDENT * depth
    undone = set()
    for line in reversed(list(after.lines)):
        if line not in before.lines:
            undo = line[3:] if line.startswith("no ") else "no " + line
            undone.add(undo)
            yield indent + undo
    for line, inner in before.lines.items():
        if line not in after.lines and not (line in undone and not inner.lines):
            yield indent + line
            yield from render(inner, depth + 1)
    for line, inner in before.lines.items():
        if line in after.lines:
            below = list(_restoring(inner, after.lines[line], depth + 1))
            if below:
                yield indent + line
                yield from below


def changing_lines(config: Section, lines: Sequence[str]) -> list[int]:
    """The indexes of the ``lines`` of a change to send to a device whose configuration is
    ``config``: each line that changes it (taken one after another, by :func:`applied`'s
    rules), the lines that open its sections (``router bgp 65001`` before its
    `` neighbor ...``), and the framing lines that close those (``exit-address-family``).
    Lines indented under a ``no`` line go with it."""
    state = _copy(config)
    keep: set[int] = set()
    # (depth, index of the line that opened it, its section in ``state`` or None under "no")
    stack: list[tuple[int, int, Section | None]] = [(-1, -1, state)]
    last_at: dict[int, int] = {}  # depth -> the last section line there, which framing closes
    follow: list[tuple[int, int]] = []  # (a line, the line it is kept with)
    for index, raw in enumerate(lines):
        line = raw.rstrip().expandtabs(1)
        words = line.strip()
        depth = len(line) - len(line.lstrip(_INDENT))
        if not words or words.startswith("!") or words in _FRAMING or words.startswith(_HEADERS):
            if depth in last_at:
                follow.append((index, last_at[depth]))
            continue
        while stack[-1][0] >= depth:
            stack.pop()
        last_at[depth] = index
        section = stack[-1][2]
        if section is None:
            follow.append((index, stack[-1][1]))
            stack.append((depth, index, None))
            continue
        changed, inner = _take(section, words)
        if changed:
            keep.update(opener for _, opener, _ in stack[1:])
            keep.add(index)
        stack.append((depth, index, inner))
    for index, kept_with in follow:  # in order: a line's opener is settled before it
        if kept_with in keep:
            keep.add(index)
    return sorted(keep)


def _take(section: Section, line: str) -> tuple[bool, Section | None]:
    """``line`` applied to ``section`` in place, as :func:`applied` does: whether that changed
    it, and the section the lines under it go to (``None`` under a ``no`` line)."""
    if line.startswith("no "):
        removed = line[3:].strip()
        gone = [present for present in section.lines
                if present == removed or present.startswith(removed + " ")]
        for present in gone:
            del section.lines[present]
        return bool(gone), None
    changed = section.lines.pop("no " + line, None) is not None
    if line not in section.lines:
        section.lines[line] = Section()
        changed = True
    return changed, section.lines[line]
