"""The runner core: what every runner shares, so that a runner is its transport and nothing else.

- :mod:`.lifecycle`: one run from its first host to its last (the result, the plan, Ctrl-C, a
  task's ``SystemExit``, never-run hosts, closing), around a :class:`~.lifecycle.Transport`;
- :mod:`.scheduler`: one run's dispatch, no I/O: what a runner's driver does next (start this
  host, take this one over, wait, done), each end recorded;
- :mod:`.limiter`: the hosts in flight at once, sized once, the open files fitted inside;
- :mod:`.blocking`: deadlines of blocking calls, watched from the run's main thread, and a
  thread's life on a scheduler's driver;
- :mod:`.queue`: the hosts waiting to start when no policy orders them;
- :mod:`.results`: the result a run fills in.

Runners whose hosts run elsewhere add ``runners/_remote`` (the dispatch book, the parent's
loop, what crosses to a worker and back).
"""
