"""The tasks a job file can name by function name: every task of :mod:`nornir_bench.tasks`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from nornir_bench.tasks.changes.config import asend_config, send_config
from nornir_bench.tasks.changes.netconf_config import anetconf_edit_config, netconf_edit_config
from nornir_bench.tasks.checks.audit import acheck_state, check_state
from nornir_bench.tasks.checks.commands import asend_command, send_command
from nornir_bench.tasks.checks.netconf_read import (
    anetconf_get,
    anetconf_get_config,
    netconf_get,
    netconf_get_config,
)
from nornir_bench.tasks.checks.running_config import abackup_config, backup_config
from nornir_bench.tasks.synthetic.parsing import parse_interfaces
from nornir_bench.tasks.synthetic.simulated import asim_rtt, sim_rtt
from nornir_bench.tasks.synthetic.tcp import atcp_ping, tcp_ping

__all__ = ["BUILTIN_TASKS"]

BUILTIN_TASKS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        task.__name__: task
        for task in (
            send_command,
            asend_command,
            send_config,
            asend_config,
            netconf_edit_config,
            anetconf_edit_config,
            tcp_ping,
            atcp_ping,
            sim_rtt,
            asim_rtt,
            parse_interfaces,
            check_state,
            acheck_state,
            backup_config,
            abackup_config,
            netconf_get,
            anetconf_get,
            netconf_get_config,
            anetconf_get_config,
        )
    }
)
"""The tasks a job file can name, by function name (read-only)."""
