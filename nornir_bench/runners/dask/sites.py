"""Workers at each site: a host whose inventory sets ``site`` runs only on a Dask worker
started for that site.

A site's management network is often reachable only from the site, and the workers that reach
its devices sit there. A worker says which sites it serves through Dask's worker resources,
one ``site:NAME`` resource a site (any amount: nothing is counted)::

    dask worker tls://scheduler.example.net:8786 --resources "site:paris=1"

A host's site comes from its data, its groups' or the defaults' (``site: paris``, as nornir's
``host.get`` finds it). Sites apply once any worker of the scheduler serves one: a host of a
site no worker serves then fails at once with
:class:`~nornir_bench.core.exceptions.NoWorkerForSite`, and the other sites run; a host with
no site runs on any worker. An embedded cluster has no sites; a ``site`` that is not a name
is refused whatever the cluster (:func:`host_sites`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["SITE", "SITE_RESOURCE", "SiteError", "host_sites", "where_it_may_run", "worker_sites"]

SITE = "site"
"""The inventory data key naming a host's site (host, group or defaults)."""

SITE_RESOURCE = "site:"
"""The start of the Dask worker resource naming a site the worker serves."""

_MAX_SITE_LENGTH = 200


class SiteError(NornirBenchError, ValueError):
    """A host's ``site`` that is not a site's name. One line, naming the host."""


def worker_sites(resources: Mapping[str, Any] | None) -> frozenset[str]:
    """The sites a worker with Dask ``resources`` serves."""
    start = len(SITE_RESOURCE)
    return frozenset(
        name[start:]
        for name in resources or ()
        if isinstance(name, str) and name.startswith(SITE_RESOURCE) and len(name) > start
    )


def host_sites(hosts: Iterable[Host]) -> list[str | None]:
    """Each host's site, in order (``None``: none set).

    Raises:
        SiteError: a site that is not a non-empty string without spaces, naming the host.
    """
    found: list[str | None] = []
    for host in hosts:
        site = host.get(SITE)
        if site is not None and not _is_name(site):
            raise SiteError(
                f"host {host.name!r}: {SITE} must name a site, a string without spaces such "
                f"as 'paris' (as its Dask workers' resource 'site:paris'), got {site!r:.100}"
            )
        found.append(site)
    return found


def _is_name(site: object) -> bool:
    return (
        isinstance(site, str)
        and 0 < len(site) <= _MAX_SITE_LENGTH
        and not any(c.isspace() or c in ",=" for c in site)
    )


def where_it_may_run(worker: str) -> dict[str, Any]:
    """Dask's restrictions for a chunk sent to ``worker``: there alone. A preference (Dask's
    ``allow_other_workers``) is dropped by Dask's work stealing once the worker is busy and
    another idle: the chunk's hosts would log in again there, leaving their sessions open on
    the first, and one of another site may not reach their devices. Once ``worker`` is gone,
    the scheduler plugin of :mod:`~nornir_bench.runners.dask.reruns` lets the chunk run on
    another worker serving the same sites."""
    return {"workers": [worker], "allow_other_workers": False}
