"""The parts of scripts/bench_faults.py: a dask run that never ends (:mod:`.dask_connections`),
a deadline in the middle of a change on a hung device (:mod:`.hung_change`), Ctrl-C
(:mod:`.ctrl_c`). Each run is a process of its own, owned until nothing of it is left
(:class:`harness.owned.Child`)."""
