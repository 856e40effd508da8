"""The advise model as a pure function: synthetic samples and limits in, exact predictions out."""

from __future__ import annotations

import pytest
from nornir.plugins.runners import SerialRunner, ThreadedRunner

from nornir_bench import AsyncioRunner, ProcessPoolRunner, ThreadPoolRunner
from nornir_bench.bench.advise import (
    Level,
    Limits,
    Sample,
    accepted_start_rate,
    advise,
    limit_warnings,
    load_warnings,
    predict,
    runners_for,
    worker_grid,
)
from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.bench.sampling import latency_growth

ROOMY = Limits(cpus=2, open_files_soft=1_000_000, open_files_hard=1_000_000)
POOL = RunnerCosts(startup=0.3, processes=2, cores=2)


def steady(latency: float, hosts: int = 24, **figures: float) -> Sample:
    return Sample(latencies=(latency,) * hosts, **figures)  # type: ignore[arg-type]


def test_waves_of_a_known_latency_predict_the_wall_exactly() -> None:
    p = predict(steady(0.1), runner="asyncio", workers=100, hosts=1_000, limits=ROOMY)
    assert (p.in_flight, p.waves) == (100, 10)
    assert p.wall == pytest.approx(1.0)
    assert p.wall_high == pytest.approx(1.0)


def test_a_wave_is_predicted_by_its_slowest_hosts_not_by_its_median_one() -> None:
    sample = Sample(latencies=(0.1,) * 18 + (0.3, 0.3))
    assert (sample.p50, sample.p95, sample.max) == (0.1, 0.3, 0.3)
    # 10 waves of 10: most hold one of the slow tenth, so 10 x the median (1.0 s) is short
    # (another sample of 20 might hold no slow host: the range starts there).
    p = predict(sample, runner="threadpool", workers=10, hosts=100, limits=ROOMY)
    assert p.wall_low == pytest.approx(1.0)
    assert p.wall_low < p.wall <= p.wall_high <= 3.0
    assert p.wall > 1.0
    # One wave of 100: its slowest host almost surely a slow one.
    p = predict(sample, runner="threadpool", workers=100, hosts=100, limits=ROOMY)
    assert (p.wall, p.wall_high) == pytest.approx((0.3, 0.3))
    assert p.wall_low == pytest.approx(0.1)  # another sample of 20 may hold no slow host


def test_cpu_bound_hosts_are_floored_by_the_cores_the_runner_can_use() -> None:
    sample = steady(0.01, cpu_per_host=0.001)
    one_core = predict(sample, runner="asyncio", workers=1_000, hosts=1_000, limits=ROOMY)
    # 1,000 hosts x 1 ms on one core (the GIL), then the last host's round trip.
    assert one_core.wall == pytest.approx(1.0 + 0.01)
    assert one_core.cpu_bound
    two = predict(sample, runner="processpool", workers=500, hosts=1_000, limits=ROOMY,
                  costs=POOL)
    assert two.in_flight == 1_000  # 500 a process, two processes
    assert two.wall == pytest.approx(0.3 + 0.5 + 0.01)  # start-up + half the CPU + a trip


def test_the_start_rate_and_group_limits_bound_the_run() -> None:
    limits = Limits(
        cpus=2, open_files_soft=10**6, open_files_hard=10**6, max_starts_per_second=100,
        max_in_flight=50,
    )
    p = predict(steady(0.1), runner="asyncio", workers=1_000, hosts=1_000, limits=limits)
    assert p.in_flight == 50
    assert p.wall == pytest.approx(9.99 + 0.1)  # the last of 1,000 starts at 100 a second
    warnings = limit_warnings(p, limits)
    assert any("max_starts_per_second 100 sets the pace" in w for w in warnings)
    assert any("group limits allow 50 hosts in flight" in w for w in warnings)


def test_open_files_beyond_the_soft_limit_and_memory_beyond_available_are_warned() -> None:
    limits = Limits(
        cpus=2, open_files_soft=1_024, open_files_hard=4_096, memory_available=100 * 2**20
    )
    sample = steady(0.1, descriptors_per_host=1, memory_per_host=2**20, base_descriptors=10)
    p = predict(sample, runner="asyncio", workers=2_000, hosts=10_000, limits=limits)
    assert p.open_files == 2_010
    assert p.memory == 2_000 * 2**20
    assert limit_warnings(p, limits) == [
        "2,000 in flight needs 2,010 open files; ulimit -n is 1,024 (the runner raises it, "
        "up to the hard limit 4,096)",
        "2,000 in flight needs 2,000 MiB of memory; 100 MiB is available",
    ]
    past_hard = predict(sample, runner="asyncio", workers=10_000, hosts=10_000, limits=limits)
    assert limit_warnings(past_hard, limits)[0] == (
        "10,000 in flight needs 10,010 open files; the hard limit (ulimit -Hn) is 4,096: the "
        "runner keeps fewer in flight"
    )


def test_the_recommendation_is_the_fewest_workers_within_10_percent_of_the_best() -> None:
    # 0.1 s a host, 0.5 ms of CPU: 1,000 hosts cannot go below 0.5 s + a trip on one core.
    sample = steady(0.1, cpu_per_host=0.0005)
    found = advise(sample, hosts=1_000, runners=["asyncio"], limits=ROOMY,
                   workers=[10, 100, 200, 500, 1_000])
    walls = {p.workers: p.wall for p in found.predictions}
    # Waves of a trip and their hosts' CPU, or the CPU floor and a trip.
    assert walls == pytest.approx(
        {10: 10.05, 100: 1.05, 200: 0.6, 500: 0.6, 1_000: 0.6}, abs=0.01
    )
    assert found.best.workers == 200
    # Across runners: processpool's two cores beat the GIL despite its start-up.
    sample = steady(0.1, cpu_per_host=0.0012)
    found = advise(sample, hosts=1_000, runners=["asyncio", "processpool"], limits=ROOMY,
                   workers=[50, 100, 500, 1_000], costs={"processpool": POOL})
    assert (found.best.runner, found.best.workers) == ("processpool", 100)
    assert found.best.wall == pytest.approx(0.3 + 0.6 + 0.1)
    near = [p for p in found.predictions if p.wall <= found.best.wall * 1.1]
    assert min(p.in_flight for p in near) == found.best.in_flight


def test_what_does_not_fit_the_machine_is_not_recommended() -> None:
    limits = Limits(cpus=2, open_files_soft=1_024, open_files_hard=1_024)
    sample = steady(0.1, descriptors_per_host=1)
    found = advise(sample, hosts=10_000, runners=["asyncio"], limits=limits,
                   workers=[100, 1_000, 10_000])
    assert found.best.workers == 1_000
    assert found.warnings == ()


def test_the_runners_and_worker_counts_considered() -> None:
    installed = {
        "threaded": ThreadedRunner, "serial": SerialRunner, "threadpool": ThreadPoolRunner,
        "processpool": ProcessPoolRunner, "asyncio": AsyncioRunner,
    }
    assert runners_for(True, installed) == ("asyncio", "processpool")
    assert runners_for(False, installed) == ("threadpool",)
    # A runner that declares no traits is predicted when named, read as in process.
    assert runners_for(False, installed, declared_only=False) == ("threaded", "threadpool")
    assert worker_grid(300) == (1, 10, 20, 50, 100, 200, 300)
    assert worker_grid(50_000)[-1] == 10_000
    with pytest.raises(ValueError, match="hosts must be >= 1"):
        advise(steady(0.1), hosts=0, runners=["asyncio"], limits=ROOMY)


def test_logins_refused_and_latency_growing_with_load_are_warned_with_what_to_set() -> None:
    levels = (
        Level(in_flight=20, hosts=20, p50=0.4),
        Level(in_flight=78, hosts=78, p50=1.2, refused=29),
    )
    sample = Sample(latencies=(1.2,) * 78, in_flight=78, growth=(1.2 - 0.4) / 58 / 1.2,
                    levels=levels)
    found = advise(sample, hosts=500, runners=["asyncio"], limits=ROOMY, workers=[20, 78])
    # 20 in flight took 0.4 s a login without a refusal: 50 starts a second.
    assert accepted_start_rate(sample) == 50
    assert found.warnings[0] == (
        "the devices' SSH servers refused 37 % of logins at 78 in flight: set "
        "max_starts_per_second: 50"
    )
    assert found.warnings[1].startswith(
        "latency grows with hosts in flight: p50 400.0 ms at 20, 1,200.0 ms at 78"
    )
    # Fewer in flight, shorter latencies: 78 in flight is no longer 78 / 20 times as fast.
    walls = {p.workers: p.wall for p in found.predictions}
    assert walls[20] == pytest.approx(25 * 0.4)
    assert walls[78] == pytest.approx(7 * 1.2)
    calm = Sample(latencies=(0.4,) * 20, levels=levels[:1])
    assert load_warnings(calm, found.best) == []


def test_latency_growth_is_fitted_from_two_loads_less_the_cpu_their_hosts_waited_for() -> None:
    low, high = Level(in_flight=20, hosts=20, p50=0.4), Level(in_flight=78, hosts=78, p50=1.2)
    assert latency_growth((low, high)) == pytest.approx(0.8 / 58 / 1.2)
    assert latency_growth((high,)) == 0.0
    within_noise = Level(in_flight=78, hosts=78, p50=0.4 * 1.1)
    assert latency_growth((low, within_noise)) == 0.0
    # 100 ms of CPU a host: at 78 in flight a host waited 3.95 s for the others' and its own,
    # at 20 about 1.05 s. Less that, the devices answered as fast at both loads.
    cpu_only = (Level(in_flight=20, hosts=20, p50=0.5 + 1.05),
                Level(in_flight=78, hosts=78, p50=0.5 + 3.95))
    assert latency_growth(cpu_only, cpu_per_host=0.1) == 0.0
    assert latency_growth(cpu_only) > 0


def test_where_every_load_saw_refusals_the_rate_is_the_logins_let_in() -> None:
    levels = (
        Level(in_flight=19, hosts=19, p50=1.5, refused=4),
        Level(in_flight=79, hosts=79, p50=5.5, refused=27),
    )
    # 15 of 19 let in at once, 1.5 s each: 10 a second.
    assert accepted_start_rate(Sample(latencies=(5.5,) * 79, levels=levels)) == 10
    assert accepted_start_rate(Sample(latencies=(1.0,))) == 1
