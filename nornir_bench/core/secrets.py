"""Secrets from the environment, and keeping them out of everything a run writes.

A job file, an inventory or a lab may say ``password: ${ROUTER_PASSWORD}``: :func:`expand_env`
reads the value from the environment, so no secret has to sit in a file. Every password and
secret a run knows (from the environment or written literally) is then masked by a
:class:`Redactor` in whatever the run shows or writes: the terminal, the JSON Lines records and
every log handler the job's logging configuration creates, where a device library's exception
or a task's own result might otherwise echo it. Values are masked before they are encoded; and
since a secret may reach a log line already encoded (``%r`` of it, a URL, a JSON document), the
escaped forms it takes there are masked too.

In the core because the jobs, the lab and the records processor all need it; which secrets a
job's inventory holds is the job's (:mod:`nornir_bench.jobs.secrets`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus

from nornir_bench.core.exceptions import NornirBenchError

__all__ = [
    "MASK",
    "mask_xml_secrets",
    "Redactor",
    "SecretError",
    "encoded_forms",
    "expand_env",
    "is_secret_key",
    "mask_config_secrets",
    "masked_terminal",
    "secret_text",
    "terminal_secrets",
]

MASK = "********"

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Keys whose values are secrets wherever they appear: password, enable_secret, api_token, ...
_SECRET_KEY = re.compile(r"pass|secret|token|passphrase", re.IGNORECASE)


# A device configuration's secrets: the keyword, an encryption type if any (0, 5, 7 ...), then
# the value on the same line, masked (``username admin secret 5 $1$...``, ``neighbor 192.0.2.1
# password x``, ``snmp-server community x RO``, ``tacacs-server key x``, ``key-string x``).
# A keyword after ``the`` or a possessive is a noun in a sentence (``the password was not
# sent``), not a setting: no configuration syntax puts those words there (a short list: a
# username ``a`` would make ``a password x`` a setting). ``community`` ending a hyphenated word
# is a setting holding no secret (``send-community both``). A keyword just after ``<``, ``</``
# or a namespace's ``:`` is an XML element's name (mask_xml_secrets masks its text).
_CONFIG_SECRET = re.compile(
    r"(?P<prose>\b(?:the|its|their|your|our)[ \t]+)?"
    r"(?P<keep>(?<![<:/])\b(?:password|secret|key-string|authentication-key"
    r"|message-digest-key[ \t]+\d+[ \t]+md5|(?<!-)community|(?:tacacs|radius)-server[ \t]+key"
    r"|pre-shared-key(?:[ \t]+address[ \t]+\S+)?|key[ \t]+(?:0|6|7))"
    r"(?:[ \t]+[0-9]{1,2}(?=[ \t]))?[ \t]+)(?P<value>\S+)",
    re.IGNORECASE,
)


# A secret setting's keyword holds one of these (lowercase). A match of _CONFIG_SECRET never
# spans lines, so only the lines holding one need it: most of a configuration holds none, and
# the pattern tried at every position of 10 KB of text costs milliseconds.
_KEYWORDS = ("password", "secret", "key", "community")


def _masked(match: re.Match[str]) -> str:
    return match[0] if match["prose"] else match["keep"] + MASK


def mask_config_secrets(text: str) -> str:
    """``text`` (configuration lines, a diff of them) with the values of secret settings
    masked: passwords, secrets, keys, SNMP communities. Prose is left as written: the
    project's own messages (``the password was not sent``) hold no secret."""
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lowercase is longer: offsets would shift
        return _CONFIG_SECRET.sub(_masked, text)
    lines: set[tuple[int, int]] = set()
    for keyword in _KEYWORDS:
        found = lower.find(keyword)
        while found != -1:
            end = lower.find("\n", found)
            end = len(lower) if end == -1 else end
            lines.add((lower.rfind("\n", 0, found) + 1, end))
            found = lower.find(keyword, end)
    if not lines:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in sorted(lines):
        pieces += (text[done:start], _CONFIG_SECRET.sub(_masked, text[start:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


# An XML element holding a secret (NETCONF's <password>, <shared-secret>, <key>): its text.
_XML_SECRET = re.compile(
    r"(?P<open><(?:[\w.-]+:)?(?P<name>[\w.-]*(?:pass|secret|key|token|community)[\w.-]*)"
    r"(?:\s[^<>]*)?>)(?P<text>[^<]+)(?=</)",
    re.IGNORECASE,
)


def mask_xml_secrets(text: str) -> str:
    """``text`` (XML configuration, a diff of it) with the text of each element whose name
    says it holds a secret masked: ``<password>********</password>``."""
    return _XML_SECRET.sub(lambda m: m["open"] + MASK, text)


class SecretError(NornirBenchError, ValueError):
    """A ``${VAR}`` reference to an environment variable that is not set."""


def is_secret_key(key: object) -> bool:
    """Whether a setting named ``key`` holds a secret (``password``, ``secret``, ``token``...)."""
    return isinstance(key, str) and _SECRET_KEY.search(key) is not None


def secret_text(value: object) -> str | None:
    """The text to mask for ``value`` found under a secret key, if it can be a secret.

    A string, or a number: YAML reads ``password: 123456`` as one, and the device gets its
    text. Any number, ``.inf`` too: this decides what is masked, not what is allowed.
    ``true`` and ``false`` are no secret.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def expand_env(text: str, where: str) -> str:
    """``text`` with each ``${NAME}`` replaced by the environment variable ``NAME``.

    Raises:
        SecretError: naming ``where`` and the variable, when it is not set.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise SecretError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _REFERENCE.sub(value, text) if "${" in text else text


def encoded_forms(secret: str) -> set[str]:
    """``secret`` as it appears in text that encoded it: as is, inside a JSON string, inside
    a Python ``repr`` (of the string, or of its UTF-8 bytes), URL-encoded."""
    escaped = secret.replace("\\", "\\\\")
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        # repr quotes with ' and escapes a ' inside when the text holds both kinds of quote
        escaped.replace("'", "\\'"),
        escaped.replace('"', '\\"'),
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
    }
    return {form for form in forms if form}


class Redactor(logging.Filter):
    """Masks known secrets in text and in values; also a ``logging`` filter for handlers.

    Besides the values it is given, the values of secret settings in device configuration
    text (:func:`mask_config_secrets`: ``username admin secret ...``) are masked too: a
    change's lines, a device's ``show running-config``, a library's debug log of what it sent.

    Args:
        secrets: the values to mask, in any of their :func:`encoded_forms`. Empty strings are
            ignored.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        forms = {form for secret in secrets if secret for form in encoded_forms(secret)}
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted(forms, key=len, reverse=True)
        self._handlers: list[logging.Handler] = []

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if "<" in text:  # XML a device sent (NETCONF's <password>...</password>)
            text = mask_xml_secrets(text)
        return mask_config_secrets(text)

    def value(self, obj: Any) -> Any:
        """``obj`` with every string inside it (through dicts, lists, tuples and sets) masked,
        before anything encodes it: encoding may escape a secret past recognition. A value
        under a key that names a secret (``password``, ``shared-secret``: parsed device data,
        a NETCONF reply's) is masked whole."""
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, Mapping):
            return {
                self.value(k): MASK if is_secret_key(k) and secret_text(v) is not None
                else self.value(v)
                for k, v in obj.items()
            }
        if isinstance(obj, (list, tuple, set, frozenset)):
            return [self.value(item) for item in obj]
        return obj

    def json_default(self, obj: Any) -> Any:
        """For ``json.dumps(default=...)``: a value JSON cannot hold, as its masked ``repr``."""
        return self(repr(obj))

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self(record.exc_text)
        return True

    def install(self, loggers: Iterable[str] = ("", "nornir")) -> None:
        """Add this filter to every handler of ``loggers`` (filters on a logger miss records
        propagated from its children; a handler's see them all).

        nornir's logging configuration gives each logger it names (``logging.loggers``) its
        own file handler: pass them all.
        """
        for name in ("", *loggers):
            for handler in logging.getLogger(name).handlers:
                if self not in handler.filters:
                    handler.addFilter(self)
                    self._handlers.append(handler)

    def uninstall(self) -> None:
        """Remove this filter from the handlers :meth:`install` added it to."""
        for handler in self._handlers:
            handler.removeFilter(self)
        self._handlers.clear()

    @contextmanager
    def installed(self, loggers: Iterable[str] = ("", "nornir")) -> Iterator[Redactor]:
        """:meth:`install` for the block, then :meth:`uninstall`: a process running job after
        job does not pile filters up on long-lived handlers."""
        self.install(loggers)
        try:
            yield self
        finally:
            self.uninstall()


# -- the terminal -----------------------------------------------------------------------------


class _MaskedStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) whose lines are masked before they reach
    the stream under it: text is held until its line ends (``\n``, or ``\r`` as a progress bar
    redraws), or is flushed, so a secret written in pieces (``print`` writes the text, then the
    newline) is masked whole. Everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        with _TERMINAL_LOCK:
            self._pending += text
            end = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
            if end:
                ready, self._pending = self._pending[:end], self._pending[end:]
                self.stream.write(_terminal(ready))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with _TERMINAL_LOCK:
            ready, self._pending = self._pending, ""
            if ready:
                self.stream.write(_terminal(ready))
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer ...
        return getattr(self.stream, name)


_TERMINAL_LOCK = threading.RLock()
_TERMINAL: list[frozenset[str]] = []  # the secrets of each masked_terminal block under way
_terminal = Redactor()
_unmasked: tuple[Any, Any] | None = None  # sys.stdout and sys.stderr as they were


def terminal_secrets() -> tuple[str, ...]:
    """The secrets the terminal masks now (those of every :func:`masked_terminal` block under
    way): a runner's workers elsewhere mask their own output with them."""
    with _TERMINAL_LOCK:
        return tuple(sorted(set().union(*_TERMINAL)))


@contextmanager
def masked_terminal(secrets: Iterable[str]) -> Iterator[None]:
    """For the block, what anything writes to ``sys.stdout`` and ``sys.stderr`` (a task's
    ``print``, a warning, a traceback) is masked line by line: ``secrets`` and device
    configuration secrets (:class:`Redactor`). A ``SystemExit`` leaving the block with a
    message has it masked too (Python prints it only after the block). Blocks nest and may
    overlap across threads; the streams are put back when the last ends, if nobody replaced
    them meanwhile."""
    global _terminal, _unmasked
    mine = frozenset(s for s in secrets if s)
    with _TERMINAL_LOCK:
        if not _TERMINAL:
            _unmasked = (sys.stdout, sys.stderr)
            # None where there is no terminal at all (pythonw, a closed stream): nothing to mask.
            if sys.stdout is not None:
                sys.stdout = _MaskedStream(sys.stdout)
            if sys.stderr is not None:
                sys.stderr = _MaskedStream(sys.stderr)
        _TERMINAL.append(mine)
        _terminal = Redactor(set().union(*_TERMINAL))
    try:
        yield
    except SystemExit as exc:
        if isinstance(exc.code, str):
            exc.code = _terminal(exc.code)
        raise
    finally:
        with _TERMINAL_LOCK:
            _TERMINAL.remove(mine)
            _terminal = Redactor(set().union(*_TERMINAL))
            if not _TERMINAL and _unmasked is not None:
                for stream in (sys.stdout, sys.stderr):
                    if isinstance(stream, _MaskedStream):
                        stream.flush()
                if isinstance(sys.stdout, _MaskedStream):
                    sys.stdout = _unmasked[0]
                if isinstance(sys.stderr, _MaskedStream):
                    sys.stderr = _unmasked[1]
                _unmasked = None
