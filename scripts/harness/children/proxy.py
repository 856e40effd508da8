"""A TCP proxy on loopback: a listener in front of each target port (the spec, a JSON list),
counting the connections it accepts. It prints its ports as a JSON list, then, for each line it
reads, the connections accepted so far; it ends at the end of its input."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def serve(targets: list[int]) -> None:
    accepted = 0

    def serving(target: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                         Awaitable[None]]:
        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal accepted
            accepted += 1
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        return one

    servers = [await asyncio.start_server(serving(t), "127.0.0.1", 0) for t in targets]
    print(json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, sys.stdin.readline):  # a line: how many so far
        print(accepted, flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(serve(json.loads(sys.argv[1])))
    except (KeyboardInterrupt, RuntimeError):  # stopped by the benchmark, maybe as it ended
        pass  # (a SIGINT while asyncio.run closes: "Event loop stopped before Future completed")
