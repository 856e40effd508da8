"""A plain CPU loop of ``loops`` turns (the spec): the machine's ceiling is measured with it
(:mod:`harness.ceiling`)."""

from __future__ import annotations

import sys


def spin(loops: int) -> None:
    for _ in range(loops):
        pass


if __name__ == "__main__":
    spin(int(sys.argv[1]))
