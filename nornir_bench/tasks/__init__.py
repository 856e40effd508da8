"""Tasks for nornir-bench: simulated round trips and CPU-bound parsing (real device tasks later)."""

from nornir_bench.tasks.parsing import parse_interfaces, show_interfaces_output
from nornir_bench.tasks.simulated import RoundTrip, asim_rtt, plan_round_trip, sim_rtt

__all__ = [
    "RoundTrip",
    "asim_rtt",
    "parse_interfaces",
    "plan_round_trip",
    "show_interfaces_output",
    "sim_rtt",
]
