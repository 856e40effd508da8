"""The simulation of a run, on constructed workloads whose wall is known in closed form."""

from __future__ import annotations

import pytest

from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.bench.simulate import HOST_EVENTS, Setup, Workload, simulate


def steady(latency: float, **figures: float) -> Workload:
    return Workload(latencies=(latency,) * 10, **figures)  # type: ignore[arg-type]


def wall(workload: Workload, setup: Setup, **options: int) -> float:
    simulated = simulate(workload, setup, **options)
    assert simulated.p5 <= simulated.p50 <= simulated.p95
    return simulated.p50


def test_one_wave_ends_with_its_slowest_host_not_its_median_one() -> None:
    assert wall(steady(0.1), Setup(hosts=100, in_flight=100)) == pytest.approx(0.1)
    # Half the hosts take 0.1 s, half 0.3 s: a wave of 100 almost surely holds a slow one.
    mixed = Workload(latencies=(0.1, 0.3) * 5)
    simulated = simulate(mixed, Setup(hosts=100, in_flight=100), repeats=50)
    assert simulated.p5 == simulated.p95 == pytest.approx(0.3)


def test_many_waves_add_up() -> None:
    assert wall(steady(0.1), Setup(hosts=1_000, in_flight=100)) == pytest.approx(1.0)
    # A last wave of 1 host takes one latency too.
    assert wall(steady(0.1), Setup(hosts=1_001, in_flight=100)) == pytest.approx(1.1)
    # Drawn latencies: the range spreads, but a run of 100 waves stays near 100 means.
    spread = Workload(latencies=tuple(0.05 + 0.01 * i for i in range(11)))  # mean 0.1
    simulated = simulate(spread, Setup(hosts=100, in_flight=1))
    assert simulated.p5 < simulated.p95
    assert 9.0 < simulated.p50 < 11.0


def test_the_cpu_is_shared_on_the_cores_the_runner_can_use() -> None:
    cpu_bound = steady(0.01, cpu_per_host=0.001)
    one_core = Setup(hosts=1_000, in_flight=1_000)
    # 1,000 hosts x 1 ms one after the other on one core (the GIL), then the last one's trip.
    assert wall(cpu_bound, one_core) == pytest.approx(1.0 + 0.01)
    two_cores = Setup(hosts=1_000, in_flight=1_000, costs=RunnerCosts(processes=2, cores=2))
    assert wall(cpu_bound, two_cores) == pytest.approx(0.5 + 0.01)


def test_the_parent_takes_each_result_on_its_one_core() -> None:
    costs = RunnerCosts(startup=0.3, per_host=0.001, processes=2, cores=2)
    # All end at 0.3 + 0.1; the parent then takes 1,000 results, 1 ms each.
    assert wall(steady(0.1), Setup(hosts=1_000, in_flight=1_000, costs=costs)) == (
        pytest.approx(0.3 + 0.1 + 1.0)
    )


def test_the_start_rate_paces_the_starts() -> None:
    limited = Setup(hosts=1_000, in_flight=1_000, max_starts_per_second=100)
    # The last host starts at 999 / 100 s, then takes its latency.
    assert wall(steady(0.1), limited) == pytest.approx(9.99 + 0.1)
    burst = Setup(hosts=1_000, in_flight=1_000, max_starts_per_second=100, max_start_burst=100)
    assert wall(steady(0.1), burst) == pytest.approx(9.0 + 0.1)


def test_a_batch_waits_for_the_one_before_to_end() -> None:
    assert wall(steady(0.1), Setup(hosts=100, in_flight=100, batches=(10,))) == (
        pytest.approx(1.0)
    )
    # A canary of 1, then the rest at once.
    assert wall(steady(0.1), Setup(hosts=100, in_flight=100, batches=(1, 1.0))) == (
        pytest.approx(0.2)
    )


def test_latency_that_grows_with_load_is_throttled_at_the_hosts_in_flight() -> None:
    # Measured at 10 in flight, 1 % more a host: twice as long at 110 in flight.
    throttled = Workload(latencies=(0.1,) * 10, in_flight=10, growth=0.01)
    assert wall(throttled, Setup(hosts=110, in_flight=110)) == pytest.approx(0.2)
    assert wall(throttled, Setup(hosts=110, in_flight=10)) == pytest.approx(11 * 0.1)


def test_the_startup_and_a_runs_fixed_cost_come_first() -> None:
    costs = RunnerCosts(startup=2.0)
    setup = Setup(hosts=10, in_flight=10, costs=costs)
    assert wall(steady(0.1, overhead=0.05), setup) == pytest.approx(2.0 + 0.05 + 0.1)


def test_a_run_too_large_to_simulate_whole_keeps_its_waves_and_floors() -> None:
    hosts = 1_000_000
    assert hosts * 40 > HOST_EVENTS  # simulated at scale
    assert wall(steady(0.1), Setup(hosts=hosts, in_flight=1_000)) == pytest.approx(100.0)
    cpu = steady(0.01, cpu_per_host=0.0001)
    assert wall(cpu, Setup(hosts=hosts, in_flight=hosts)) == pytest.approx(100.0 + 0.01)
    rate = Setup(hosts=hosts, in_flight=hosts, max_starts_per_second=10_000)
    assert wall(steady(0.1), rate) == pytest.approx(100.0 + 0.1, rel=1e-3)


def test_the_same_seed_gives_the_same_walls() -> None:
    spread = Workload(latencies=tuple(0.05 + 0.01 * i for i in range(11)))
    setup = Setup(hosts=500, in_flight=20)
    assert simulate(spread, setup, seed=3) == simulate(spread, setup, seed=3)
    assert simulate(spread, setup, seed=3) != simulate(spread, setup, seed=4)


@pytest.mark.parametrize(
    ("workload", "setup", "words"),
    [
        (Workload(latencies=()), Setup(hosts=1, in_flight=1), "no latency"),
        (steady(0.1), Setup(hosts=0, in_flight=1), "hosts, in_flight and repeats must be >= 1"),
        (steady(0.1), Setup(hosts=1, in_flight=0), "hosts, in_flight and repeats must be >= 1"),
    ],
)
def test_bad_input_is_one_line(workload: Workload, setup: Setup, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        simulate(workload, setup)


def test_figures_measured_several_times_are_drawn_so_the_range_holds_their_spread() -> None:
    cpu = Workload(latencies=(0.01,) * 10, cpu_per_host=0.001, cpu_measured=(0.0005, 0.0015))
    simulated = simulate(cpu, Setup(hosts=1_000, in_flight=1_000))
    assert simulated.p5 == pytest.approx(0.5 + 0.01)  # 1,000 hosts x 0.5 ms on one core
    assert simulated.p95 == pytest.approx(1.5 + 0.01)
    costs = RunnerCosts(per_host=0.001, processes=2, cores=2, per_host_measured=(0.001, 0.002))
    parent = simulate(steady(0.1), Setup(hosts=1_000, in_flight=1_000, costs=costs))
    assert (parent.p5, parent.p95) == pytest.approx((0.1 + 1.0, 0.1 + 2.0))
    # In process, the runner's own cost per host takes the hosts' one core.
    one = RunnerCosts(per_host=0.001)
    assert wall(steady(0.01, cpu_per_host=0.001), Setup(hosts=1_000, in_flight=1_000,
                                                        costs=one)) == pytest.approx(2.0 + 0.01)
