"""A busy process: spins on a core until its parent is gone (checked now and then, so that it
ends even if the script that started it is killed outright)."""

from __future__ import annotations

import os


def spin() -> None:
    parent = os.getppid()
    while os.getppid() == parent:
        sum(range(10**6))


if __name__ == "__main__":
    spin()
