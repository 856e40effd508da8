"""The ``processpool`` runner: processes x coroutines, with crash isolation.

- :mod:`~nornir_bench.runners.processpool.runner`: :class:`ProcessPoolRunner`, the plugin;
- :mod:`~nornir_bench.runners.processpool.pool`: one run's scheduling loop: hosts out, results back;
- :mod:`~nornir_bench.runners.processpool.dispatch`: which hosts go to which worker next;
- :mod:`~nornir_bench.runners.processpool.workers`: the worker processes, forked, stopped, killed,
  and the connections each holds;
- :mod:`~nornir_bench.runners.processpool.messages`: what the pool, workers and fork servers say;
- :mod:`~nornir_bench.runners.processpool.worker`: a worker's loop and its batches of results;
- :mod:`~nornir_bench.runners.processpool.forkserver`: the pool's fork server, started and asked;
- :mod:`~nornir_bench.runners.processpool.forkserver_process`: loads a run once, forks workers;
- :mod:`~nornir_bench.runners.processpool.crashes`: the crash rule, who fails and who runs again;
- :mod:`~nornir_bench.runners.processpool.running_host`: which host a worker runs, shared memory.
"""

from nornir_bench.runners.processpool.runner import ProcessPoolRunner

__all__ = ["ProcessPoolRunner"]
