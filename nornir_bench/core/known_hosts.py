"""The SSH known hosts as this process knows them, for the host-key checks of every login
(tasks/sessions/host_keys.py) and the new keys ``accept-new`` records.

Each file (``~/.ssh/known_hosts``, and the one an inventory names: data ``known_hosts``) is
kept as an index of its lines by the host they name, brought up to date at each lookup by
reading only what was appended since (all of it again once the file was replaced, cut or
rewritten where it stands, which the bytes at both ends of what was read tell): a login
costs a stat and the few lines about its host, whatever the file's size and however often
other processes append to it. Hashed names are matched by their HMAC, so a hashed file
(OpenSSH's ``HashKnownHosts``) is not parsed whole either. asyncssh then matches the lines
found (``[host]:port``, patterns, ``@revoked``).

A run's client sends the files' content to its workers (:func:`snapshot`, :func:`install`): a
worker on another machine checks against the client's known hosts, not a path only the client
has. :func:`record` appends a new host's key to a file once, whatever the number of processes
recording at once: an exclusive lock, and what others appended read under it.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import hmac
import itertools
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError

if TYPE_CHECKING:
    from asyncssh import SSHKey, SSHKnownHosts

__all__ = [
    "KNOWN_HOSTS",
    "KnownHostsError",
    "install",
    "known_for",
    "known_name",
    "matched",
    "openssh_line",
    "record",
    "run_files",
    "snapshot",
    "user_known_hosts",
]

KNOWN_HOSTS = "known_hosts"
"""The inventory data key naming a known-hosts file (host, group or defaults)."""


_SAMPLE = 4096
"""Bytes compared at each end of what was read, to tell an append from a rewrite."""
_GRAIN_NS = 2_000_000_000
"""The coarsest step of a file system's clock (FAT's; Linux's own step with the kernel tick)."""


class KnownHostsError(NornirBenchError):
    """A known-hosts file that cannot be read or written, or a setting not allowed."""


class _Index:
    """One known-hosts file as this process has read it: its lines by the host they name
    exactly, its hashed lines (salt, digest), and the lines that may name any host
    (patterns, markers)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.identity: tuple[int, int] | None = None  # st_dev, st_ino
        self.stamp: tuple[int, int, int] | None = None  # size and times when last read
        self.read_at = 0  # when the last read began (time.time_ns)
        self.offset = 0  # the whole lines read
        self.seen = 0  # and the start of one being written
        self.head = b""  # the first bytes read and the last ones: what an append keeps
        self.tail = b""
        self.named: dict[str, list[str]] = {}
        self.hashed: list[tuple[bytes, bytes, str]] = []
        self.others: list[str] = []

    def refresh(self, path: str) -> None:
        """Up to date with the file at ``path``: nothing read if it did not change."""
        try:
            found = os.stat(path)
        except FileNotFoundError:
            self._clear()
            return
        except OSError as exc:
            raise _unreadable(path, exc) from None
        if self.stamp == _stamp(found) and not self._racy():
            return
        try:
            with open(path, "rb") as file:
                self.catch_up(file)
        except FileNotFoundError:
            self._clear()
        except OSError as exc:
            raise _unreadable(path, exc) from None

    def _racy(self) -> bool:
        """A change in the same tick of the file's clock as the last read would leave its
        size and times as they were (git's "racy clean")."""
        return self.stamp is not None and max(self.stamp[1:]) + _GRAIN_NS > self.read_at

    def _continues(self, file: Any, found: os.stat_result) -> bool:
        """Whether what was read is still the start of ``file``: what follows is all that
        changed. Rewritten where it stands (an editor, ``cp``), the file keeps its inode and
        may keep its size and even its times: the bytes at both ends of what was read tell."""
        if (found.st_dev, found.st_ino) != self.identity or found.st_size < self.offset:
            return False
        if self.stamp == _stamp(found):
            if self._racy() and time.time_ns() >= max(self.stamp[1:]) + _GRAIN_NS:
                return False  # read whole once its clock moved on: the index is clean again
        elif self.stamp is not None and found.st_size <= self.seen:
            return False  # written, and nothing appended: rewritten
        fd = file.fileno()
        return (
            os.pread(fd, len(self.head), 0) == self.head
            and os.pread(fd, len(self.tail), self.offset - len(self.tail)) == self.tail
        )

    def catch_up(self, file: Any) -> None:
        """Read what was appended to ``file`` since (all of it if it was replaced, cut or
        rewritten)."""
        fd = file.fileno()
        found = os.fstat(fd)
        if not self._continues(file, found):
            self._clear()
            self.identity = (found.st_dev, found.st_ino)
        self.read_at = time.time_ns()
        file.seek(self.offset)
        data = file.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line being written: once it is whole
        if len(self.head) < _SAMPLE:
            self.head = (self.head + whole)[:_SAMPLE]
        self.tail = (self.tail + whole)[-_SAMPLE:]
        self.seen = self.offset + len(data)
        self.offset += len(whole)
        self.take(whole.decode("utf-8", errors="replace"))
        after = os.fstat(fd)  # the times of what was read; none if more came meanwhile
        self.stamp = _stamp(after) if after.st_size == self.seen else None

    @property
    def unended(self) -> bool:
        """Its last line has no newline yet."""
        return self.seen > self.offset

    def take(self, text: str) -> None:
        for line in text.splitlines(keepends=True):
            self._index(_ending(line))

    def _index(self, line: str) -> None:
        if line.lstrip().startswith("#"):
            return
        fields = line.split(maxsplit=2)[1 if line.startswith("@") else 0 :]
        if not fields:
            return
        names = fields[0]
        if names.startswith("|1|") and "," not in names:
            salt, _, digest = names[3:].partition("|")
            try:
                self.hashed.append((base64.b64decode(salt), base64.b64decode(digest), line))
            except (binascii.Error, ValueError):
                self.others.append(line)
        elif line.startswith("@") or any(c in names for c in "*?|"):
            self.others.append(line)
        else:
            for one in names.split(","):
                self.named.setdefault(one.lstrip("!"), []).append(line)

    def about(self, names: tuple[str, ...]) -> list[str]:
        """The lines that may name any of ``names``; asyncssh decides which do."""
        found = [line for name in names for line in self.named.get(name, ())]
        for salt, digest, line in self.hashed:
            if any(
                hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)
                for name in names
            ):
                found.append(line)
        return found + self.others


_ON_DISK: dict[str, _Index] = {}
_SENT: dict[str, _Index] = {}  # on a run's worker: the client's files, as the run sent them
_INDEXES_LOCK = threading.Lock()
_USER: list[str] = []  # on a run's worker: the client's ~/.ssh/known_hosts


def _on_disk(path: str) -> _Index:
    with _INDEXES_LOCK:
        index = _ON_DISK.get(path)
        if index is None:
            index = _ON_DISK[path] = _Index()
        return index


def user_known_hosts() -> str:
    """``~/.ssh/known_hosts`` of the user running this process; on a run's worker, the
    client's (:func:`install`)."""
    return _USER[0] if _USER else os.path.join(os.path.expanduser("~"), ".ssh", "known_hosts")


def known_name(hostname: str, port: int) -> str:
    """How a known-hosts line names ``hostname:port``, as OpenSSH writes it."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


def _names(hostname: str, port: int) -> tuple[str, ...]:
    """The names a line about ``hostname:port`` may give it (asyncssh decides)."""
    return tuple(dict.fromkeys((known_name(hostname, port), hostname)))


def known_for(files: Iterable[str], hostname: str, port: int) -> SSHKnownHosts:
    """The known hosts of ``files`` (read in turn) about ``hostname:port`` only, as asyncssh
    matches them: what a login to it is checked against.

    Raises:
        KnownHostsError: a file that exists and cannot be read.
    """
    from asyncssh import import_known_hosts

    names = _names(hostname, port)
    lines: list[str] = []
    for path in files:
        index = _SENT.get(path) or _on_disk(path)
        with index.lock:
            if path not in _SENT:
                index.refresh(path)
            lines += index.about(names)
    return import_known_hosts("".join(lines))


def matched(files: Iterable[str], hostname: str, port: int) -> tuple[list[SSHKey], list[SSHKey]]:
    """The keys ``files`` trust for ``hostname:port``, and those they revoke."""
    result = known_for(files, hostname, port).match(hostname, "", port)
    return list(result[0]), list(result[2])


def openssh_line(hostname: str, port: int, key: SSHKey) -> str:
    """The known-hosts line of ``key`` for ``hostname:port``."""
    return f"{known_name(hostname, port)} {key.export_public_key('openssh').decode().strip()}\n"


def record(path: str, hostname: str, port: int, key: SSHKey) -> list[SSHKey]:
    """``key`` appended to ``path`` as one line, under an exclusive lock, unless the file
    already trusts keys for ``hostname:port`` (another process recorded it first): those keys,
    else ``[]``. Only what others appended since this process last looked is read under the
    lock. Like OpenSSH, the line is not fsync'd.

    Raises:
        KnownHostsError: the file cannot be created or written.
    """
    from asyncssh import import_known_hosts

    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as exc:
        raise KnownHostsError(
            f"cannot record the key of {hostname}:{port} in {path}: {exc.strerror or exc}"
        ) from None
    index, names = _on_disk(path), _names(hostname, port)
    with index.lock, os.fdopen(fd, "rb+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # released as the file closes
        index.catch_up(file)
        about = "".join(index.about(names))
        trusted = list(import_known_hosts(about).match(hostname, "", port)[0]) if about else []
        line = openssh_line(hostname, port, key)
        if not trusted:
            file.write((b"\n" if index.unended else b"") + line.encode())
            file.flush()
            index.catch_up(file)
    sent = _SENT.get(path)
    if sent is not None and not trusted:  # a worker's view of the client's file gains it too
        with sent.lock:
            sent.take(line)
    return trusted


def snapshot(paths: Iterable[str]) -> tuple[str, dict[str, str]]:
    """The user's known-hosts path and the texts of the files ``paths``, for a run's workers.

    Raises:
        KnownHostsError: a file that exists and cannot be read.
    """
    return user_known_hosts(), {path: _read(path) for path in dict.fromkeys(paths)}


def install(known: tuple[str, Mapping[str, str]]) -> None:
    """A worker's known hosts: those its run's client sent (:func:`snapshot`), the client's
    ``~/.ssh/known_hosts`` standing for the worker's own."""
    sent = {}
    for path, text in known[1].items():
        sent[path] = _Index()
        sent[path].take(text)
    with _INDEXES_LOCK:
        _USER[:] = [known[0]]
        _SENT.clear()
        _SENT.update(sent)


def run_files(defaults: Any, groups: Iterable[Any], hosts: Iterable[Any]) -> list[str]:
    """The known-hosts files a run's hosts may read: the user's, and each one their inventory
    names (defaults, groups, hosts' own data). Once per run, over every host: their ``data``
    read directly (nornir's ``Host.__getattribute__`` doubles the cost of each)."""
    named = [user_known_hosts()]
    read = object.__getattribute__
    for holder in itertools.chain((defaults,), groups, hosts):
        data = read(holder, "data")
        path = data.get(KNOWN_HOSTS) if data else None
        if isinstance(path, (str, os.PathLike)):
            named.append(os.fspath(path))
    return list(dict.fromkeys(named))


def _stamp(found: os.stat_result) -> tuple[int, int, int]:
    return found.st_size, found.st_mtime_ns, found.st_ctime_ns


def _ending(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _unreadable(path: str, exc: OSError) -> KnownHostsError:
    return KnownHostsError(f"cannot read the known hosts file {path}: {exc.strerror or exc}")


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise _unreadable(path, exc) from None
