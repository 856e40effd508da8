"""Tasks for nornir-bench: device commands, TCP pings, simulated round trips, CPU-bound parsing.

Each blocking task has an awaitable twin for the event-loop runners (``send_command`` /
``asend_command``, ``tcp_ping`` / ``atcp_ping``, ``sim_rtt`` / ``asim_rtt``);
:data:`BUILTIN_TASKS` names them all for job files. A task may carry a check of its
parameters (:func:`check_params_with`), which job files run before anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from nornir_bench.tasks._params import ParamsCheck, check_params_with, params_check_of
from nornir_bench.tasks.commands import asend_command, send_command
from nornir_bench.tasks.parsing import parse_interfaces, show_interfaces_output
from nornir_bench.tasks.simulated import MAX_RTT, RoundTrip, asim_rtt, plan_round_trip, sim_rtt
from nornir_bench.tasks.ssh_session import AsyncSSHSession
from nornir_bench.tasks.tcp import TcpPing, atcp_ping, tcp_ping

__all__ = [
    "BUILTIN_TASKS",
    "MAX_RTT",
    "AsyncSSHSession",
    "ParamsCheck",
    "RoundTrip",
    "TcpPing",
    "asend_command",
    "asim_rtt",
    "atcp_ping",
    "check_params_with",
    "params_check_of",
    "parse_interfaces",
    "plan_round_trip",
    "send_command",
    "show_interfaces_output",
    "sim_rtt",
    "tcp_ping",
]

BUILTIN_TASKS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        task.__name__: task
        for task in (
            send_command,
            asend_command,
            tcp_ping,
            atcp_ping,
            sim_rtt,
            asim_rtt,
            parse_interfaces,
        )
    }
)
"""The tasks a job file can name, by function name (read-only)."""
