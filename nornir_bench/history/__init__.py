"""The fleet's configuration history: a git repository with one file per host, a commit per
backup run (``nornir-bench backup``), written with pygit2 (libgit2; docs/backup.md says why).

- :mod:`~nornir_bench.history.repository`: the repository opened or made, a run's files
  written and committed, packed as git's ``gc`` would;
- :mod:`~nornir_bench.history.lock`: one writer at a time, the others waiting or told who
  holds it;
- :mod:`~nornir_bench.history.log`: a host's history, the commits that changed its file with
  their diffs (``nornir-bench history HOST``);
- :mod:`~nornir_bench.history.push`: the branch pushed to a remote (``--push``);
- :mod:`~nornir_bench.history.at_commit`: a host's file at a commit, what a restore replaces
  to (``send_config``'s ``from_history``);
- :mod:`~nornir_bench.history.volatile`: the lines a device rewrites on its own (the time of
  its last change), left out of what is kept.

Below the tasks in the layers: a change reads it; it imports only :mod:`nornir_bench.core`.
"""
