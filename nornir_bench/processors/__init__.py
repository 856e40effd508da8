"""nornir processors: what a user sees of a run, on every runner, nornir's own included.

- :mod:`~nornir_bench.processors.timing`: :class:`HostTimer`, each host's time;
- :mod:`~nornir_bench.processors.progress`: :class:`ProgressBar`, a tqdm bar;
- :mod:`~nornir_bench.processors.records`: :class:`JsonLinesWriter`, one JSON line per host,
  each a :class:`~nornir_bench.processors.host_record.HostRecord`, read back by
  :mod:`~nornir_bench.processors.records_file`.

Each module is imported on its own (the progress bar costs tqdm's import).
"""
