"""The sides of a comparison measured in turn, so that the machine's drift hits them alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["alternate"]

T = TypeVar("T")


def alternate(
    sides: Mapping[str, Callable[[], T]], repeat: int, *, warm: bool = False,
    mirror: bool = False,
) -> dict[str, list[T]]:
    """Each side called once a round, in turn, for ``repeat`` rounds: A B A B ...; with
    ``mirror``, every other round backwards (A B B A ...), so that no side always follows the
    same one. With ``warm``, each side is called once first, its result dropped (imports,
    workers started, caches filled).

    Returns:
        Each side's results, in the order of the rounds.
    """
    if warm:
        for call in sides.values():
            call()
    names = list(sides)
    got: dict[str, list[T]] = {name: [] for name in names}
    for round_ in range(repeat):
        for name in reversed(names) if mirror and round_ % 2 else names:
            got[name].append(sides[name]())
    return got
