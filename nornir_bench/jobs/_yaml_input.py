"""Reading a job file's YAML within bounds (size, text encoding, characters, nesting, aliases),
and where each of its values sits in the file.

A job file is a few settings and a task, so anything far bigger than that is a mistake or an
attack, and must fail fast in one line rather than hang or end in a traceback: a file of
megabytes (the round-trip parser reads about 0.05 to 0.1 MB/s), bytes that are not UTF-8
text, nesting that would exhaust the interpreter's recursion limit, and YAML aliases that
repeat data until it no longer fits in memory (the "billion laughs").
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent
from ruamel.yaml.reader import ReaderError

from nornir_bench.core.exceptions import NornirBenchError

__all__ = [
    "MAX_DEPTH",
    "MAX_JOB_BYTES",
    "MAX_VALUES",
    "YamlInputError",
    "expanded_size",
    "position",
    "read_job_yaml",
    "too_deep",
    "too_many_values",
]

MAX_JOB_BYTES = 128 * 1024
"""Largest job file read: a few seconds of parsing at worst, hundreds of times a real job."""

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists in a job's values (a section's own mapping is the
first level)."""

MAX_VALUES = 100_000
"""Most values a job, or one inventory host, group or defaults ``data``, may expand to, each
use of a YAML alias counted in full (as the expanded data holds it)."""


class YamlInputError(NornirBenchError, ValueError):
    """A job file that cannot be read as YAML: one line, ``file[:line:column]: what and why``."""


def read_job_yaml(path: Path) -> Any:
    """The YAML document in the job file ``path``, read with the round-trip loader (so every
    value keeps its line and column).

    Raises:
        YamlInputError: the file is too big, not UTF-8 text, holds characters YAML does not
            allow, nests too deep, expands past :data:`MAX_VALUES` values, or a value cannot
            be built (``!!int abc``).
        MarkedYAMLError: a YAML syntax error, with its line and column.
        OSError: the file cannot be read.
    """
    text = _decoded(path, _read_bounded(path))
    if _brackets_may_nest_past(text, MAX_DEPTH):
        # ruamel's scanner slows with each open flow collection (2,000 took 10 s to refuse):
        # the parser's events find the place first.
        where = _too_deep_at(path, text)
        if where != str(path):
            raise YamlInputError(f"{where}: {too_deep()}")
    try:
        root = YAML(typ="rt").load(text)
    except MarkedYAMLError:
        raise  # the caller words syntax errors, as it does for the inventory's files
    except ReaderError as exc:
        line, column = _line_column(text, exc.position)
        raise YamlInputError(
            f"{path}:{line}:{column}: the job file contains the control character "
            f"U+{exc.character:04X}, which YAML does not allow; use printable text "
            "(tabs and line breaks are fine)"
        ) from None
    except RecursionError:
        # ruamel's composer recurses once per level: past a few hundred it runs out of stack.
        raise YamlInputError(f"{_too_deep_at(path, text)}: {too_deep()}") from None
    except Exception as exc:  # noqa: BLE001 - ruamel's constructors raise what they meet
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise YamlInputError(
            f"{path}: cannot build a value of the job file: {type(exc).__name__}: {first_line}; "
            "check explicit tags (!!int, !!float, !!bool, !!timestamp) and merge keys (<<)"
        ) from None
    _check_expansion(path, root)
    return root


def expanded_size(value: Any, sizes: dict[int, int]) -> int:
    """How many values ``value`` holds once every shared part is written out in full, as YAML
    aliases are when the data is copied, compared or written; at most ``MAX_VALUES + 1``.

    Each mapping or list is measured once (``sizes`` keeps the sizes by identity, and may be
    shared between calls), so the time is linear in the data as written, not as expanded.
    A structure that contains itself never ends: it counts as too many.
    """
    if not isinstance(value, (dict, list, tuple)):
        return 1
    key = id(value)
    if key in sizes:
        return sizes[key]
    sizes[key] = MAX_VALUES + 1  # while measuring: met again inside itself, it is endless
    children = value.values() if isinstance(value, dict) else value
    total = 1
    for child in children:
        total += expanded_size(child, sizes)
        if total > MAX_VALUES:
            break
    sizes[key] = min(total, MAX_VALUES + 1)
    return sizes[key]


def position(node: Any, key: Any = None, *, at_key: bool = False) -> tuple[int, int] | None:
    """1-based line and column of ``node[key]``, or of ``node`` itself without ``key``.

    A mapping's scalar value is found at the value, anything else at its key (at the key in
    any case with ``at_key``); a list's item at the item. ``None`` when the value has no place
    in the file: a section the job leaves out, or a node not read from YAML.
    """
    try:
        if key is None:
            line, column = node.lc.line, node.lc.col
        elif isinstance(node, CommentedSeq):
            line, column = node.lc.item(key)
        elif at_key or not isinstance(node.get(key), (str, int, float, bool)):
            line, column = node.lc.key(key)
        else:
            line, column = node.lc.value(key)
    except (AttributeError, KeyError, TypeError):
        return None
    if line is None or column is None:
        return None
    return int(line) + 1, int(column) + 1


def too_many_values(what: str) -> str:
    """The message for ``what`` expanding past :data:`MAX_VALUES`."""
    return (
        f"{what} expands to more than {MAX_VALUES:,} values "
        "(each use of a YAML alias counts in full)"
    )


def _read_bounded(path: Path) -> bytes:
    size = path.stat().st_size
    if size > MAX_JOB_BYTES:
        raise YamlInputError(_too_big(path, size))
    with path.open("rb") as file:  # a device or a pipe has no size: read no more than allowed
        data = file.read(MAX_JOB_BYTES + 1)
    if len(data) > MAX_JOB_BYTES:
        raise YamlInputError(_too_big(path, None))
    return data


def _too_big(path: Path, size: int | None) -> str:
    limit = _size(MAX_JOB_BYTES)
    what = f"bigger than the {limit}" if size is None else f"{_size(size)}, more than the {limit}"
    return (
        f"{path}: the job file is {what} a job file may be: it holds settings and a task; "
        "hosts and their data belong in inventory files"
    )


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB"
    return f"{count / 1024:.0f} KiB"


def _decoded(path: Path, data: bytes) -> str:
    """``data`` as text: UTF-8, with or without a byte-order mark, and no NUL."""
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16: it starts with UTF-16's mark
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
    ):
        if data.startswith(bom):
            raise YamlInputError(f"{path}: the job file is {encoding}; save it as UTF-8")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The bytes before the bad one decode: count lines and columns in characters there.
        line, column = _line_column(data[: exc.start].decode("utf-8"), exc.start)
        raise YamlInputError(
            f"{path}:{line}:{column}: the job file is not UTF-8 text "
            f"(byte 0x{data[exc.start]:02x}); save it as UTF-8"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        line, column = _line_column(text, nul)
        raise YamlInputError(
            f"{path}:{line}:{column}: the job file contains a NUL byte: not a text file; "
            "a job is YAML text, UTF-8"
        )
    return text


def _line_column(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of ``text[index]`` (``index`` may be ``len(text)``)."""
    index = min(index, len(text))
    start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - start + 1


def too_deep() -> str:
    """The message for nesting past :data:`MAX_DEPTH`."""
    return f"nesting deeper than {MAX_DEPTH} levels; a job holds settings, not deep data"


def _brackets_may_nest_past(text: str, depth: int) -> bool:
    """Whether the brackets of ``text`` (``[`` ``{`` against ``]`` ``}``, quotes not read)
    open more than ``depth`` at once: never false when its flow collections nest that deep."""
    open_now = deepest = 0
    for bracket in _BRACKETS.findall(text):
        open_now = open_now + 1 if bracket in "[{" else max(open_now - 1, 0)
        deepest = max(deepest, open_now)
    return deepest > depth


_BRACKETS = re.compile(r"[\[\]{}]")


def _too_deep_at(path: Path, text: str) -> str:
    """``file:line:column`` of the first mapping or list nested past :data:`MAX_DEPTH`.

    Read from the parser's events: unlike the composer, the parser keeps its own stack, so it
    follows any depth.
    """
    depth = -1  # the job's own mapping is not a level: its sections' values are the first
    try:
        for event in YAML(typ="rt").parse(text):
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    return f"{path}:{mark.line + 1}:{mark.column + 1}"
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    except MarkedYAMLError:
        pass
    return str(path)


def _check_expansion(path: Path, root: Any) -> None:
    """Fail if ``root`` expands past :data:`MAX_VALUES`, naming the innermost value that does."""
    sizes: dict[int, int] = {}
    if expanded_size(root, sizes) <= MAX_VALUES:
        return
    parent: Any = None
    key: Any = None
    node = root
    where = ""
    while True:  # down to the innermost value that is too big by itself
        items = node.items() if isinstance(node, dict) else enumerate(node)
        inner = next(((k, v) for k, v in items if expanded_size(v, sizes) > MAX_VALUES), None)
        if inner is None:
            break
        where += f"[{inner[0]}]" if isinstance(node, list) else f".{inner[0]}"
        parent, (key, node) = node, inner
    line, column = position(parent, key, at_key=True) or (1, 1)  # the root: 1:1
    what = where.lstrip(".") or "the job"
    raise YamlInputError(
        f"{path}:{line}:{column}: {too_many_values(what)}; a job holds settings and a task, "
        "and large data belongs in inventory files"
    )
