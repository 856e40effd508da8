"""The runner suites share one real Dask cluster, started once for the session: the ``dask``
runner of the conformance and policy suites reaches it by address (tests/dask_cluster.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.dask_cluster import shared_address, stop_shared


@pytest.fixture(scope="session", autouse=True)
def shared_dask_cluster() -> Iterator[None]:
    # Started before the first test's leak checks look at this process's children: they are
    # the session's, not a test's.
    shared_address()
    yield
    gc.collect()  # runners not closed by their tests let go of the cluster first
    stop_shared()
