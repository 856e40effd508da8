"""The new SSH host keys ``host_key_checking: accept-new`` recorded for the user: each logged,
and a run's counted for the one line that says so.

A trust decision made for the user is told where they look: each key in the log (nornir-bench's
logger, which a job's log holds), and once a run on the terminal (a job counts them in an
:func:`accepted_keys` block). Keys accepted in a run's worker process (processpool, dask) come
back with its hosts' results, and are noted again in the parent (:func:`note_accepted`), where
the job's log and the run's count are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

__all__ = ["AcceptedKey", "AcceptedKeys", "accepted_keys", "note_accepted"]

logger = logging.getLogger(__name__)


class AcceptedKey(NamedTuple):
    """A new host's key, recorded."""

    name: str
    """The inventory host (or ``jump host ADDRESS``) whose login met it."""
    where: str
    """The address that showed it (``hostname:port``)."""
    key_type: str
    fingerprint: str
    recorded_in: str
    """The known-hosts file it was appended to."""

    def said(self) -> str:
        return (f"{self.name}: accepted the new SSH host key of {self.where} ({self.key_type} "
                f"{self.fingerprint}), recorded in {self.recorded_in}")


class AcceptedKeys:
    """The keys noted in this process while an :func:`accepted_keys` block ran, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: list[AcceptedKey] = []

    def add(self, key: AcceptedKey) -> None:
        with self._lock:
            self._keys.append(key)

    def take(self) -> tuple[AcceptedKey, ...]:
        """The keys noted since the last take (a worker sends them with its next host)."""
        if not self._keys:  # nearly always, once a host: a key noted meanwhile goes next time
            return ()
        with self._lock:
            taken, self._keys = tuple(self._keys), []
        return taken

    @property
    def keys(self) -> tuple[AcceptedKey, ...]:
        with self._lock:
            return tuple(self._keys)


_BLOCKS: list[AcceptedKeys] = []  # the accepted_keys blocks under way in this process
_BLOCKS_LOCK = threading.Lock()


@contextmanager
def accepted_keys() -> Iterator[AcceptedKeys]:
    """The keys noted in this process while the block runs (blocks may nest, or overlap
    across threads: each gets every key)."""
    keys = AcceptedKeys()
    with _BLOCKS_LOCK:
        _BLOCKS.append(keys)
    try:
        yield keys
    finally:
        with _BLOCKS_LOCK:
            _BLOCKS.remove(keys)


def note_accepted(key: AcceptedKey) -> None:
    """``key`` was recorded: logged (one line a key: a run of 10,000 new hosts would drown the
    terminal in them), and kept by every :func:`accepted_keys` block under way."""
    logger.info("%s", key.said())
    with _BLOCKS_LOCK:
        blocks = tuple(_BLOCKS)
    for keys in blocks:
        keys.add(key)
