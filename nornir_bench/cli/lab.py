"""The lab's command-line options and commands, for any argparse front end.

``nornir-bench lab`` / ``nornir-bench wait-lab`` / ``nornir-bench rtt-server`` (also
``python -m nornir_bench ...``) build their sub-commands from these functions, so the options
are declared once. The commands raise :class:`~nornir_bench.lab.LabError` for bad input; the
front end prints it and exits 2. The lab is imported when a command's options are declared,
not with this module: ``nornir-bench --help`` needs only the help lines.
"""

from __future__ import annotations

import argparse
import sys

__all__ = [
    "add_lab_arguments",
    "add_rtt_server_arguments",
    "add_wait_lab_arguments",
    "lab_command",
    "rtt_server_command",
    "wait_lab_command",
]

LAB_HELP = (
    "run emulated SSH devices (FakeNOS), real FRR routers (--routers, as root), or NETCONF "
    "servers (--netconf, as root) on loopback until Ctrl-C"
)
WAIT_LAB_HELP = (
    "wait until every device of a lab (started with `nornir-bench lab ... &`) accepts "
    "connections (with --routers: logins, and BGP established; with --netconf: NETCONF "
    "sessions answered)"
)
RTT_SERVER_HELP = "run the emulated-RTT device: echoes each request line after a delay"


def add_lab_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ``lab`` command: an inventory to emulate, or a lab to generate."""
    generated = _add_lab_description(parser)
    generated.add_argument(
        "--write",
        metavar="DIR",
        help="write the lab's nornir SimpleInventory to DIR (FakeNOS: user / fakenos-lab; "
        "routers: the lab's own user and a generated password, written nowhere else)",
    )
    routers = _add_router_arguments(parser)
    from nornir_bench.lab.topology import TOPOLOGIES

    routers.add_argument(
        "--topology",
        choices=TOPOLOGIES,
        default="chain",
        help="how the routers are linked, eBGP on each link (default chain)",
    )
    routers.add_argument(
        "--hosts",
        type=int,
        metavar="M",
        help="with --write: M inventory hosts h1..hM spread over the routers' ports (default "
        "one host per router, named after it)",
    )
    routers.add_argument(
        "--max-startups",
        metavar="SPEC",
        help="the SSH server's MaxStartups (default OpenSSH's, 10:30:100: it drops logins "
        "beyond 10 at once, as real devices do)",
    )
    routers.add_argument(
        "--bastion",
        action="store_true",
        help="the routers' SSH server listens only inside a namespace of the lab's own; an "
        "OpenSSH bastion on 127.0.0.1 is the only way in (the inventory's jump_host)",
    )
    _add_netconf_argument(parser, "; --write and --hosts as for routers")


def _add_netconf_argument(parser: argparse.ArgumentParser, more: str = "") -> None:
    """--netconf: shared by ``lab`` and ``wait-lab``."""
    netconf = parser.add_argument_group(
        "NETCONF servers (root; apt-get install -y netconfd openssh-server)"
    )
    netconf.add_argument(
        "--netconf",
        type=int,
        metavar="N",
        help="N NETCONF servers (yuma123 netconfd: candidate, validate, confirmed commit; "
        "ietf-interfaces, ietf-ip, ietf-system), each in a network namespace of its own, "
        "behind one OpenSSH server on 127.0.0.1 (a port each, from --port, default 2830; "
        f"--name default netconf){more}",
    )


def _add_router_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """--routers and --name: shared by ``lab`` and ``wait-lab``."""
    from nornir_bench.lab.topology import DEFAULT_LAB_NAME

    routers = parser.add_argument_group(
        "real routers (root; apt-get install -y frr openssh-server)"
    )
    routers.add_argument(
        "--routers",
        type=int,
        metavar="N",
        help="N FRR routers, each in a network namespace of its own, behind one OpenSSH "
        "server on 127.0.0.1 (a port each, from --port, default 2201)",
    )
    routers.add_argument(
        "--name",
        help=f"the router lab's name: its namespaces are nb-NAME-rK (default {DEFAULT_LAB_NAME})",
    )
    return routers


def _add_lab_description(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """INVENTORY, or the options of a generated lab: shared by ``lab`` and ``wait-lab``."""
    from nornir_bench.lab.devices import DEFAULT_BASE_PORT, DEFAULT_PLATFORMS
    from nornir_bench.lab.emulator import DEFAULT_LAB_SIZE

    parser.add_argument(
        "inventory",
        nargs="?",
        metavar="INVENTORY",
        help="a nornir SimpleInventory directory (hosts.yaml, groups.yaml, defaults.yaml) or "
        "hosts file whose hosts to emulate, e.g. inventory/lab; without it, a lab is generated",
    )
    generated = parser.add_argument_group("a generated lab (without INVENTORY)")
    generated.add_argument(
        "--count", type=int, metavar="N", help=f"how many devices (default {DEFAULT_LAB_SIZE})"
    )
    generated.add_argument(
        "--platform",
        dest="platforms",
        nargs="+",
        action="extend",
        metavar="P",
        help=f"FakeNOS platforms, given in turn (default {' '.join(DEFAULT_PLATFORMS)})",
    )
    generated.add_argument(
        "--port",
        type=int,
        metavar="BASE",
        help=f"the first device's port; the others follow (default {DEFAULT_BASE_PORT})",
    )
    return generated


def lab_command(args: argparse.Namespace) -> int:
    """Run the lab described by ``args`` until signalled; the exit status (0)."""
    if args.netconf is not None:
        from nornir_bench.lab import LabError
        from nornir_bench.lab.netconf_command import run_netconf_lab

        if (args.inventory is not None or args.count is not None or args.platforms
                or args.routers is not None or args.max_startups is not None or args.bastion
                or args.topology != "chain"):
            raise LabError(
                "--netconf makes a lab of NETCONF servers: leave out INVENTORY, --count, "
                "--platform, --routers, --topology, --max-startups and --bastion"
            )
        run_netconf_lab(args.netconf, port=args.port, name=args.name, write=args.write,
                        hosts=args.hosts)
        return 0
    if args.routers is not None:
        from nornir_bench.lab import LabError
        from nornir_bench.lab.router_command import run_router_lab

        if args.inventory is not None or args.count is not None or args.platforms:
            raise LabError(
                "--routers makes a lab of FRR routers: leave out INVENTORY, --count and --platform"
            )
        run_router_lab(
            args.routers,
            topology=args.topology,
            port=args.port,
            name=args.name,
            write=args.write,
            hosts=args.hosts,
            max_startups=args.max_startups,
            bastion=args.bastion,
        )
        return 0
    from nornir_bench.lab.emulator import run_lab

    if args.hosts is not None or args.max_startups is not None or args.bastion:
        from nornir_bench.lab import LabError

        raise LabError(
            "--hosts, --max-startups and --bastion are options of a router lab (--routers N)"
        )
    run_lab(
        args.inventory,
        count=args.count,
        platforms=args.platforms,
        port=args.port,
        write=args.write,
    )
    return 0


def add_wait_lab_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ``wait-lab`` command: the lab as ``lab`` was given it, a timeout."""
    from nornir_bench.lab.ready import DEFAULT_WAIT_TIMEOUT

    _add_lab_description(parser)
    _add_router_arguments(parser)
    _add_netconf_argument(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_WAIT_TIMEOUT,
        metavar="S",
        help=f"give up after S seconds, exit status 1 (default {DEFAULT_WAIT_TIMEOUT:g})",
    )


def wait_lab_command(args: argparse.Namespace) -> int:
    """Wait for the lab described by ``args``; 0 once ready, 1 when it is not in time."""
    from nornir_bench.lab.ready import LabNotReady

    if args.netconf is not None:
        from nornir_bench.lab.netconf_plan import DEFAULT_NETCONF_LAB_NAME
        from nornir_bench.lab.netconf_ready import wait_for_named_netconf_lab

        try:
            servers = wait_for_named_netconf_lab(args.name or DEFAULT_NETCONF_LAB_NAME,
                                                 args.timeout)
        except LabNotReady as exc:
            print(f"nornir-bench: {exc}", file=sys.stderr)
            return 1
        print(f"lab ready: {servers} NETCONF servers answer NETCONF over SSH")
        return 0
    if args.routers is not None:
        from nornir_bench.lab.router_ready import wait_for_named_lab
        from nornir_bench.lab.topology import DEFAULT_LAB_NAME

        try:
            plan = wait_for_named_lab(args.name or DEFAULT_LAB_NAME, args.timeout)
        except LabNotReady as exc:
            print(f"nornir-bench: {exc}", file=sys.stderr)
            return 1
        print(f"lab ready: {len(plan.routers)} FRR routers accept logins, BGP established")
        return 0
    from nornir_bench.lab.emulator import lab_devices
    from nornir_bench.lab.ready import wait_for_lab

    devices = lab_devices(
        args.inventory, count=args.count, platforms=args.platforms, port=args.port
    )
    try:
        wait_for_lab(devices, args.timeout)
    except LabNotReady as exc:  # not bad input (exit 2): the lab did not come up in time
        print(f"nornir-bench: {exc}", file=sys.stderr)
        return 1
    print(f"lab ready: {len(devices)} devices accept connections")
    return 0


def add_rtt_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ``rtt-server`` command."""
    from nornir_bench.lab.rtt_command import DEFAULT_RTT_PORT

    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="listen address (default 127.0.0.1): loopback only (127.x.x.x, localhost, ::1) "
        "unless --any-address",
    )
    parser.add_argument(
        "--any-address",
        action="store_true",
        help="let --address be any address, 0.0.0.0 included: anyone on the network can then "
        "reach the server",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_RTT_PORT,
        help=f"listen port (default {DEFAULT_RTT_PORT})",
    )
    parser.add_argument(
        "--ports",
        type=int,
        default=1,
        metavar="N",
        help="listen on N consecutive ports from --port (spreads thousands of emulated devices)",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=0.05,
        metavar="S",
        help="seconds before each reply (default 0.05)",
    )
    parser.add_argument(
        "--jitter",
        type=float,
        default=0.0,
        metavar="S",
        help="each delay varies by up to ± S seconds",
    )


def rtt_server_command(args: argparse.Namespace) -> int:
    """Serve until signalled; the exit status (0)."""
    from nornir_bench.lab.rtt_command import run_rtt_server

    run_rtt_server(
        args.address,
        args.port,
        args.delay,
        args.jitter,
        ports=args.ports,
        any_address=args.any_address,
    )
    return 0
