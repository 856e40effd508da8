"""What a runner keeps from one run to the next (the asyncio runner's event loop, processpool's
worker processes, dask's cluster), handed to one run at a time, and closed once.

nornir keeps connections between runs until ``nr.close_connections()``; a connection that
lives on something the runner owns (an asyncssh session on its loop, a session in a worker
process) keeps that thing alive too. One rule for the three, whatever the thing:

- A run takes the kept one, exclusively. A run started while another has it (``nr.run`` from
  two threads at once on one runner) gets a private one, made for it and closed as it ends,
  with whatever connections its hosts opened on it: both runs go on at once, neither waits
  for the other, neither sees the other's hosts in flight.
- After its run the kept one is given back: kept if the runner keeps it (its hosts hold
  connections on it, processpool's ``keep_workers``, dask's cluster for the runner's life),
  else closed.
- It is closed by the runner's ``close()`` (and so at the end of ``with runner:``), when the
  runner is garbage-collected, and at interpreter exit; processpool's and the asyncio
  runner's also when ``nr.close_connections()`` leaves nothing held on them. A close while a
  run has it is done as that run gives it back.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Generic, Protocol, TypeVar

__all__ = ["Keeper", "Keeping"]


class Closable(Protocol):
    def close(self) -> None: ...


K = TypeVar("K", bound=Closable)
R = TypeVar("R", bound="Keeping")


class Keeper(Generic[K]):
    """Hands ``kept`` to one run at a time, a private one to any other (see the module).

    The runner holds the keeper; the keeper does not hold the runner, so the finalizer below
    (which holds the keeper) lets the runner be collected, and then closes what it kept.

    Args:
        owner: the runner; when it is garbage-collected (or at interpreter exit), ``kept`` is
            closed.
        kept: what the runner keeps between runs; closing it lets go of what it holds (it
            opens again at its next use).
        private: makes one for a run that finds ``kept`` taken; must not hold the runner.
    """

    def __init__(self, owner: object, kept: K, private: Callable[[], K]) -> None:
        self.kept = kept
        self._private = private
        self._lock = threading.Lock()
        self._taken = False
        self._close_when_back = False  # closed while a run had it
        weakref.finalize(owner, self.close)  # also called at interpreter exit

    def take(self) -> tuple[K, bool]:
        """For a run: the kept one, or a private one while another run has it; and whether it
        is the kept one."""
        with self._lock:
            if not self._taken:
                self._taken = True
                return self.kept, True
        return self._private(), False

    def give_back(self, taken: K, *, keep: bool = True) -> None:
        """After a run: ``taken`` kept for the next if ``keep`` (and no close came meanwhile),
        else closed; a private one is always closed."""
        if taken is not self.kept:
            taken.close()
            return
        with self._lock:
            if keep and not self._close_when_back:
                self._taken = False
                return
            self._close_when_back = False
        self._close_taken()

    @contextmanager
    def using(self) -> Iterator[K]:
        """The kept one (or a private one) for a run, given back (kept) as it ends."""
        taken, _ = self.take()
        try:
            yield taken
        finally:
            self.give_back(taken)

    @contextmanager
    def idle(self) -> Iterator[K | None]:
        """The kept one, taken for the block, when no run has it (between runs: to close
        connections held on it and wait for them); ``None`` while a run has it."""
        with self._lock:
            if self._taken:
                free = False
            else:
                free = self._taken = True
        if not free:
            yield None
            return
        try:
            yield self.kept
        finally:
            self.give_back(self.kept)

    def close(self) -> None:
        """Close the kept one now, or as the run that has it gives it back."""
        with self._lock:
            if self._taken:
                self._close_when_back = True
                return
            self._taken = True
        self._close_taken()

    def _close_taken(self) -> None:
        """Close the kept one, taken meanwhile (a run starting now gets a private one)."""
        try:
            self.kept.close()
        finally:
            with self._lock:
                self._taken = False


class Keeping:
    """A runner that keeps something between runs, as a context manager: ``with
    ProcessPoolRunner() as runner:`` closes it at the block's end, as
    ``concurrent.futures.ThreadPoolExecutor`` shuts down its threads."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: R) -> R:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
