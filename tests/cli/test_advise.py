"""``nornir-bench advise``: the sample, the read-only guard, bad input, and a run end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.bench.advise import predict
from nornir_bench.cli.main import main
from nornir_bench.jobs import advise as jobs_advise
from nornir_bench.jobs.advise import advise_job
from nornir_bench.jobs.load import load_job
from tests.dask_cluster import shared_address

TASKS = '''
from nornir_bench.tasks import read_only


def reboot(task):
    return "rebooted"


@read_only()
def look(task):
    return "looked"
'''


def job_file(tmp_path: Path, task: str, *, hosts: int = 30, runner: str = "asyncio") -> Path:
    (tmp_path / "jobtasks.py").write_text(TASKS)
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: {hosts}}}}}
        runner: {{plugin: {runner}, options: {{num_workers: 10}}}}
        logging: {{enabled: false}}
        task: {task}
        """))
    return path


# slow: every runner's costs measured, processpool's worker processes among them
@pytest.mark.slow
def test_the_sample_is_drawn_from_the_jobs_hosts_never_more_than_asked(tmp_path: Path) -> None:
    job = load_job(job_file(tmp_path, "{name: sim_rtt, params: {rtt: 0}}", runner="threadpool"))
    hosts = {f"dev{i}" for i in range(30)}
    found = advise_job(job, sample=5, seed=7)
    assert len(found.sampled) == 5 == len(set(found.sampled))
    assert set(found.sampled) <= hosts
    assert found.sample_runner == "threadpool"
    assert found.sample.hosts == 3  # two more ran first, alone: a warm-up, and one measured
    assert advise_job(job, sample=5, seed=7).sampled == found.sampled
    everything = advise_job(job, sample=100, seed=7)
    assert set(everything.sampled) == hosts
    assert everything.hosts == 30


def test_the_sample_keeps_to_the_jobs_filter(tmp_path: Path) -> None:
    path = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0}}")
    path.write_text(path.read_text() + "filter: {hosts: [dev3, dev5, dev8, dev13]}\n")
    found = advise_job(load_job(path), sample=24, runners=["asyncio"])
    assert sorted(found.sampled) == ["dev13", "dev3", "dev5", "dev8"]
    assert found.hosts == 4


def test_a_task_not_known_read_only_is_refused_without_allow_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = job_file(tmp_path, "{name: 'jobtasks:reboot'}")
    assert main(["advise", str(job)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "task jobtasks:reboot is not known to be read-only" in err
    assert "--allow-changes" in err
    # So is a device command that is not a show command.
    job = job_file(tmp_path, "{name: send_command, params: {command: reload}}")
    assert main(["advise", str(job)]) == 2
    assert "--allow-changes" in capsys.readouterr().err


# slow: every runner's costs measured, processpool's worker processes among them
@pytest.mark.slow
def test_a_task_marked_read_only_runs_and_allow_changes_runs_any(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = job_file(tmp_path, "{name: 'jobtasks:look'}", hosts=6)
    assert main(["advise", str(job), "--sample", "3"]) == 0
    assert "recommended: runner threadpool" in capsys.readouterr().out
    job = job_file(tmp_path, "{name: 'jobtasks:reboot'}", hosts=6)
    assert main(["advise", str(job), "--sample", "3", "--allow-changes"]) == 0
    assert "recommended: runner threadpool" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--sample", "0"], "--sample: must be a whole number >= 1, got '0'"),
        (["--sample", "many"], "--sample: must be a whole number >= 1, got 'many'"),
        (["--budget", "-1"], "--budget: must be a number of seconds"),
        (["--seed", "x"], "--seed: invalid int value: 'x'"),
    ],
)
def test_bad_numbers_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    job = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0}}")
    with pytest.raises(SystemExit) as exited:
        main(["advise", str(job), *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err


def test_bad_jobs_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.yaml" in err
    job = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0}}")
    assert main(["advise", str(job), "--budget", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--budget: run_timeout must be a number of seconds > 0" in err
    assert main(["advise", str(job), "--runners", "asyncio,threadpool"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--runners: advise predicts asyncio, processpool" in err and "'threadpool'" in err


# slow: processpool's costs measured in worker processes
@pytest.mark.slow
def test_a_job_of_steps_is_sampled_step_by_step_and_pays_its_start_up_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "steps.yaml"
    path.write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 40}}
        runner: {plugin: asyncio, options: {num_workers: 10}}
        logging: {enabled: false}
        steps:
          - {name: sim_rtt, params: {rtt: 0.01}}
          - {name: asim_rtt, params: {rtt: 0.03}, filter: {hosts: [dev1, dev2, dev3]}}
        """))
    found = advise_job(load_job(path), sample=40, seed=2, runners=["asyncio", "processpool"])
    assert found.sample_runner == "asyncio"  # a blocking step runs on an async runner too
    first, second = found.steps
    assert (first.hosts, second.hosts) == (40, 3)
    # Each step's own latencies: about its own round trip or more (a loop's timer may fire
    # a little early; no upper bound: a loaded machine adds to each).
    assert min(first.sample.latencies) > 0.005 and min(second.sample.latencies) > 0.025
    assert [level.hosts for level in first.sample.levels] == [7, 31]  # a fifth, the rest
    assert second.sample.hosts == 1  # of 3 sampled: a warm-up and one alone ran first
    for p in found.advice.predictions:
        costs = found.costs[p.runner]
        each = [
            predict(step.sample, runner=p.runner, workers=p.workers, hosts=step.hosts,
                    limits=found.limits, costs=costs)
            for step in found.steps
        ]
        assert p.wall == pytest.approx(sum(q.wall for q in each) - costs.startup)
    assert found.as_written is not None and found.as_written.workers == 10


# slow: the command in a process, processpool's worker processes
@pytest.mark.slow
def test_advise_end_to_end_prints_a_recommendation_and_its_check(tmp_path: Path) -> None:
    job = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0.01}}", hosts=50)
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "advise", str(job), "--sample", "5", "--seed",
         "1", "--check", "--budget", "30", "--runners", "asyncio,processpool"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "task asim_rtt on 50 hosts" in out
    assert "sample: 5 hosts on asyncio" in out
    latency = re.search(r"latency p50 ([\d.]+) ms", out)
    assert latency and float(latency.group(1)) >= 9, out  # the 10 ms of asim_rtt, in ms
    assert "\nasyncio " in out and "\nprocesspool " in out
    assert "recommended: runner " in out
    assert "check: " in out and "on 50 hosts: predicted " in out and "measured " in out


def test_the_budget_bounds_the_sample_run(tmp_path: Path) -> None:
    job = load_job(job_file(tmp_path, "{name: asim_rtt, params: {rtt: 30}}", hosts=6))
    found = advise_job(job, sample=6, budget=0.2, runners=["asyncio"])
    # Every host, the two that ran alone too: asim_rtt fails only by the budget's RunTimeout.
    assert found.sample.failed == 6


def test_plot_draws_the_predictions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0}}", hosts=6)
    plot = ["--runners", "asyncio", "--plot", str(tmp_path / "advice.png")]
    assert main(["advise", str(job), *plot]) == 0
    assert (tmp_path / "advice.png").read_bytes().startswith(b"\x89PNG")
    assert f"plot: {tmp_path / 'advice.png'}" in capsys.readouterr().out
    assert main(["advise", str(job), "--plot", str(tmp_path / "no" / "advice.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot: no such folder" in err


# slow: a Dask cluster
@pytest.mark.slow
def test_with_address_the_clusters_workers_and_a_run_there_are_measured_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    measure = jobs_advise.measure_costs

    def measure_costs(runner: str, **given: Any) -> Any:
        asked.append(given["options"] or {})
        return measure(runner, **given)

    monkeypatch.setattr(jobs_advise, "measure_costs", measure_costs)
    job = load_job(job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0.01}}", hosts=40))
    found = advise_job(job, sample=20, seed=3, runners=["dask"], address=shared_address(),
                       check=True)
    assert asked == [{"address": shared_address()}]  # measured there, not on a cluster of its own
    dask = found.costs["dask"]
    assert (dask.processes, dask.cores) == (2, 2)  # the shared cluster's two workers
    assert all(p.in_flight == min(40, 2 * p.workers) for p in found.advice.predictions)
    assert found.check is not None and found.check.measured.failed == 0
    assert found.check.prediction.runner == "dask"


def test_the_header_of_a_job_of_steps_names_every_steps_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "steps.yaml"
    path.write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 6}}
        runner: {plugin: asyncio, options: {num_workers: 10}}
        logging: {enabled: false}
        steps:
          - {name: sim_rtt, params: {rtt: 0}}
          - {name: asim_rtt, params: {rtt: 0}}
          - {name: sim_rtt, params: {rtt: 0}}
        """))
    assert main(["advise", str(path), "--sample", "6", "--runners", "asyncio"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"job {path}: 3 steps (sim_rtt, asim_rtt, sim_rtt) on 6 hosts"


def test_devices_on_this_machine_are_said_with_the_bias_they_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job whose devices are this machine (a loopback TCP server here) gets one line saying
    the prediction is optimistic; a job of synthetic hosts, which are nowhere, does not."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        (tmp_path / "hosts.yaml").write_text("".join(
            f"h{index}: {{hostname: 127.0.0.1, port: {port}}}\n" for index in range(4)
        ))
        job = tmp_path / "local.yaml"
        hosts = tmp_path / "hosts.yaml"
        job.write_text(textwrap.dedent(f"""\
            inventory: {{plugin: SimpleInventory, options: {{host_file: {hosts}}}}}
            runner: {{plugin: asyncio, options: {{num_workers: 10}}}}
            logging: {{enabled: false}}
            task: {{name: atcp_ping, params: {{timeout: 5}}}}
            """))
        assert main(["advise", str(job), "--runners", "asyncio", "--seed", "1"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "on this machine" in line]
    assert len(said) == 1
    assert said[0].startswith(
        "warning: 4 of the 4 sampled hosts are devices on this machine: they share its CPUs "
        "with the run, and a full run leaves them less CPU than the sample did, so the "
        "prediction is optimistic"
    )
    synthetic = job_file(tmp_path, "{name: asim_rtt, params: {rtt: 0}}", hosts=6)
    assert main(["advise", str(synthetic), "--runners", "asyncio"]) == 0
    assert "on this machine" not in capsys.readouterr().out
