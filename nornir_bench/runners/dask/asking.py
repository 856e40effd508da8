"""Asking a Dask cluster's workers something (``Client.run``, ``Client.scatter``) from the
runner's thread, within a bounded time, and without a Ctrl-C cancelling the question
half-asked."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["RUN_ON_WORKERS_SECONDS", "on_client_loop", "run_on_workers", "scatter_to", "send_run"]

T = TypeVar("T")

RUN_ON_WORKERS_SECONDS = 30.0
"""How long asking workers something through ``Client.run`` may take at most: a worker that
does not answer (stopped, its loop frozen) must not hold the run, nor its closing."""


def run_on_workers(
    client: Client,
    function: Callable[..., Any],
    *args: Any,
    workers: list[str] | None = None,
    wait: bool = True,
    timeout: float = RUN_ON_WORKERS_SECONDS,
) -> dict[str, Any]:
    """``client.run`` within ``timeout`` seconds (``TimeoutError`` past them): even with
    ``wait=False`` Dask waits for each worker to take the call, and one never does."""
    answer = on_client_loop(
        client, lambda: client._run(function, *args, workers=workers, wait=wait), timeout
    )
    return answer or {}


def scatter_to(
    client: Client, data: Any, workers: list[str], timeout: float = RUN_ON_WORKERS_SECONDS
) -> Future[Any]:
    """``data`` on each of ``workers`` (Dask's broadcast: one gets it, the others copy it from
    one another), within ``timeout`` seconds (``TimeoutError`` past them: a worker that cannot
    reach the others waits for the copy without end)."""
    return on_client_loop(
        client,
        lambda: client._scatter(data, workers=workers, broadcast=True, hash=False),
        timeout,
    )


def send_run(
    client: Client, payload: Any, workers: Mapping[str, frozenset[str]], *, sited: bool
) -> dict[str, Future[Any]]:
    """The run ``payload`` on every worker, once, by worker: Dask's broadcast, in which workers
    copy it from one another; with sites, one broadcast for the workers of each (a worker
    cannot reach another site's).

    Raises:
        DaskClusterError: it did not reach them all within a bounded time.
    """
    from nornir_bench.runners.dask.address import DaskClusterError

    groups: dict[frozenset[str], list[str]] = {}
    for worker, serves in workers.items():
        groups.setdefault(serves if sited else frozenset(), []).append(worker)
    payloads = {}
    for members in groups.values():
        try:
            sent = scatter_to(client, payload, members)
        except TimeoutError:
            raise DaskClusterError(
                f"dask runner: the run did not reach the workers {', '.join(members)} within "
                f"{RUN_ON_WORKERS_SECONDS:g} s: each worker copies it from another, and one "
                "cannot reach the others (workers at other sites need their site, as a "
                "resource 'site:NAME')"
            ) from None
        payloads.update(dict.fromkeys(members, sent))
    return payloads


def on_client_loop(client: Client, make: Callable[[], Awaitable[T]], timeout: float) -> T:
    """What the coroutine ``make()`` gives, run on the client's loop within ``timeout``
    seconds (``TimeoutError`` past them).

    A ``KeyboardInterrupt`` while waiting (a second Ctrl-C) leaves the call going on the
    client's loop, to its end within ``timeout``: ``client.sync`` would cancel it, and one
    cancelled before it began never runs (``Client._run``: the workers are not told; Python
    warns of a coroutine never awaited)."""
    loop = client.loop
    if loop is None or loop.asyncio_loop.is_closed():  # type: ignore[attr-defined]
        raise RuntimeError("the Dask client's loop is closed")
    answer: concurrent.futures.Future[T] = concurrent.futures.Future()

    async def ask() -> None:
        try:
            answer.set_result(await asyncio.wait_for(make(), timeout))
        except BaseException as exc:  # noqa: BLE001 - the caller's to raise
            answer.set_exception(exc)

    def start() -> None:  # the coroutine made where it runs: nothing can cancel it first
        task = asyncio.ensure_future(ask())
        _ASKING.add(task)
        task.add_done_callback(_ASKING.discard)

    loop.add_callback(start)
    return answer.result(timeout + ANSWER_GRACE_SECONDS)


ANSWER_GRACE_SECONDS = 5.0
"""How much longer than its ``timeout`` :func:`run_on_workers` waits for the client's loop to
say how the call ended (a loop too busy to start it at all)."""

_ASKING: set[asyncio.Future[None]] = set()
"""The calls of :func:`run_on_workers` under way: the loop keeps only weak references to its
tasks."""
