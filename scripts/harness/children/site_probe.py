"""What a site sees from inside its network namespace (scripts/bench_sites.py), run there with
``ip netns exec``. The spec: ``{"reach": [ADDRESS, PORT]}``: exit 0 if a TCP connection opens
within 2 s, else 1; or ``{"workers": SCHEDULER}``: the Dask scheduler's workers (by address)
and the resources each has, as a JSON line."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any


def probe(spec: dict[str, Any]) -> int:
    if "reach" in spec:
        address, port = spec["reach"]
        try:
            socket.create_connection((address, port), 2).close()
        except OSError:
            return 1
        return 0
    from distributed import Client

    from nornir_bench.runners.dask.address import described_workers

    with Client(spec["workers"], timeout=10) as client:  # type: ignore[no-untyped-call]
        workers = described_workers(client)
        print(json.dumps({address: sorted(info.get("resources") or {})
                          for address, info in workers.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(probe(json.loads(sys.argv[1])))
