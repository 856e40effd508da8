"""The parts of scripts/bench_netconf.py: what every side shares (:mod:`.sides`: a side's
runs, the package's tasks timed by run) and the change's RPCs by each client
(:mod:`.changes`, ``--change``)."""
