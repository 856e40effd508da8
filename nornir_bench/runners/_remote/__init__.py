"""What a runner that runs hosts elsewhere needs, whatever the elsewhere is.

A processpool worker is a process forked on this machine; a Dask worker may be a process on
another machine. Both hold the run's task (sent once), receive hosts in chunks, run each
through the shared core on their event loop, and send back what the parent needs to make the
host's result as nornir would hold it in process. The pieces here know nothing of how the
bytes travel:

- :mod:`~nornir_bench.runners._remote.spec`: the run as sent (:class:`RunSpec`): the task,
  its options and policies, the deadline as seconds left (no clock is shared between
  machines), the plugins registered at run time;
- :mod:`~nornir_bench.runners._remote.hosts`: the worker's side (:class:`WorkerHosts`): the
  task loaded, hosts run through the core, the connections kept for the next run;
- :mod:`~nornir_bench.runners._remote.results`: what comes back for a host
  (:class:`FinishedHost`), made portable where it does not pickle, and settled in the parent:
  the result relinked to the parent's host, its data merged, its processor hooks replayed;
- :mod:`~nornir_bench.runners._remote.connections`: the parent's view of connections a worker
  holds: stand-ins in ``host.connections`` that close them in their worker.
"""
