"""What a statement imports, marked off from the interpreter's own start (bench_startup runs
this under ``-X importtime``): a line ``-- the statement starts --`` on standard error, then
either ``import MODULE`` or ``run SCRIPT ARGS...`` (the script run as ``__main__``, as its
command line runs it). Run by its path, not as ``-m harness.children...``: the harness's own
imports would come before the mark."""

from __future__ import annotations

import importlib
import runpy
import sys

START = "-- the statement starts --"


def main(argv: list[str]) -> None:
    what, target, *args = argv
    sys.stderr.write(START + "\n")
    if what == "import":
        importlib.import_module(target)
    else:
        sys.argv = [target, *args]
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
