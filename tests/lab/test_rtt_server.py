"""The emulated-RTT server: replies after the delay, in order; ``run_rtt_server`` as a command."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from nornir_bench.lab import LabError, RttServer, rtt_server
from tests.devices import LAB, ROOT, free_port_range, started, stopped
from tests.waiting import HANG_GUARD

SECONDS = (
    "must be a number of seconds from 0 to 3600 (an hour: longer than any device takes to answer)"
)

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


async def timed_lines(port: int, writes: list[bytes], expect: int) -> list[tuple[float, bytes]]:
    """Send ``writes`` at once; each reply line with the seconds since the first write."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        start = time.monotonic()
        for chunk in writes:
            writer.write(chunk)
            await writer.drain()
        replies = []
        for _ in range(expect):
            line = await reader.readline()
            replies.append((time.monotonic() - start, line))
        return replies
    finally:
        writer.close()
        await writer.wait_closed()


def test_each_line_comes_back_after_the_delay_in_order() -> None:
    async def main() -> tuple[list[tuple[float, bytes]], int, int]:
        async with RttServer(delay=0.1) as server:
            # Two lines in one write, one line split over two writes.
            replies = await timed_lines(server.port, [b"one\ntwo\nthr", b"ee\n"], 3)
            return replies, server.stats.requests, server.stats.accepted

    replies, requests, accepted = asyncio.run(main())
    assert [line for _, line in replies] == [b"one\n", b"two\n", b"three\n"]
    assert all(seconds >= 0.1 for seconds, _ in replies)
    assert (requests, accepted) == (3, 1)


def test_jittered_replies_draw_within_the_jitter_and_stay_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The draws alternate between the extremes: 0.09 s, then 0.01 s (which must not overtake).
    draws: list[tuple[float, float]] = []

    def extreme(low: float, high: float) -> float:
        draws.append((low, high))
        return high if len(draws) % 2 else low

    monkeypatch.setattr(rtt_server.random, "uniform", extreme)

    async def main() -> list[tuple[float, bytes]]:
        async with RttServer(delay=0.05, jitter=0.04) as server:
            return await timed_lines(server.port, [b"%d\n" % i for i in range(20)], 20)

    replies = asyncio.run(main())
    assert draws == [(-0.04, 0.04)] * 20  # each line's own delay, from delay ± jitter
    assert [line for _, line in replies] == [b"%d\n" % i for i in range(20)]
    assert all(seconds >= 0.09 for seconds, _ in replies)  # none before the first's 0.09 s


def test_counts_connections_at_once_and_drops_them_on_close() -> None:
    async def main() -> tuple[int, int, int]:
        server = RttServer(delay=30)
        await server.start()
        streams = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(50)]
        for _, writer in streams:
            writer.write(b"ping\n")
        while server.stats.requests < 50:
            await asyncio.sleep(0.01)
        peak = server.stats.peak_connections
        await server.aclose()  # replies still due in 30 s: dropped, not awaited
        eofs = sum([await reader.read() == b"" for reader, _ in streams])
        for _, writer in streams:
            writer.close()
        return peak, eofs, server.stats.connections

    assert asyncio.run(asyncio.wait_for(main(), HANG_GUARD)) == (50, 50, 0)


def test_listens_on_consecutive_ports() -> None:
    first = free_port_range(3)

    async def main() -> list[bytes]:
        async with RttServer(port=first, ports=3, delay=0) as server:
            assert server.where == f"127.0.0.1:{first}-{first + 2}"
            return [
                line
                for p in range(first, first + 3)
                for _, line in await timed_lines(p, [b"x\n"], 1)
            ]

    assert asyncio.run(main()) == [b"x\n"] * 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"delay": -1}, f"delay {SECONDS}, got -1"),
        ({"delay": float("inf")}, f"delay {SECONDS}, got inf"),
        ({"jitter": "0.1"}, f"jitter {SECONDS}, got '0.1'"),
        ({"port": 70000}, "port must be a whole number from 0 to 65535, got 70000"),
        ({"ports": 0}, "ports must be a whole number >= 1, got 0"),
        ({"ports": 4}, "4 ports need a first port from 1 to 65532, got 0"),
        ({"backlog": 0}, "backlog must be a whole number >= 1, got 0"),
    ],
)
def test_options_are_checked_when_built(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(LabError, match=re.escape(message)):
        RttServer(**kwargs)  # type: ignore[arg-type]


def test_port_in_use_is_one_line() -> None:
    async def main(port: int) -> None:
        async with RttServer(port=port):
            pass

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(LabError, match=f"cannot listen on 127.0.0.1:{port}: "):
            asyncio.run(main(port))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_rtt_server_serves_until_signalled(tmp_path: Path, sig: int) -> None:
    port = free_port_range(1)
    server = started(
        [*LAB, "rtt-server", "--port", str(port), "--delay", "0.02"], "rtt server ready:", tmp_path
    )
    try:
        match = re.match(r"rtt server ready: ([\d.]+):(\d+) \(delay 20 ms", server.ready)
        assert match and match.groups() == ("127.0.0.1", str(port))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"ping\n")
            assert sock.makefile("rb").readline() == b"ping\n"
    finally:
        status = stopped(server, sig)
    assert status == 0
    assert server.stdout[-1] == "rtt server stopped: 1 connection, 1 request, at most 1 at once"
    assert "Traceback" not in server.stderr()


def test_run_rtt_server_bad_input_exits_2() -> None:
    done = subprocess.run(
        [*LAB, "rtt-server", "--delay", "-1"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "nornir-bench: error: "
        f"rtt server: delay {SECONDS}, got -1.0"
    )


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_a_non_loopback_address_is_refused_unless_told(address: str) -> None:
    # 0.0.0.0 would listen on every interface, though the lab listens on loopback only.
    done = subprocess.run(
        [*LAB, "rtt-server", "--address", address],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"nornir-bench: error: rtt server: address {address!r} is not a loopback address: it "
        "listens on 127.x.x.x, localhost or ::1 unless told to listen elsewhere (--any-address)"
    )
    RttServer(address, any_address=True)  # told: taken (not started: tests stay on loopback)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.3.2.1", "localhost", "::1"])
def test_a_loopback_address_is_taken(address: str) -> None:
    assert RttServer(address).address == address
