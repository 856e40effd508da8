"""A run's hosts by group, for the group limits (``group_limits``, ``group_max_failures``):
each host's counters of the groups whose limit can act on the run, and :func:`in_flight_cap`,
the most hosts in flight those limits allow. :class:`~nornir_bench.core.policies.plan.HostPlan`
counts on them."""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.core.policies.options import GroupLimit

__all__ = ["GroupFailures", "GroupSlots", "group_values", "in_flight_cap", "per_host_counters"]

# Attributes read from the Host object itself; any other key is looked up in the host's data
# (with its groups' and the defaults', as ``host.get`` does).
_HOST_ATTRIBUTES = ("name", "hostname", "platform", "port", "username")


class GroupSlots:
    """The hosts of one group in flight, and those waiting for room in it."""

    __slots__ = ("in_flight", "label", "limit", "waiting")

    def __init__(self, label: str, limit: int) -> None:
        self.label = label
        self.limit = limit
        self.in_flight = 0
        self.waiting: deque[int] = deque()


class GroupFailures:
    """The failed hosts of one group, and whether it has failed past its limit."""

    __slots__ = ("failed", "label", "limit")

    def __init__(self, label: str, limit: int) -> None:
        self.label = label
        self.limit = limit
        self.failed = 0

    @property
    def closed(self) -> bool:
        return self.failed > self.limit


def group_values(host: Host, key: str, ancestry: dict[int, list[str]]) -> list[str]:
    """The values of ``key`` for ``host``: its groups' names (parents included), or the value
    of its attribute or data key. ``ancestry`` caches each group's names with its parents'
    (walking nornir's groups costs microseconds a host, 10,000 hosts at every run)."""
    if key != "group":
        value = getattr(host, key) if key in _HOST_ATTRIBUTES else host.get(key)
        return [] if value is None else [str(value)]
    names: list[str] = []
    for group in host.groups:
        known = ancestry.get(id(group))
        if known is None:
            known = ancestry[id(group)] = [group.name] + [g.name for g in group.extended_groups()]
        names += [name for name in known if name not in names]
    return names


_Counter = TypeVar("_Counter", GroupSlots, GroupFailures)


def per_host_counters(
    hosts: Sequence[Host],
    limits: tuple[GroupLimit, ...],
    make: Callable[[str, int], _Counter],
    *,
    most: float = math.inf,
) -> list[tuple[_Counter, ...]] | None:
    """For each host, the counters of the groups it belongs to whose limit can act: below
    ``most`` (what the group can ever count: the run's hosts in flight, say) and below the
    group's own size. ``None`` when no group's can."""
    most = min(most, len(hosts))
    limits = tuple(rule for rule in limits if rule.smallest < most)
    if not limits:  # no walk over the hosts' groups
        return None
    made: dict[tuple[str, str], _Counter] = {}
    sizes: Counter[tuple[str, str]] = Counter()  # each group's hosts in the run
    per_host: list[tuple[_Counter, ...]] = []
    ancestry: dict[int, list[str]] = {}
    for host in hosts:
        mine: list[_Counter] = []
        for rule in limits:
            for value in group_values(host, rule.key, ancestry):
                limit = rule.limit(value)
                if limit is None or limit >= most:
                    continue
                key = (rule.key, value)
                counter = made.get(key)
                if counter is None:
                    label = f"group {value!r}" if rule.key == "group" else f"{rule.key} {value!r}"
                    counter = made[key] = make(label, limit)
                sizes[key] += 1
                mine.append(counter)
        per_host.append(tuple(mine))
    idle = {id(counter) for key, counter in made.items() if counter.limit >= sizes[key]}
    if len(idle) == len(made):
        return None
    if idle:  # a group no bigger than its limit never reaches it
        per_host = [tuple(c for c in mine if id(c) not in idle) for mine in per_host]
    return per_host


def in_flight_cap(hosts: Sequence[Host], limits: tuple[GroupLimit, ...]) -> int | None:
    """The most of ``hosts`` that group ``limits`` let be in flight at once; ``None``: no
    limit applies. An upper bound: a host in two limited groups counts in each."""
    ancestry: dict[int, list[str]] = {}
    caps = []
    for rule in limits:
        free = 0
        counts: dict[str, int] = {}
        for host in hosts:
            limited = [
                value
                for value in group_values(host, rule.key, ancestry)
                if rule.limit(value) is not None
            ]
            free += not limited
            for value in limited:
                counts[value] = counts.get(value, 0) + 1
        if counts:
            caps.append(free + sum(min(n, rule.limit(v) or n) for v, n in counts.items()))
    return min(caps) if caps else None
