"""Job files: a YAML file naming an inventory, a runner and a task, checked and run.

- :mod:`~nornir_bench.jobs.load`: :func:`load_job`, every mistake one line with file:line:col;
- :mod:`~nornir_bench.jobs.run`: :func:`run_job`, with records and progress, printing nothing;
- :mod:`~nornir_bench.jobs.output`: the records file, never shared by two runs;
- :mod:`~nornir_bench.jobs.show`: the run as text (step lines, failure lines, ``--show``);
- :mod:`~nornir_bench.jobs.secrets`: the secrets of a job's inventory, expanded and collected.
"""
