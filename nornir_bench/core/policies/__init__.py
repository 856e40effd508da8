"""Run policies: one implementation, every runner (see docs/runners.md, "Run policies").

- :mod:`~nornir_bench.core.policies.options`: the options, their defaults and checks;
  :mod:`~nornir_bench.core.policies.exception_types`: the exception types they name;
- :mod:`~nornir_bench.core.policies.hosts`: one host's attempts: deadlines and retries;
- :mod:`~nornir_bench.core.policies.retry`: which failures are retried, after how long;
- :mod:`~nornir_bench.core.policies.plan`: which host starts when: batches, failure limits,
  rate and group limits, the run's deadline; :mod:`~nornir_bench.core.policies.groups`: its
  hosts by group, for the group limits (the runner core's ``Scheduler`` takes hosts from it).
"""
