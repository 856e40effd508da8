"""Logins to a router lab, one client in this fresh process (scripts/bench_routers.py
--logins): a warm-up login, then ``count`` logins ``at_once`` at a time over the routers' ports
in turn, by netmiko (a thread a login in flight) or scrapli (asyncssh, a coroutine each). The
spec ``{"client", "ports", "user", "password", "count", "at_once"}``; printed: logins ok and
failed, the wall, this process's user and sys CPU, failures by type with a sample."""

from __future__ import annotations

import asyncio
import resource
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.child import child_main

LOGIN_SECONDS = 20.0  # one login, either client


def netmiko_login(port: int, user: str, password: str) -> None:
    from netmiko import ConnectHandler

    connection = ConnectHandler(device_type="cisco_ios", host="127.0.0.1", port=port,
                                username=user, password=password, conn_timeout=LOGIN_SECONDS,
                                auth_timeout=LOGIN_SECONDS, banner_timeout=LOGIN_SECONDS)
    connection.disconnect()


def scrapli_driver(port: int, user: str, password: str) -> Any:
    """scrapli's IOS-XE driver over asyncssh for a router of the lab (not opened)."""
    from scrapli.driver.core import AsyncIOSXEDriver

    return AsyncIOSXEDriver("127.0.0.1", port=port, auth_username=user, auth_password=password,
                            auth_strict_key=False, transport="asyncssh",
                            timeout_socket=LOGIN_SECONDS, timeout_transport=LOGIN_SECONDS,
                            timeout_ops=LOGIN_SECONDS)


async def scrapli_login(port: int, user: str, password: str) -> None:
    driver = scrapli_driver(port, user, password)
    await driver.open()
    await driver.close()


def logins(spec: dict[str, Any]) -> dict[str, Any]:
    ports, count, at_once = spec["ports"], spec["count"], spec["at_once"]
    user, password = spec["user"], spec["password"]
    failures: Counter[str] = Counter()
    samples: dict[str, str] = {}

    def note(exc: BaseException) -> None:
        kind = type(exc).__name__
        failures[kind] += 1
        samples.setdefault(kind, str(exc)[:300])

    if spec["client"] == "netmiko":
        netmiko_login(ports[0], user, password)  # imports, and the first login's costs
        before = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()

        def one(k: int) -> None:
            try:
                netmiko_login(ports[k % len(ports)], user, password)
            except Exception as exc:  # noqa: BLE001 - counted by type
                note(exc)

        with ThreadPoolExecutor(at_once) as pool:
            list(pool.map(one, range(count)))
    else:
        async def run() -> None:
            gate = asyncio.Semaphore(at_once)

            async def one(k: int) -> None:
                async with gate:
                    try:
                        await asyncio.wait_for(scrapli_login(ports[k % len(ports)], user,
                                                             password), LOGIN_SECONDS)
                    except Exception as exc:  # noqa: BLE001 - counted by type
                        note(exc)

            await asyncio.gather(*(one(k) for k in range(count)))

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(asyncio.wait_for(scrapli_login(ports[0], user, password),
                                                     LOGIN_SECONDS))
            before = resource.getrusage(resource.RUSAGE_SELF)
            began = time.perf_counter()
            loop.run_until_complete(run())
        finally:
            loop.close()
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    failed = sum(failures.values())
    return {"ok": count - failed, "failed": failed, "wall": wall,
            "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
            "failures": {k: {"count": n, "sample": samples[k]} for k, n in failures.items()}}


if __name__ == "__main__":
    child_main(logins)
