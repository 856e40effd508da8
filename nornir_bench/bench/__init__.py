"""The study: "how many workers are enough?", as an API and as a sweep of timed processes.

- :mod:`~nornir_bench.bench.benchmark`: :func:`run_benchmark`, one point of the study in process;
- :mod:`~nornir_bench.bench.summary`: :func:`summarize`, what a run's result says in figures;
- :mod:`~nornir_bench.bench.usage`: the process's wall, user, sys and peak RSS, as ``time``;
- :mod:`~nornir_bench.bench.sweep`: the grid of runners x workers x RTT, each a fresh process;
- :mod:`~nornir_bench.bench.advise`: the advise model, a job predicted from a sample of its
  hosts (measured by :mod:`~nornir_bench.bench.sampling`);
- :mod:`~nornir_bench.bench.calibrate`: :func:`measure_costs`, what a runner itself costs here
  (:class:`~nornir_bench.bench.costs.RunnerCosts`), for the advise model.
"""
