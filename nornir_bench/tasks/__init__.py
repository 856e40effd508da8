"""Tasks for nornir-bench: simulated round trips (and, later, real device round trips)."""

from nornir_bench.tasks.simulated import RoundTrip, asim_rtt, plan_round_trip, sim_rtt

__all__ = ["RoundTrip", "asim_rtt", "plan_round_trip", "sim_rtt"]
