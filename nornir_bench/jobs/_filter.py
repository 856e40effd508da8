"""A job's ``filter`` section, and a step's: which hosts it runs on.

The job's ``filter`` narrows the inventory; a step's narrows the job's hosts further for that
step alone (:mod:`~nornir_bench.jobs._steps`). Both take the same keys, read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nornir.core.filter import F
from ruamel.yaml.comments import CommentedMap

from nornir_bench.jobs._job_file import JobFile
from nornir_bench.jobs._signatures import show

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["FILTER_KEYS", "HostFilter", "read_filter"]

FILTER_KEYS = ("hosts", "groups", "platform")


@dataclass(frozen=True)
class HostFilter:
    """Which hosts a job runs on: all of them unless narrowed.

    Each field is a list of accepted values (any of them); fields combine with "and".
    """

    hosts: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    def apply(self, nr: Nornir) -> Nornir:
        if self.hosts:
            nr = nr.filter(F(name__any=list(self.hosts)))
        if self.groups:
            nr = nr.filter(F(groups__any=list(self.groups)))
        if self.platforms:
            nr = nr.filter(F(platform__any=list(self.platforms)))
        return nr


# Public as nornir_bench.jobs.load.HostFilter, where it was defined first (set after the
# class is made: the dataclass looks its module up while making it, and importing this module
# alone must work).
HostFilter.__module__ = "nornir_bench.jobs.load"


def read_filter(job: JobFile, parent: CommentedMap, what: str = "filter") -> HostFilter:
    """``parent``'s ``filter`` section (``what`` in messages): each key a name or a list."""
    node = job.mapping(parent, "filter")
    job.keys(node, FILTER_KEYS, what)
    values: dict[str, tuple[str, ...]] = {}
    for key in FILTER_KEYS:
        value = job.plain(node.get(key), f"{what}.{key}") if key in node else []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise job.error(
                node, key, f"{what} {key} must be a name or a list of names, got {show(value)}"
            )
        values[key] = tuple(value)
    return HostFilter(
        hosts=values["hosts"], groups=values["groups"], platforms=values["platform"]
    )
