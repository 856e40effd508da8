"""The dispatch book of the runners whose hosts run elsewhere (runners/_remote/book.py), without
a runner: which host goes where, places taken and given back, hosts waiting for the worker that
keeps their connections."""

from __future__ import annotations

from nornir.core.task import Result, Task

from nornir_bench.core.policies.options import RunPolicy
from nornir_bench.runners._core.lifecycle import Lifecycle
from nornir_bench.runners._core.limiter import InFlight
from nornir_bench.runners._core.scheduler import Scheduler
from nornir_bench.runners._remote.book import DispatchBook
from tests.conftest import make_nornir


def hello(task: Task) -> Result:
    return Result(host=task.host)


def scheduler(hosts: int) -> Scheduler:
    """A run's scheduler, as a remote run makes it (its places: the run's hosts)."""
    nr = make_nornir("threadpool", hosts=hosts)
    task = Task(hello, nr, global_dry_run=False, processors=nr.processors)
    policy = RunPolicy.build("test", {})
    run = Lifecycle(task, list(nr.inventory.hosts.values()), policy, planned=True)
    return Scheduler(run, InFlight(hosts))


def book(hosts: int, holders: dict[str, str], per_worker: int = 2) -> DispatchBook[str]:
    made: DispatchBook[str] = DispatchBook(scheduler(hosts), holders, per_worker)
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


def sited(sites: list[str | None], serves: dict[str, set[str]], per_worker: int = 2) -> (
    DispatchBook[str]
):
    made: DispatchBook[str] = DispatchBook(scheduler(len(sites)), {}, per_worker, sites)
    for worker, its in serves.items():
        made.add(worker, serves=its)
    return made


def test_a_host_of_a_site_goes_only_to_a_worker_serving_it() -> None:
    dispatch = sited(["b", "a", None, "b", "a"], {"wa": {"a"}, "wb": {"b"}}, per_worker=4)
    assert dispatch.take("wa", 4) == [1, 2, 4]  # b's hosts wait for wb; no site: anywhere
    assert dispatch.waiting()
    assert dispatch.take("wb", 4) == [0, 3]
    assert dispatch.unserved() == [] and not dispatch.waiting()


def test_a_site_no_worker_serves_has_its_hosts_unserved_and_the_others_go_on() -> None:
    dispatch = sited(["a", "c", "a", "c"], {"wa": {"a"}})
    assert dispatch.take("wa", 2) == [0, 2]
    assert dispatch.unserved() == [(1, "c")]
    assert dispatch.unserved() == []  # once
    assert dispatch.take("wa", 2) == [] and dispatch.unserved() == [(3, "c")]
    assert not dispatch.waiting()


def test_the_last_worker_of_a_site_gone_leaves_its_waiting_hosts_unserved() -> None:
    dispatch = sited(["a", "b", "b", "b"], {"wa": {"a"}, "wb": {"b"}, "wb2": {"b"}}, 1)
    assert dispatch.take("wa", 1) == [0]
    dispatch.sent("wa", [0], 0.0)
    assert dispatch.take("wb", 1) == [1]
    dispatch.sent("wb", [1], 0.0)
    assert dispatch.take("wa", 1) == []  # 2 and 3 wait for b's workers
    dispatch.release("wb2")  # retiring: b still has wb
    assert dispatch.unserved() == []
    assert dispatch.remove("wb") == [1]  # the last of b: what waits for it cannot run
    assert dispatch.unserved() == [(2, "b"), (3, "b")]
    dispatch.give_back([1])  # never ran: to a worker of its site, and there is none
    assert dispatch.unserved() == [(1, "b")] and not dispatch.waiting()


def test_hosts_given_back_go_first_to_a_worker_of_their_site() -> None:
    dispatch = sited(["a", "b", "a", "a"], {"wa": {"a"}, "wab": {"a", "b"}}, per_worker=2)
    assert dispatch.take("wa", 2) == [0, 2]
    dispatch.sent("wa", [0, 2], 0.0)
    dispatch.give_back(dispatch.remove("wa"))
    assert dispatch.take("wab", 2) == [0, 2]  # given back, ahead of the plan's
    assert dispatch.take("wab", 2) == [1, 3]
