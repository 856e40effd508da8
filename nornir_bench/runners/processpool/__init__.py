"""The ``processpool`` runner: processes x coroutines, with crash isolation.

- :mod:`~nornir_bench.runners.processpool.pool`: :class:`ProcessPoolRunner`, the parent's side;
- :mod:`~nornir_bench.runners.processpool.worker`: a worker's loop, batches and portable results;
- :mod:`~nornir_bench.runners.processpool.forkserver`: loads a run once, forks workers holding it;
- :mod:`~nornir_bench.runners.processpool.crashes`: the crash rule, who fails and who runs again.
"""

from nornir_bench.runners.processpool.pool import ProcessPoolRunner

__all__ = ["ProcessPoolRunner"]
