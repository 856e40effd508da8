"""Which of some files a process opened since the last look (Linux's inotify, ``IN_OPEN``).

A router lab restores only the routers a vtysh ran on since its baseline was last checked
(every vtysh, a login's or root's, reads its router's ``vtysh.conf`` as it starts): the others
cannot have changed, and are not asked. Reading costs no process.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Mapping

__all__ = ["OpenedFiles"]

_IN_OPEN = 0x20
_IN_Q_OVERFLOW = 0x4000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
_READ_SIZE = 65536


class OpenedFiles:
    """Watches ``files`` (a key per path) for being opened.

    Where inotify cannot watch (no more watches or instances, not Linux), every key counts as
    opened at every look: the caller then checks everything, as it would without a watch.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self._keys: dict[int, str] = {}
        self._all = set(files)
        self._seen: set[str] = set()
        self._fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        for key, path in files.items():
            wd = libc.inotify_add_watch(fd, os.fsencode(path), _IN_OPEN)
            if wd < 0:
                os.close(fd)
                self._keys.clear()
                return
            self._keys[wd] = key
        self._fd = fd

    def opened(self) -> set[str]:
        """The keys whose file was opened since the last :meth:`clear` (all of them when
        there is no watch)."""
        if self._fd < 0:
            return set(self._all)
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    break
                raise
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    self._seen |= self._all
                elif wd in self._keys:
                    self._seen.add(self._keys[wd])
        return set(self._seen)

    def clear(self) -> None:
        """Forget what was opened so far (read first: what is queued is forgotten too)."""
        self.opened()
        self._seen.clear()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
