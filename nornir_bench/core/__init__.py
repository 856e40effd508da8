"""The core every runner shares: running one task on one host, and what a run needs around it.

- :mod:`~nornir_bench.core.execution`: one host's task, as nornir's ``Task.start`` runs it;
- :mod:`~nornir_bench.core.exceptions`: the errors runners put on hosts, and the package's base;
- :mod:`~nornir_bench.core.offload`, :mod:`~nornir_bench.core.connections`: what an async run
  owns (its thread pool for blocking calls, its connections);
- :mod:`~nornir_bench.core.ctrl_c`: Ctrl-C inside a run (the halt, the two presses);
- :mod:`~nornir_bench.core.stoppable`: Ctrl-C on runners that do not keep the rule themselves;
- :mod:`~nornir_bench.core.attempts`: how many times a host's task ran;
- what the layers above share, so that none imports another for a helper: processor hooks
  (:mod:`~nornir_bench.core.hooks`), secrets masked (:mod:`~nornir_bench.core.secrets`), why a
  host failed (:mod:`~nornir_bench.core.failures`), hosts in words
  (:mod:`~nornir_bench.core.wording`).
"""
