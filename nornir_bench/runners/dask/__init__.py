"""The ``dask`` runner: hosts on the workers of a Dask distributed cluster.

- :mod:`~nornir_bench.runners.dask.runner`: :class:`DaskRunner`, the plugin, and its cluster;
- :mod:`~nornir_bench.runners.dask.cluster`: the embedded cluster (Dask's own command-line
  tools, on loopback, TLS);
- :mod:`~nornir_bench.runners.dask.address`: connecting to a scheduler (and reading its
  workers), the checks of its address before sending anything;
- :mod:`~nornir_bench.runners.dask.run`: one run: chunks out as the plan allows, settled as
  they come back;
- :mod:`~nornir_bench.runners.dask.worker`: a Dask worker's side: its event loop for hosts,
  the runs and connections on it;
- :mod:`~nornir_bench.runners.dask.reruns`: how many times a dead worker's chunk runs again.

Installed with the extra ``dask`` (``pip install nornir-bench[dask]``).
"""

from nornir_bench.runners.dask.runner import DaskClusterError, DaskRunner

__all__ = ["DaskClusterError", "DaskRunner"]
