"""CPU-bound work as real jobs do it: parse a device's ``show interfaces`` with TextFSM.

``parse_interfaces`` builds a realistic Cisco IOS ``show interfaces`` output for the host (as a
device would print it, ``interfaces`` of them, deterministic per host) and parses it with the
ntc-templates TextFSM template, as netmiko's ``use_textfsm=True`` does. Parsing is pure Python
and holds the GIL: threads cannot run it in parallel, processes can.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from nornir_bench.core.read_only import read_only
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["parse_interfaces", "show_interfaces_output"]

_INTERFACE = """\
GigabitEthernet0/{n} is {state}, line protocol is {state}
  Hardware is iGbE, address is 5254.00{a:02x}.{b:04x} (bia 5254.00{a:02x}.{b:04x})
  Description: uplink to {host}-peer{n}
  Internet address is 10.{a}.{n}.1/24
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 1/255, rxload 1/255
  Encapsulation ARPA, loopback not set
  Keepalive set (10 sec)
  Full Duplex, 1000Mbps, link type is auto, media type is RJ45
  output flow-control is unsupported, input flow-control is unsupported
  ARP type: ARPA, ARP Timeout 04:00:00
  Last input 00:00:0{n_mod}, output 00:00:00, output hang never
  Last clearing of "show interface" counters never
  Input queue: 0/75/0/0 (size/max/drops/flushes); Total output drops: 0
  Queueing strategy: fifo
  Output queue: 0/40 (size/max)
  5 minute input rate {rate} bits/sec, {pps} packets/sec
  5 minute output rate {rate} bits/sec, {pps} packets/sec
     {packets} packets input, {bytes} bytes, 0 no buffer
     Received {bcast} broadcasts (0 IP multicasts)
     0 runts, 0 giants, 0 throttles
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 watchdog, {mcast} multicast, 0 pause input
     {packets} packets output, {bytes} bytes, 0 underruns
     0 output errors, 0 collisions, 1 interface resets
     0 unknown protocol drops
     0 babbles, 0 late collision, 0 deferred
     0 lost carrier, 0 no carrier, 0 pause output
     0 output buffer failures, 0 output buffers swapped out
"""


def show_interfaces_output(host: str, interfaces: int = 8) -> str:
    """A Cisco IOS ``show interfaces`` output for ``host``, the same for the same host."""
    seed = zlib.crc32(host.encode())
    blocks = []
    for n in range(interfaces):
        value = (seed >> (n % 16)) + n
        blocks.append(
            _INTERFACE.format(
                n=n,
                state="up" if value % 5 else "down",
                a=seed % 250,
                b=(seed + n) % 65535,
                host=host,
                n_mod=n % 10,
                rate=value % 100_000,
                pps=value % 100,
                packets=value % 10_000_000,
                bytes=value % 1_000_000_000,
                bcast=value % 1000,
                mcast=value % 5000,
            )
        )
    return "".join(blocks)


@read_only()
@needs(libraries=["ntc_templates"], install=DEVICES_EXTRA, descriptors=0)
def parse_interfaces(task: Task, interfaces: int = 8) -> list[dict[str, Any]]:
    """Parse this host's ``show interfaces`` with TextFSM (ntc-templates); returns the records.

    Raises:
        MissingLibrary: ntc-templates is not installed (``pip install 'nornir-bench[devices]'``).
    """
    require_libraries(parse_interfaces)
    from ntc_templates.parse import parse_output

    text = show_interfaces_output(task.host.name, interfaces)
    records: list[dict[str, Any]] = parse_output(
        platform="cisco_ios", command="show interfaces", data=text
    )
    return records
