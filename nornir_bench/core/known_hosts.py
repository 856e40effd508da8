"""The SSH known hosts as this process knows them: files read as they change, the content a run's
client sent its workers, and the keys recorded since (``accept-new``).

``~/.ssh/known_hosts`` and the file an inventory names (data ``known_hosts``) are read when a
login needs them and they changed since they were last read (a stat per login), or sent by
the run's client (:func:`snapshot`, :func:`install`): a
worker on another machine checks against the client's known hosts, not a path only the client
has. :func:`record` appends a new host's key to a file once, whatever the number of processes
recording at once (an exclusive lock, the file read under it). The matching is asyncssh's
(hashed names, ``[host]:port``, patterns, ``@revoked``); tasks/host_keys.py checks the keys.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError

if TYPE_CHECKING:
    from asyncssh import SSHKey, SSHKnownHosts

__all__ = [
    "KNOWN_HOSTS",
    "KnownHosts",
    "KnownHostsError",
    "install",
    "known_name",
    "matched",
    "openssh_line",
    "parsed",
    "record",
    "run_files",
    "snapshot",
    "user_known_hosts",
]

KNOWN_HOSTS = "known_hosts"
"""The inventory data key naming a known-hosts file (host, group or defaults)."""


class KnownHostsError(NornirBenchError):
    """A known-hosts file that cannot be read or written, or a setting not allowed."""


class KnownHosts:
    """The known-hosts files' texts (read again whenever a file changed, or as a run sent
    them), parsed by asyncssh per set of files, and the keys recorded since they were read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[str, tuple[object, str]] = {}  # by path: (its stamp, its text)
        self._sent: set[str] = set()  # paths whose text a run's client sent
        self._parsed: dict[tuple[object, ...], SSHKnownHosts] = {}
        self._added: dict[tuple[str, int], list[SSHKey]] = {}
        self.user: str | None = None

    def text(self, path: str) -> str:
        return self._current(path)[1]

    def _current(self, path: str) -> tuple[object, str]:
        """``path``'s stamp and text: read again if the file changed since (a long-lived
        process, 50 runs in one, sees the keys added meanwhile)."""
        with self._lock:
            if path in self._sent:
                return self._texts[path]
        stamp = _stamp(path)
        with self._lock:
            known = self._texts.get(path)
            if known is not None and known[0] == stamp:
                return known
        text = _read(path)
        with self._lock:
            self._texts[path] = (stamp, text)
            return stamp, text

    def parsed(self, files: tuple[str, ...]) -> SSHKnownHosts:
        from asyncssh import import_known_hosts

        current = [self._current(path) for path in files]
        key = (files, *(stamp for stamp, _ in current))
        with self._lock:
            found = self._parsed.get(key)
        if found is None:
            found = import_known_hosts("".join(_ending(text) for _, text in current))
            with self._lock:
                if len(self._parsed) > 64:  # old stamps of files that changed
                    self._parsed.clear()
                self._parsed[key] = found
        return found

    def install(self, texts: Mapping[str, str]) -> None:
        with self._lock:
            for path, text in texts.items():
                self._texts[path] = (("sent", len(text), hash(text)), text)
            self._sent = set(texts)
            self._parsed.clear()
            self._added.clear()

    def add(self, hostname: str, port: int, keys: list[SSHKey]) -> None:
        with self._lock:
            self._added.setdefault((hostname, port), []).extend(keys)

    def added(self, hostname: str, port: int) -> list[SSHKey]:
        with self._lock:
            return list(self._added.get((hostname, port), ()))


def _stamp(path: str) -> object:
    try:
        found = os.stat(path)
    except OSError:
        return None  # missing (read as empty), or unreadable (reading says why)
    return (found.st_ino, found.st_size, found.st_mtime_ns)


_KNOWN = KnownHosts()


def user_known_hosts() -> str:
    """``~/.ssh/known_hosts`` of the user running this process; on a run's worker, the
    client's (:func:`install`)."""
    return _KNOWN.user or os.path.join(os.path.expanduser("~"), ".ssh", "known_hosts")


def parsed(files: tuple[str, ...]) -> SSHKnownHosts:
    """The known hosts of ``files``, read in turn, as asyncssh matches them."""
    return _KNOWN.parsed(files)


def matched(files: tuple[str, ...], hostname: str, port: int) -> tuple[list[SSHKey], list[SSHKey]]:
    """The keys ``files`` (and the keys recorded since) trust for ``hostname:port``, and those
    they revoke."""
    result = _KNOWN.parsed(files).match(hostname, "", port)
    return [*result[0], *_KNOWN.added(hostname, port)], list(result[2])


def snapshot(paths: Iterable[str]) -> tuple[str, dict[str, str]]:
    """The user's known-hosts path and the texts of the files ``paths``, for a run's workers.

    Raises:
        KnownHostsError: a file that exists and cannot be read.
    """
    return user_known_hosts(), {path: _KNOWN.text(path) for path in dict.fromkeys(paths)}


def install(known: tuple[str, Mapping[str, str]]) -> None:
    """A worker's known hosts: those its run's client sent (:func:`snapshot`), the client's
    ``~/.ssh/known_hosts`` standing for the worker's own."""
    _KNOWN.user = known[0]
    _KNOWN.install(known[1])


def run_files(defaults: Any, groups: Iterable[Any], hosts: Iterable[Any]) -> list[str]:
    """The known-hosts files a run's hosts may read: the user's, and each one their inventory
    names (defaults, groups, hosts' own data)."""
    named = [user_known_hosts()]
    for holder in (defaults, *groups, *hosts):
        path = (getattr(holder, "data", None) or {}).get(KNOWN_HOSTS)
        if isinstance(path, (str, os.PathLike)):
            named.append(os.fspath(path))
    return list(dict.fromkeys(named))


def known_name(hostname: str, port: int) -> str:
    """How a known-hosts line names ``hostname:port``, as OpenSSH writes it."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


def openssh_line(hostname: str, port: int, key: SSHKey) -> str:
    """The known-hosts line of ``key`` for ``hostname:port``."""
    return f"{known_name(hostname, port)} {key.export_public_key('openssh').decode().strip()}\n"


def record(path: str, hostname: str, port: int, key: SSHKey) -> list[SSHKey]:
    """``key`` appended to ``path`` as one line, under an exclusive lock, unless the file
    already trusts keys for ``hostname:port`` (another process recorded it first); those keys,
    else ``[]``. Either way they are trusted in this process from now on.

    Under the lock only what other processes appended since this one last looked is read
    (:class:`_Appended`): 10,000 hosts recorded at once cost 10,000 short reads, not 10,000
    reads of a growing file. Like OpenSSH, the line is not fsync'd.

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
    name = known_name(hostname, port)
    with _APPENDED_LOCK, os.fdopen(fd, "rb+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # released as the file closes
        seen = _APPENDED.setdefault(path, _Appended())
        seen.catch_up(file)
        about = seen.about(name, hostname)
        trusted = list(import_known_hosts(about).match(hostname, "", port)[0]) if about else []
        if not trusted:
            line = openssh_line(hostname, port, key).encode()
            file.write((b"\n" if seen.unended else b"") + line)
            file.flush()
            seen.catch_up(file)
    _KNOWN.add(hostname, port, trusted or [key])
    return trusted


class _Appended:
    """What this process has read of a known-hosts file, kept as an index: the lines naming
    each host exactly, and those that may name any (hashed names, patterns, markers)."""

    def __init__(self) -> None:
        self.identity: tuple[int, int] | None = None
        self.offset = 0
        self.unended = False
        self.named: dict[str, list[str]] = {}
        self.others: list[str] = []

    def catch_up(self, file: Any) -> None:
        """Read what was appended since (all of it again if the file was replaced or cut)."""
        found = os.fstat(file.fileno())
        identity = (found.st_dev, found.st_ino)
        if identity != self.identity or found.st_size < self.offset:
            self.__init__()  # type: ignore[misc]
            self.identity = identity
        file.seek(self.offset)
        data = file.read()
        whole = data[: data.rfind(b"\n") + 1]
        self.offset += len(whole)
        self.unended = len(whole) < len(data)  # a last line without its newline
        for line in whole.decode("utf-8", errors="replace").splitlines(keepends=True):
            self._index(line)

    def _index(self, line: str) -> None:
        fields = line.split(maxsplit=2)[1 if line.startswith("@") else 0 :]
        if not fields or line.lstrip().startswith("#"):
            return
        names = fields[0]
        if line.startswith("@") or names.startswith("|") or "*" in names or "?" in names:
            self.others.append(_ending(line))
            return
        for one in names.split(","):
            self.named.setdefault(one.lstrip("!"), []).append(_ending(line))

    def about(self, name: str, hostname: str) -> str:
        """The lines that may name ``name`` (``[host]:port``, or ``host`` for port 22)."""
        return "".join([*self.named.get(name, ()), *self.named.get(hostname, ()), *self.others])


_APPENDED: dict[str, _Appended] = {}
_APPENDED_LOCK = threading.Lock()  # the indexes are shared by this process's threads


def _ending(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise KnownHostsError(
            f"cannot read the known hosts file {path}: {exc.strerror or exc}"
        ) from None
