"""A local device lab: emulated SSH devices (FakeNOS), real routers (FRR behind OpenSSH) and
the emulated-RTT TCP server, each started and stopped from Python as from the command line.

- :mod:`~nornir_bench.lab.labs`: :func:`router_lab`, :func:`throttling_lab` and
  :func:`bastion_lab`, router labs as context managers, each yielding a
  :class:`RunningRouterLab` (:mod:`~nornir_bench.lab.running`): its inventory, a Nornir on
  it, its routers driven as root, its logins counted, its baseline put back
  (:meth:`RunningRouterLab.restore`); :meth:`RunningRouterLab.attach` drives a lab another
  process runs;
- :func:`~nornir_bench.lab.labs.netconf_lab`: NETCONF servers (yuma123's netconfd, each in
  a namespace of its own) behind OpenSSH's ``netconf`` subsystem, yielding a
  :class:`RunningNetconfLab` (:mod:`~nornir_bench.lab.netconf_running`);
- :mod:`~nornir_bench.lab.device_process`: :func:`device_lab`, FakeNOS devices served by a
  process of their own; :mod:`~nornir_bench.lab.emulator`: :class:`DeviceLab`, the same in
  this process, and :func:`run_lab`, ``nornir-bench lab``;
- :mod:`~nornir_bench.lab.devices`: which devices to emulate, from a nornir SimpleInventory or
  generated; :mod:`~nornir_bench.lab.inventory_files`: the inventory that reaches them;
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
from nornir_bench.lab.baseline import LabNotRestored
from nornir_bench.lab.device_process import DeviceLabProcess, device_lab
from nornir_bench.lab.devices import (
    DEFAULT_BASE_PORT,
    DEFAULT_PLATFORMS,
    LabDevice,
    fakenos_platforms,
    generate_lab_devices,
    load_lab_devices,
)
from nornir_bench.lab.emulator import DeviceLab, lab_devices, run_lab
from nornir_bench.lab.inventories import nornir_on
from nornir_bench.lab.inventory_files import render_inventory, write_inventory, write_known_hosts
from nornir_bench.lab.labs import (
    bastion_lab,
    netconf_lab,
    new_lab_name,
    router_lab,
    throttling_lab,
)
from nornir_bench.lab.netconf import NetconfLab
from nornir_bench.lab.netconf_ready import NetconfNotReady
from nornir_bench.lab.netconf_running import RunningNetconfLab
from nornir_bench.lab.ready import LabNotReady, wait_for_lab
from nornir_bench.lab.router_ready import RouterNotReady
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.rtt_command import raise_open_file_limit, run_rtt_server
from nornir_bench.lab.rtt_server import RttServer, RttServerStats
from nornir_bench.lab.running import RunningRouterLab, lab_pids, live_lab_namespaces

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_PLATFORMS",
    "DeviceLab",
    "DeviceLabProcess",
    "LabDevice",
    "LabError",
    "LabNotReady",
    "LabNotRestored",
    "NetconfLab",
    "NetconfNotReady",
    "RouterLab",
    "RouterNotReady",
    "RttServer",
    "RttServerStats",
    "RunningNetconfLab",
    "RunningRouterLab",
    "bastion_lab",
    "device_lab",
    "fakenos_platforms",
    "generate_lab_devices",
    "lab_devices",
    "lab_pids",
    "live_lab_namespaces",
    "load_lab_devices",
    "netconf_lab",
    "new_lab_name",
    "nornir_on",
    "raise_open_file_limit",
    "render_inventory",
    "router_lab",
    "run_lab",
    "run_rtt_server",
    "throttling_lab",
    "wait_for_lab",
    "write_inventory",
    "write_known_hosts",
]
