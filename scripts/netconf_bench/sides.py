"""What the sides of scripts/bench_netconf.py share: a side's runs (:class:`Side`), how many
hosts work at once, scrapli-netconf's hosts on one loop (:func:`scrapli_rounds`, with its
pause after ``open()``), and the package's tasks timed a run at a time
(:func:`nornir_rounds`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import harness

__all__ = ["AT_ONCE", "HELLO_PAUSE", "Side", "cycle", "nornir_rounds", "scrapli_rounds"]

AT_ONCE = 10
HELLO_PAUSE = 0.2  # netconfd never answers a request it reads with the client's hello


class Side:
    """One client: its runs' wall times, CPU and the times of one operation once logged in."""

    def __init__(self, name: str, run: Callable[[], list[float]]) -> None:
        self.name, self.run = name, run
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.times: list[float] = []

    def __call__(self) -> None:
        with harness.Stopwatch() as took:
            times = self.run()
        self.walls.append(took.wall)
        self.cpus.append(took.cpu)
        self.times.extend(times)


def nornir_rounds(lab: Any, runner: str, rounds: int, task: Callable[..., Any],
                  params: Callable[[int], dict[str, Any]]) -> list[float]:
    """``task`` run ``rounds`` + 1 times on the lab's hosts (``params(round)``), in one
    Nornir: the first run logs in, the others are timed, each host's time the run's over the
    hosts at once."""
    took: list[float] = []
    with lab.nornir(runner, num_workers=AT_ONCE) as nr:
        for round_ in range(rounds + 1):
            began = time.perf_counter()
            result = nr.run(task=task, **params(round_))
            if result.failed:
                raise SystemExit(f"bench_netconf: {task.__name__} failed: "
                                 f"{next(iter(result.failed_hosts.values()))[0].exception}")
            if round_:
                took += [(time.perf_counter() - began) * min(AT_ONCE, len(result))
                         / len(result)] * len(result)
    return took


def cycle(servers: Any) -> Iterator[Any]:
    """The lab's servers in turn, without end (hosts spread over them as the inventory does)."""
    while True:
        yield from servers


def scrapli_rounds(lab: Any, ports: list[int], rounds: int, timeout: float,
                   one: Callable[[Any, int], Awaitable[None]]) -> list[float]:
    """Each port's host logged in with scrapli-netconf over asyncssh (``AT_ONCE`` at once, on
    one event loop), then ``rounds`` of ``one(driver, port)``: each round's time."""
    from scrapli_netconf.driver import AsyncNetconfDriver

    async def host(port: int, places: asyncio.Semaphore) -> list[float]:
        async with places:
            driver = AsyncNetconfDriver(
                host="127.0.0.1", port=port, auth_username=lab.user, auth_password=lab.password,
                auth_strict_key=False, transport="asyncssh", timeout_ops=timeout)
            await driver.open()
            took = []
            try:
                await asyncio.sleep(HELLO_PAUSE)
                for _ in range(rounds):
                    began = time.perf_counter()
                    await one(driver, port)
                    took.append(time.perf_counter() - began)
            finally:
                await driver.close()
            return took

    async def hosts() -> list[list[float]]:
        places = asyncio.Semaphore(AT_ONCE)
        return await asyncio.gather(*(host(port, places) for port in ports))

    return [t for each in asyncio.run(hosts()) for t in each]
