"""The dispatch book of the runners whose hosts run elsewhere (runners/_remote/book.py), without
a runner: which host goes where, places taken and given back, hosts waiting for the worker that
keeps their connections."""

from __future__ import annotations

from nornir_bench.core.policies.options import RunPolicy
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.runners._remote.book import DispatchBook
from tests.conftest import make_nornir


def book(hosts: int, holders: dict[str, str], per_worker: int = 2) -> DispatchBook[str]:
    nr = make_nornir("threadpool", hosts=hosts)
    plan = HostPlan(list(nr.inventory.hosts.values()), RunPolicy.build("test", {}))
    made: DispatchBook[str] = DispatchBook(plan, holders, per_worker)
    for worker in ("a", "b"):
        made.add(worker)
    return made


def test_a_host_whose_connections_a_worker_keeps_waits_for_that_worker_and_goes_first() -> None:
    dispatch = book(6, {"dev0": "b", "dev1": "b", "dev2": "b"})
    assert dispatch.take("a", 2) == [3, 4]  # dev0-2 wait for b, which keeps theirs
    assert dispatch.take("b", 2) == [0, 1]  # b's own first
    dispatch.sent("b", [0, 1], 0.0)
    assert dispatch.room("b") == 0 and dispatch.waiting()
    assert dispatch.take("a", 2) == [5]  # the plan is empty; dev2 still waits for b
    dispatch.back(0)
    dispatch.settled(0, failed=False)
    assert dispatch.room("b") == 1 and dispatch.take("b", 2) == [2]


def test_a_worker_gone_or_retiring_lets_the_hosts_waiting_for_it_go_anywhere() -> None:
    dispatch = book(4, {"dev0": "b", "dev1": "b"}, per_worker=4)
    assert dispatch.take("a", 4) == [2, 3]
    dispatch.sent("a", [2, 3], 1.0)
    dispatch.release("b")  # retiring: it takes no more, and its hosts go to any worker
    assert dispatch.room("b") == 0 and dispatch.take("a", 4) == [0, 1]
    dispatch.sent("a", [0, 1], 2.0)
    dispatch.back(2)
    assert dispatch.remove("a") == [0, 1, 3]  # what it had out, in order, now out nowhere
    assert dispatch.out == {}


def test_places_free_as_hosts_end_and_once_only_when_their_results_come() -> None:
    dispatch = book(4, {}, per_worker=3)
    dispatch.sent("a", dispatch.take("a", 3), 0.0)
    assert dispatch.room("a") == 0
    assert dispatch.ended(0) and not dispatch.ended(0)  # its place is free, once
    assert dispatch.room("a") == 1
    assert dispatch.back(0) == "a" and dispatch.room("a") == 1  # not freed twice
    dispatch.move(1, "b")  # Dask ran its chunk on b after a died
    assert (dispatch.room("a"), dispatch.room("b"), dispatch.out[1]) == (2, 2, "b")
    assert dispatch.back(1) == "b" and dispatch.room("b") == 3
