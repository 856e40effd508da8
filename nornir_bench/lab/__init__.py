"""A local device lab: emulated SSH devices (FakeNOS) and the emulated-RTT TCP server.

- :mod:`~nornir_bench.lab.devices`: which devices to emulate, from a nornir SimpleInventory or
  generated, and the inventory that reaches them;
- :mod:`~nornir_bench.lab.emulator`: :class:`DeviceLab` starts and stops them, :func:`run_lab`
  is ``nornir-bench lab``;
- :mod:`~nornir_bench.lab.ready`: :func:`wait_for_lab`, ``nornir-bench wait-lab``, for a lab
  started in the background;
- :mod:`~nornir_bench.lab.rtt_server`: :class:`RttServer`, thousands of connections answered
  after a set delay; :mod:`~nornir_bench.lab.rtt_command`: :func:`run_rtt_server`,
  ``nornir-bench rtt-server``;
- :mod:`~nornir_bench.cli.lab`: their command-line options and commands (``nornir-bench lab``,
  ``wait-lab``, ``rtt-server``).

FakeNOS is optional (``pip install 'nornir-bench[lab]'``): it is imported only when a lab
starts, so the RTT server and the inventory helpers work without it.
"""

from nornir_bench.lab._errors import LabError
from nornir_bench.lab.devices import (
    DEFAULT_BASE_PORT,
    DEFAULT_PLATFORMS,
    LabDevice,
    fakenos_platforms,
    generate_lab_devices,
    load_lab_devices,
    render_inventory,
    write_inventory,
    write_known_hosts,
)
from nornir_bench.lab.emulator import DeviceLab, lab_devices, run_lab
from nornir_bench.lab.ready import LabNotReady, wait_for_lab
from nornir_bench.lab.rtt_command import raise_open_file_limit, run_rtt_server
from nornir_bench.lab.rtt_server import RttServer, RttServerStats

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_PLATFORMS",
    "DeviceLab",
    "LabDevice",
    "LabError",
    "LabNotReady",
    "RttServer",
    "RttServerStats",
    "fakenos_platforms",
    "generate_lab_devices",
    "lab_devices",
    "load_lab_devices",
    "raise_open_file_limit",
    "render_inventory",
    "run_lab",
    "run_rtt_server",
    "wait_for_lab",
    "write_inventory",
    "write_known_hosts",
]
