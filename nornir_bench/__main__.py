"""``python -m nornir_bench``: the ``nornir-bench`` command."""

from nornir_bench.cli import entry

if __name__ == "__main__":
    entry()
