"""Tasks for nornir-bench: device commands, NETCONF reads, TCP pings, simulated round trips,
CPU-bound parsing.

Each blocking task has an awaitable twin for the event-loop runners (``send_command`` /
``asend_command``, ``tcp_ping`` / ``atcp_ping``, ``sim_rtt`` / ``asim_rtt``);
:data:`BUILTIN_TASKS` names them all for job files. A task may carry a check of its
parameters (:func:`check_params_with`), which job files run before anything else.

A task may say it only reads (:func:`read_only`): ``nornir-bench advise`` runs such a task on
a sample of a job's hosts without asking. What a task says of itself is one record,
:class:`TaskTraits`, set with :func:`with_traits` and read with :func:`traits_of`.

A task may also declare the device libraries and connection plugins it uses (:func:`needs`):
a job then registers only those plugins, and a missing library is one line naming the extra
that installs it. Each name is imported from its module on first use: the benchmark's
``sim_rtt`` does not cost the device tasks' imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nornir_bench._lazy import lazy_exports

if TYPE_CHECKING:
    from nornir_bench.core.read_only import (
        READ_ONLY_COMMANDS,
        is_read_only,
        read_only,
        reads_only_commands,
    )
    from nornir_bench.core.task_traits import TaskTraits, traits_of, with_traits
    from nornir_bench.tasks._builtin import BUILTIN_TASKS
    from nornir_bench.tasks._needs import (
        MissingLibrary,
        Needs,
        connections_of,
        needs,
        needs_of,
        require_libraries,
    )
    from nornir_bench.tasks._params import (
        ParamsCheck,
        check_params_with,
        params_check_of,
    )
    from nornir_bench.tasks.changes.config import ConfigChangeFailed, asend_config, send_config
    from nornir_bench.tasks.changes.journal import JournalError, read_journal
    from nornir_bench.tasks.changes.netconf_config import anetconf_edit_config, netconf_edit_config
    from nornir_bench.tasks.checks.audit import StateCheckFailed, acheck_state, check_state
    from nornir_bench.tasks.checks.commands import asend_command, send_command
    from nornir_bench.tasks.checks.netconf_read import (
        anetconf_get,
        anetconf_get_config,
        netconf_get,
        netconf_get_config,
    )
    from nornir_bench.tasks.checks.output_parsers import OutputNotParsed, parse_output
    from nornir_bench.tasks.checks.running_config import abackup_config, backup_config
    from nornir_bench.tasks.dialects.netconf_xml import (
        NetconfCapabilityMissing,
        NetconfFilterError,
    )
    from nornir_bench.tasks.sessions.netconf_session import NetconfSession
    from nornir_bench.tasks.sessions.scrapli_session import ScrapliSession
    from nornir_bench.tasks.synthetic.parsing import parse_interfaces, show_interfaces_output
    from nornir_bench.tasks.synthetic.simulated import (
        MAX_RTT,
        RoundTrip,
        asim_rtt,
        plan_round_trip,
        sim_rtt,
    )
    from nornir_bench.tasks.synthetic.tcp import TcpPing, atcp_ping, tcp_ping

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "nornir_bench.tasks._builtin": ("BUILTIN_TASKS",),
        "nornir_bench.tasks._needs": (
            "MissingLibrary",
            "Needs",
            "connections_of",
            "needs",
            "needs_of",
            "require_libraries",
        ),
        "nornir_bench.tasks._params": ("ParamsCheck", "check_params_with", "params_check_of"),
        "nornir_bench.core.read_only": (
            "READ_ONLY_COMMANDS",
            "is_read_only",
            "read_only",
            "reads_only_commands",
        ),
        "nornir_bench.core.task_traits": ("TaskTraits", "traits_of", "with_traits"),
        "nornir_bench.tasks.checks.commands": ("asend_command", "send_command"),
        "nornir_bench.tasks.checks.running_config": ("abackup_config", "backup_config"),
        "nornir_bench.tasks.checks.netconf_read": (
            "anetconf_get",
            "anetconf_get_config",
            "netconf_get",
            "netconf_get_config",
        ),
        "nornir_bench.tasks.dialects.netconf_xml": (
            "NetconfCapabilityMissing",
            "NetconfFilterError",
        ),
        "nornir_bench.tasks.sessions.netconf_session": ("NetconfSession",),
        "nornir_bench.tasks.changes.config": ("ConfigChangeFailed", "asend_config", "send_config"),
        "nornir_bench.tasks.changes.netconf_config": ("anetconf_edit_config",
                                                      "netconf_edit_config"),
        "nornir_bench.tasks.synthetic.parsing": ("parse_interfaces", "show_interfaces_output"),
        "nornir_bench.tasks.synthetic.simulated": (
            "MAX_RTT",
            "RoundTrip",
            "asim_rtt",
            "plan_round_trip",
            "sim_rtt",
        ),
        "nornir_bench.tasks.sessions.scrapli_session": ("ScrapliSession",),
        "nornir_bench.tasks.synthetic.tcp": ("TcpPing", "atcp_ping", "tcp_ping"),
        "nornir_bench.tasks.changes.journal": ("JournalError", "read_journal"),
        "nornir_bench.tasks.checks.output_parsers": ("OutputNotParsed", "parse_output"),
        "nornir_bench.tasks.checks.audit": ("StateCheckFailed", "acheck_state", "check_state"),
    },
)

__all__ = [
    "ConfigChangeFailed",
    "JournalError",
    "NetconfCapabilityMissing",
    "NetconfFilterError",
    "NetconfSession",
    "anetconf_get",
    "anetconf_get_config",
    "netconf_get",
    "netconf_get_config",
    "OutputNotParsed",
    "StateCheckFailed",
    "abackup_config",
    "acheck_state",
    "backup_config",
    "check_state",
    "parse_output",
    "read_journal",
    "BUILTIN_TASKS",
    "MAX_RTT",
    "MissingLibrary",
    "Needs",
    "ParamsCheck",
    "READ_ONLY_COMMANDS",
    "RoundTrip",
    "ScrapliSession",
    "TaskTraits",
    "TcpPing",
    "asend_command",
    "anetconf_edit_config",
    "asend_config",
    "asim_rtt",
    "atcp_ping",
    "check_params_with",
    "is_read_only",
    "connections_of",
    "needs",
    "needs_of",
    "params_check_of",
    "parse_interfaces",
    "plan_round_trip",
    "read_only",
    "reads_only_commands",
    "require_libraries",
    "send_command",
    "netconf_edit_config",
    "send_config",
    "show_interfaces_output",
    "sim_rtt",
    "tcp_ping",
    "traits_of",
    "with_traits",
]
