"""The benchmarks' child programs, each run as ``python -m harness.children.NAME SPEC``
(:mod:`harness.child`): a JSON spec in, JSON lines out."""
