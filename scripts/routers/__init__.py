"""The parts of scripts/bench_routers.py, each a module: the lab's start and stop
(:mod:`.lab_times`, what a lab leaves: :mod:`.leftovers`), logins (:mod:`.logins`), memory per
session (:mod:`.memory`), a fleet (:mod:`.fleet`), changes (:mod:`.changes`), session logs
(:mod:`.session_logs`), a CLI killed mid-change (:mod:`.dead_cli`). The lab they run on is
:mod:`harness.lab`'s."""
