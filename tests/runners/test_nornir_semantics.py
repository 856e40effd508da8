"""nornir's own tests of running tasks, restated on every runner, nornir's ``threaded`` the
reference.

nornir 3.6.0's tests run on one runner of their own; these say the same in our words, on a
small SimpleInventory shaped as nornir's test inventory is (hosts in groups, groups in parent
groups, a host in none, connection options on a host, a parent group and the defaults), with
our own tasks and a connection plugin registered at run time. Each runner runs each behaviour
with plain tasks, and with their async twins where it runs ``async def`` tasks. Where
test_conformance.py or test_connections.py of this folder already states a behaviour, it is
not stated again here:

| nornir 3.6.0's test | where: here, or C (test_conformance.py), N (test_connections.py) |
|---|---|
| core/test_tasks.py, class Test | |
| test_task | test_results_carry_what_the_task_put_in_them |
| test_sub_task | test_results_carry_what_the_task_put_in_them |
| test_skip_failed_host | test_a_host_failed_in_a_subtask_sits_out_the_next_run |
| test_run_on | C test_failed_hosts_on_good_on_failed_like_nornir |
| test_severity | test_severity_levels_as_nornir_sets_them |
| test_dry_run | C test_dry_run_passes_through_as_nornir_passes_it |
| test_subtask_exception_no_capture | test_a_failed_subtask_fails_its_parent_caught_or_not |
| test_subtask_exception_capture | test_a_failed_subtask_fails_its_parent_caught_or_not |
| core/test_connections.py, class Test | |
| test_open_and_close_connection | test_a_task_opens_and_closes_its_hosts_connection |
| test_open_connection_twice | test_a_task_opens_and_closes_its_hosts_connection |
| test_close_not_opened_connection | test_a_task_opens_and_closes_its_hosts_connection |
| test_failed_connection | test_a_connection_that_fails_to_open_is_not_kept |
| test_context_manager | N test_host_connections_show_what_the_run_keeps_and_close_as_nornirs_do |
| test_validate_params_simple | test_connection_parameters_from_host_groups_defaults |
| test_validate_params_overrides | test_connection_parameters_from_host_groups_defaults |
| test_validate_params_overrides_groups | test_connection_parameters_from_host_groups_defaults |
| core/test_processors.py, class Test | |
| test_processor | test_processor_hooks_see_each_tasks_parents_and_outcome |
| test_processor_subtasks | test_processor_hooks_see_each_tasks_parents_and_outcome |
| plugins/processors/test_serial.py, class TestSerialRunner | |
| test_blocking_task_single_thread | C test_runs_num_workers_hosts_at_once_and_never_more (*) |
| test_failing_task_simple_singlethread | test_hosts_fail_with_their_own_exceptions |
| test_failing_task_complex_singlethread | test_hosts_fail_with_their_own_exceptions |
| plugins/processors/test_threaded.py, class Test | |
| test_blocking_task_multithreading | C test_runs_num_workers_hosts_at_once_and_never_more (*) |
| test_failing_task_simple_multithread | test_hosts_fail_with_their_own_exceptions |
| test_failing_task_complex_multithread | test_hosts_fail_with_their_own_exceptions |
| test_failing_task_complex_multithread_raise_on_error | test_hosts_fail_with_their_own_exceptions |
| | and C test_raise_on_error_like_nornir |
| test_change_data_in_thread | test_host_data_a_run_changes_is_what_the_next_run_reads |
| | and C test_host_data_changes_visible_after_run |
| core/test_pickle.py, class Test | |
| test_pickle | C test_results_pickle_as_nornirs_do |
| core/test_registered_plugins.py, class Test | |
| test_registered_runners | C test_loaded_through_nornirs_entry_point (**) |

(*) nornir's two measure a run's wall clock; restated as "never more than ``num_workers``
hosts at once, and that many", counted with a barrier. Not on processpool, whose hosts run
where the test's counter cannot see them.
(**) nornir's asserts its own two runners are the ones registered; ours, that each of ours
loads through the same entry point group.

Left out, as they run no task: nornir's tests of the configuration, ``InitNornir``, filters,
the inventory, the connection plugin register and the inventory plugins.
"""

from __future__ import annotations

import asyncio
import logging
import textwrap
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.configuration import Config
from nornir.core.exceptions import (
    ConnectionAlreadyOpen,
    ConnectionNotOpen,
    NornirExecutionError,
    NornirSubTaskError,
)
from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Result, Task

from nornir_bench import arun_subtask
from tests.conftest import result_view
from tests.devices import nornir_on
from tests.runners.test_conformance import ASYNC, SYNC, THREADED, Runner, each_kind, each_runner
from tests.runners.test_connections import registered

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

HOSTS = ["edge1", "edge2", "core3", "core4", "lone5", "lab6"]
FAILING = "core3"
"""The host the tasks given ``fail_on=[FAILING]`` fail on."""
CONNECTED = "edge2"
"""The host most connection tests run on."""


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    """A SimpleInventory of ``HOSTS``: two in ``edge``, whose parent group is ``region``, two in
    ``core`` (core4 in ``region`` too), lone5 in no group, lab6 in ``lab``, whose parents are
    an empty group and ``region``. Connection options on a host, on ``region`` and in the
    defaults."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    (folder / "hosts.yaml").write_text(textwrap.dedent("""\
        edge1:
          hostname: 127.0.0.1
          port: 10001
          platform: eos
          groups: [edge]
          connection_options:
            dummy:
              hostname: dummy-of-edge1
              extras: {source: edge1}
        edge2:
          hostname: 127.0.0.1
          port: 10002
          platform: junos
          groups: [edge]
          connection_options:
            dummy2:
              username: dummy2-of-edge2
        core3:
          port: 10003
          groups: [core]
        core4:
          port: 10004
          groups: [region, core]
        lone5:
          port: 10005
          groups: []
        lab6:
          port: 10006
          groups: [lab]
          data: {site: lab-bench}
        """))
    (folder / "groups.yaml").write_text(textwrap.dedent("""\
        region:
          password: from-region
          data: {site: north}
          connection_options:
            dummy:
              hostname: dummy-of-region
              extras: {source: region}
            dummy2:
              hostname: dummy2-of-region
              extras: {source: region}
        edge:
          password: from-edge
          groups: [region]
        core:
          data: {site: south}
        empty: {}
        lab:
          groups: [empty, region]
        """))
    (folder / "defaults.yaml").write_text(textwrap.dedent("""\
        hostname: localhost
        username: operator
        password: from-defaults
        platform: linux
        data: {site: nowhere}
        connection_options:
          dummy:
            hostname: dummy-of-defaults
            extras: {source: defaults}
        """))
    return folder


def reference(inventory: Path) -> Nornir:
    return nornir_on(inventory, THREADED.name)


def on(runner: Runner, inventory: Path) -> Nornir:
    """A Nornir on ``inventory`` with ``runner``: processpool's kept for the module."""
    return runner.kept_in(nornir_on(inventory, runner.name, **runner.options))


def run(nr: Nornir, kind: str, task: Callable[..., Any], **params: Any) -> AggregatedResult:
    """``nr.run`` of ``task``, or of its async twin ``a<name>`` under ``task``'s name."""
    chosen = globals()[f"a{task.__name__}"] if kind == ASYNC else task
    return nr.run(task=chosen, name=task.__name__, **params)


def outcome(result: AggregatedResult) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What a user sees of a run: each host's results, and the ``stdout`` a task gave them."""
    return [
        (host, [(*row, getattr(r, "stdout", None)) for row, r in zip(rows, multi, strict=True)])
        for host, multi in result.items()
        for rows in [result_view(multi)]
    ]


class DeviceError(Exception):
    """The tasks' own exception: it must come back as this class, not as a look-alike."""


def reports_name(task: Task, fail_on: list[str] | None = None) -> Result:
    """A Result with an attribute of the task's own (``stdout``), as nornir's tasks give."""
    if task.host.name in (fail_on or []):
        raise DeviceError(task.host.name)
    return Result(host=task.host, stdout=task.host.name)


async def areports_name(task: Task, fail_on: list[str] | None = None) -> Result:
    await asyncio.sleep(0)
    return reports_name(task, fail_on)


def runs_reports_name(task: Task, fail_on: list[str] | None = None) -> None:
    task.run(reports_name, fail_on=fail_on)


async def aruns_reports_name(task: Task, fail_on: list[str] | None = None) -> None:
    await arun_subtask(task, areports_name, name="reports_name", fail_on=fail_on)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_results_carry_what_the_task_put_in_them(
    runner: Runner, kind: str, inventory: Path
) -> None:
    def seen(nr: Nornir, kind: str) -> list[Any]:
        return [outcome(run(nr, kind, task)) for task in (reports_name, runs_reports_name)]

    ours = seen(on(runner, inventory), kind)
    assert ours == seen(reference(inventory), SYNC)
    top, nested = ours  # below: each result's name and stdout
    assert [(host, [(r[0], r[-1]) for r in rows]) for host, rows in top] == [
        (host, [("reports_name", host)]) for host in HOSTS
    ]
    assert [(host, [(r[0], r[-1]) for r in rows]) for host, rows in nested] == [
        (host, [("runs_reports_name", None), ("reports_name", host)]) for host in HOSTS
    ]


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_a_host_failed_in_a_subtask_sits_out_the_next_run(
    runner: Runner, kind: str, inventory: Path
) -> None:
    def seen(nr: Nornir, kind: str) -> list[Any]:
        first = run(nr, kind, runs_reports_name, fail_on=[FAILING])
        failed = sorted(nr.data.failed_hosts)
        second = run(nr, kind, reports_name)
        return [outcome(first), sorted(first.failed_hosts), failed, outcome(second), second]

    ours = seen(on(runner, inventory), kind)
    assert ours[:4] == seen(reference(inventory), SYNC)[:4]
    _, failed_in_run, failed_in_nornir, _, second = ours
    assert failed_in_run == failed_in_nornir == [FAILING]
    assert list(second) == [h for h in HOSTS if h != FAILING]
    assert not second.failed


def reports_name_at_debug(task: Task, fail_on: list[str] | None = None) -> None:
    task.run(reports_name, fail_on=fail_on, severity_level=logging.DEBUG)


async def areports_name_at_debug(task: Task, fail_on: list[str] | None = None) -> None:
    await arun_subtask(
        task, areports_name, name="reports_name", fail_on=fail_on, severity_level=logging.DEBUG
    )


def fails_quietly(task: Task) -> Result:
    """Fails without raising."""
    return Result(host=task.host, stdout=task.host.name, failed=True)


async def afails_quietly(task: Task) -> Result:
    await asyncio.sleep(0)
    return fails_quietly(task)


def fails_critically(task: Task) -> Result:
    return Result(
        host=task.host, stdout=task.host.name, failed=True, severity_level=logging.CRITICAL
    )


async def afails_critically(task: Task) -> Result:
    await asyncio.sleep(0)
    return fails_critically(task)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_severity_levels_as_nornir_sets_them(runner: Runner, kind: str, inventory: Path) -> None:
    """INFO unless the run says otherwise; a subtask takes its parent's unless it says its
    own; a failed task is at ERROR whatever the run said, unless its Result says its own."""

    def levels(nr: Nornir, kind: str) -> list[dict[str, list[int]]]:
        runs = [
            (reports_name, {}),
            (reports_name, {"severity_level": logging.WARNING}),
            (runs_reports_name, {"severity_level": logging.WARNING}),
            (reports_name_at_debug, {"fail_on": [FAILING], "severity_level": logging.WARNING}),
            (fails_quietly, {}),
            (fails_quietly, {"severity_level": logging.WARNING}),
            (fails_critically, {}),
        ]
        seen = []
        for task, params in runs:
            result = run(nr, kind, task, **params)
            seen.append({h: [r.severity_level for r in multi] for h, multi in result.items()})
            nr.data.reset_failed_hosts()
        return seen

    ours = levels(on(runner, inventory), kind)
    assert ours == levels(reference(inventory), SYNC)
    info, warning, error, critical = logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL
    everyone = dict.fromkeys(HOSTS)
    assert ours == [
        {h: [info] for h in everyone},
        {h: [warning] for h in everyone},
        {h: [warning, warning] for h in everyone},
        {h: [error, error] if h == FAILING else [warning, logging.DEBUG] for h in everyone},
        {h: [error] for h in everyone},
        {h: [error] for h in everyone},
        {h: [critical] for h in everyone},
    ]


def fails_in_subtask(task: Task, fail_on: list[str]) -> str:
    task.run(reports_name, fail_on=fail_on)
    return "not reached"


async def afails_in_subtask(task: Task, fail_on: list[str]) -> str:
    await arun_subtask(task, areports_name, name="reports_name", fail_on=fail_on)
    return "not reached"


def catches_failed_subtask(task: Task, fail_on: list[str]) -> str:
    try:
        task.run(reports_name, fail_on=fail_on)
    except NornirSubTaskError:
        return "caught"
    return "not reached"


async def acatches_failed_subtask(task: Task, fail_on: list[str]) -> str:
    try:
        await arun_subtask(task, areports_name, name="reports_name", fail_on=fail_on)
    except NornirSubTaskError:
        return "caught"
    return "not reached"


@pytest.mark.parametrize("task", [fails_in_subtask, catches_failed_subtask],
                         ids=lambda task: task.__name__)
@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_a_failed_subtask_fails_its_parent_caught_or_not(
    runner: Runner, kind: str, task: Callable[..., Any], inventory: Path
) -> None:
    """Not caught, the parent fails with NornirSubTaskError; caught, the parent's own result is
    what it returned; either way the subtask keeps its own exception, and the host fails."""

    def seen(nr: Nornir, kind: str) -> tuple[AggregatedResult, list[Any]]:
        result = run(nr.filter(name=FAILING), kind, task, fail_on=[FAILING])
        return result, outcome(result)

    result, ours = seen(on(runner, inventory), kind)
    assert ours == seen(reference(inventory), SYNC)[1]
    multi = result[FAILING]
    assert list(result) == [FAILING] and multi.failed and result.failed
    parent, sub = multi
    if task is fails_in_subtask:
        assert type(parent.exception) is NornirSubTaskError
    else:
        assert parent.exception is None and parent.result == "caught" and not parent.failed
    assert type(sub.exception) is DeviceError
    assert str(sub.exception) == FAILING


class Dummy:
    """A connection plugin that keeps what it was opened with (made for each test by
    :func:`dummy_plugin`, so that a worker process can only know it from this one)."""

    def open(self, **params: Any) -> None:  # nornir passes them all by keyword
        params.pop("configuration")
        self.connection = True
        self.opened_with = params

    def close(self) -> None:
        self.connection = False


class RefusedByDevice(Exception):
    """What the failing connection plugin raises when opened."""


def dummy_plugin(refuses: bool = False) -> type:
    """A connection plugin class made at run time: :class:`Dummy`, or one that refuses to
    open."""

    class Refuses(Dummy):
        def open(self, **params: Any) -> None:
            raise RefusedByDevice(f"no connection to {params['hostname']}")

    return type("RunTimeDummy", (Refuses if refuses else Dummy,), {})


PLUGINS = {"dummy": False, "dummy2": False, "dummy_plain": False, "refuses": True}
"""The connection plugins the tests register: name -> whether it refuses to open."""


@pytest.fixture
def plugins() -> Iterator[None]:
    with ExitStack() as stack:
        for name, refuses in PLUGINS.items():
            stack.enter_context(registered(name, dummy_plugin(refuses)))
        yield


def opens_and_closes(task: Task, config: Config) -> list[bool]:
    """Whether ``dummy`` is among the host's connections: before, once opened, once closed."""
    seen = ["dummy" in task.host.connections]
    task.host.open_connection("dummy", config)
    seen.append("dummy" in task.host.connections)
    task.host.close_connection("dummy")
    return [*seen, "dummy" in task.host.connections]


def opens_twice(task: Task, config: Config) -> list[Any]:
    """What the second ``open_connection`` raised, then whether ``dummy`` is still there and
    is once closed."""
    task.host.open_connection("dummy", config)
    try:
        task.host.open_connection("dummy", config)
    except ConnectionAlreadyOpen as error:
        raised = type(error)
    else:
        raised = None
    seen: list[Any] = [raised, "dummy" in task.host.connections]
    task.host.close_connection("dummy")
    return [*seen, "dummy" in task.host.connections]


def closes_unopened(task: Task, config: Config) -> list[Any]:
    """What closing a connection never opened raised, and whether it is there then."""
    try:
        task.host.close_connection("dummy")
    except ConnectionNotOpen as error:
        raised: Any = type(error)
    else:
        raised = None
    return [raised, "dummy" in task.host.connections]


async def aopens_and_closes(task: Task, config: Config) -> list[bool]:
    await asyncio.sleep(0)
    return opens_and_closes(task, config)


async def aopens_twice(task: Task, config: Config) -> list[Any]:
    await asyncio.sleep(0)
    return opens_twice(task, config)


async def acloses_unopened(task: Task, config: Config) -> list[Any]:
    await asyncio.sleep(0)
    return closes_unopened(task, config)


OPEN_CLOSE = {
    opens_and_closes: [False, True, False],
    opens_twice: [ConnectionAlreadyOpen, True, False],
    closes_unopened: [ConnectionNotOpen, False],
}


@pytest.mark.parametrize("task", list(OPEN_CLOSE), ids=lambda task: task.__name__)
@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
@pytest.mark.usefixtures("plugins")
def test_a_task_opens_and_closes_its_hosts_connection(
    runner: Runner, kind: str, task: Callable[..., Any], inventory: Path
) -> None:
    def seen(nr: Nornir, kind: str) -> list[Any]:
        result = run(nr.filter(name=CONNECTED), kind, task, config=nr.config)
        host = nr.inventory.hosts[CONNECTED]
        return [outcome(result), result[CONNECTED].result, sorted(host.connections)]

    nr = on(runner, inventory)
    ours = seen(nr, kind)
    assert ours == seen(reference(inventory), SYNC)
    _, what_the_task_saw, left_open = ours
    assert what_the_task_saw == OPEN_CLOSE[task]
    assert left_open == []  # closed in the task: the parent shows no connection either
    nr.close_connections()


def opens_refused(task: Task, config: Config) -> None:
    task.host.open_connection("refuses", config)


async def aopens_refused(task: Task, config: Config) -> None:
    await asyncio.sleep(0)
    opens_refused(task, config)


def lists_connections(task: Task) -> list[str]:
    return sorted(task.host.connections)


async def alists_connections(task: Task) -> list[str]:
    await asyncio.sleep(0)
    return lists_connections(task)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
@pytest.mark.usefixtures("plugins")
def test_a_connection_that_fails_to_open_is_not_kept(
    runner: Runner, kind: str, inventory: Path
) -> None:
    def seen(nr: Nornir, kind: str) -> list[Any]:
        one = nr.filter(name=CONNECTED)
        refused = run(one, kind, opens_refused, config=nr.config)
        in_parent = sorted(nr.inventory.hosts[CONNECTED].connections)
        later = run(one, kind, lists_connections, on_failed=True)
        return [outcome(refused), in_parent, later[CONNECTED].result]

    nr = on(runner, inventory)
    ours = seen(nr, kind)
    assert ours == seen(reference(inventory), SYNC)
    refused, in_parent, later = ours
    assert [(host, [r[7] for r in rows]) for host, rows in refused] == [
        (CONNECTED, ["RefusedByDevice"])
    ]
    assert in_parent == []
    assert later == []  # nor does the next run find it on the host
    error = nr.run(task=opens_refused, config=nr.config, on_failed=True)[CONNECTED].exception
    assert type(error) is RefusedByDevice
    assert str(error) == "no connection to 127.0.0.1"
    nr.close_connections()


def opened_with(task: Task, plugin: str, config: Config) -> dict[str, Any]:
    """What the connection ``plugin`` was opened with, nornir opening it from the host's
    parameters."""
    task.host.get_connection(plugin, config)
    connection: Any = task.host.connections[plugin]
    return dict(connection.opened_with)


async def aopened_with(task: Task, plugin: str, config: Config) -> dict[str, Any]:
    await asyncio.sleep(0)
    return opened_with(task, plugin, config)


OPENED_WITH = {
    # options for it nowhere: the host's own parameters, through its groups and the defaults
    ("edge2", "dummy_plain"): {
        "hostname": "127.0.0.1", "username": "operator", "password": "from-edge",
        "port": 10002, "platform": "junos", "extras": {},
    },
    # options in the host's parent group, which win over the defaults' options
    ("edge2", "dummy"): {
        "hostname": "dummy-of-region", "username": "operator", "password": "from-edge",
        "port": 10002, "platform": "junos", "extras": {"source": "region"},
    },
    # the host's own options for it, the rest from its parent group's options
    ("edge2", "dummy2"): {
        "hostname": "dummy2-of-region", "username": "dummy2-of-edge2", "password": "from-edge",
        "port": 10002, "platform": "junos", "extras": {"source": "region"},
    },
    # the host's own options, which win over its parent group's
    ("edge1", "dummy"): {
        "hostname": "dummy-of-edge1", "username": "operator", "password": "from-edge",
        "port": 10001, "platform": "eos", "extras": {"source": "edge1"},
    },
}
"""(host, connection plugin) -> what nornir opens that host's connection with."""


@pytest.mark.parametrize(
    ("host", "plugin"), [pytest.param(*key, id="-".join(key)) for key in OPENED_WITH]
)
@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
@pytest.mark.usefixtures("plugins")
def test_connection_parameters_from_host_groups_defaults(
    runner: Runner, kind: str, host: str, plugin: str, inventory: Path
) -> None:
    def seen(nr: Nornir, kind: str) -> list[Any]:
        result = run(nr.filter(name=host), kind, opened_with, plugin=plugin, config=nr.config)
        nr.close_connections()
        return [outcome(result), result[host].result]

    ours = seen(on(runner, inventory), kind)
    assert ours == seen(reference(inventory), SYNC)
    assert ours[1] == OPENED_WITH[host, plugin]


def nests(task: Task) -> Result:
    """A subtask, then a subtask running a subtask of its own."""
    task.run(reports_name, fail_on=[FAILING])
    task.run(nested)
    return Result(host=task.host, result=True)


def nested(task: Task) -> Result:
    task.run(reports_name, fail_on=[FAILING])
    return Result(host=task.host, result=True)


async def anests(task: Task) -> Result:
    await arun_subtask(task, areports_name, name="reports_name", fail_on=[FAILING])
    await arun_subtask(task, anested, name="nested")
    return Result(host=task.host, result=True)


async def anested(task: Task) -> Result:
    await arun_subtask(task, areports_name, name="reports_name", fail_on=[FAILING])
    return Result(host=task.host, result=True)


class Tree:
    """A processor building, per task and host, the tree of subtasks its hooks saw: each
    node says it started, completed and whether it failed; a subtask is placed by walking
    its ``parent_task`` chain, as nornir's test processor does."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def task_started(self, task: Task) -> None:
        self.data[task.name] = {"started": True}

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        self.data[task.name]["completed"] = True

    def task_instance_started(self, task: Task, host: Host) -> None:
        self.data[task.name][host.name] = {"started": True, "subtasks": {}}

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.data[task.name][host.name].update(completed=True, failed=result.failed)

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self._siblings(task, host)[task.name] = {"started": True, "subtasks": {}}

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self._siblings(task, host)[task.name].update(completed=True, failed=result.failed)

    def _siblings(self, task: Task, host: Host) -> dict[str, Any]:
        parents = []
        parent = task.parent_task
        while parent is not None:
            parents.insert(0, parent.name)
            parent = parent.parent_task
        node: dict[str, Any] = self.data[parents[0]][host.name]["subtasks"]
        for name in parents[1:]:
            node = node[name]["subtasks"]
        return node


def leaf(failed: bool = False) -> dict[str, Any]:
    return {"started": True, "subtasks": {}, "completed": True, "failed": failed}


@pytest.mark.parametrize("task", [reports_name, nests], ids=["flat", "nested"])
@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_processor_hooks_see_each_tasks_parents_and_outcome(
    runner: Runner, kind: str, task: Callable[..., Any], inventory: Path
) -> None:
    def tree(nr: Nornir, kind: str) -> dict[str, Any]:
        processor = Tree()
        params = {"fail_on": [FAILING]} if task is reports_name else {}
        run(nr.with_processors([processor]), kind, task, **params)
        return processor.data

    ours = tree(on(runner, inventory), kind)
    assert ours == tree(reference(inventory), SYNC)
    if task is reports_name:
        hosts = {h: leaf(failed=h == FAILING) for h in HOSTS}
    else:
        good = {**leaf(), "subtasks": {
            "reports_name": leaf(), "nested": {**leaf(), "subtasks": {"reports_name": leaf()}},
        }}
        # the failed subtask ends the host's task: the second subtask never starts
        bad = {**leaf(failed=True), "subtasks": {"reports_name": leaf(failed=True)}}
        hosts = {h: bad if h == FAILING else good for h in HOSTS}
    assert ours == {task.__name__: {"started": True, **hosts, "completed": True}}


def raises_own_name(task: Task) -> None:
    raise Exception(task.host.name)  # the plainest exception there is


async def araises_own_name(task: Task) -> None:
    await asyncio.sleep(0)
    raises_own_name(task)


def fails_in_helper(task: Task) -> None:
    """Fails in a function it calls, not a subtask."""
    reports_name(task, fail_on=[task.host.name])


async def afails_in_helper(task: Task) -> None:
    await asyncio.sleep(0)
    fails_in_helper(task)


@pytest.mark.parametrize(
    ("task", "error"), [(raises_own_name, Exception), (fails_in_helper, DeviceError)],
    ids=["simple", "complex"],
)
@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_hosts_fail_with_their_own_exceptions(
    runner: Runner, kind: str, task: Callable[..., Any], error: type, inventory: Path
) -> None:
    """Each host's result holds the exception its task raised, of that very class; with
    ``raise_on_error`` the NornirExecutionError raised holds them."""

    def seen(nr: Nornir, kind: str) -> list[Any]:
        result = run(nr, kind, task)
        nr.data.reset_failed_hosts()  # else the next run would leave every host out
        with pytest.raises(NornirExecutionError) as raised:
            run(nr, kind, task, raise_on_error=True)
        return [outcome(result), outcome(raised.value.result), result, raised.value.result]

    ours = seen(on(runner, inventory), kind)
    assert ours[:2] == seen(reference(inventory), SYNC)[:2]
    for result in ours[2:]:
        assert list(result) == HOSTS
        assert {h: (type(m.exception), str(m.exception)) for h, m in result.items()} == {
            h: (error, h) for h in HOSTS
        }


def reads_data(task: Task, keys: list[str]) -> list[Any]:
    """The host's data at ``keys``, as ``task.host[key]`` finds it: the host's own, else its
    groups', else the defaults'."""
    return [task.host[key] for key in keys]


async def areads_data(task: Task, keys: list[str]) -> list[Any]:
    await asyncio.sleep(0)
    return reads_data(task, keys)


def sets_data(task: Task, key: str) -> None:
    task.host[key] = task.host.name


async def asets_data(task: Task, key: str) -> None:
    await asyncio.sleep(0)
    sets_data(task, key)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_host_data_a_run_changes_is_what_the_next_run_reads(
    runner: Runner, kind: str, inventory: Path
) -> None:
    """What a task sets on its host, and what the user sets between runs on a host or a
    group, the next run reads: on the same runner, and on a new one."""

    def seen(nr: Nornir, kind: str, runner: Runner) -> list[dict[str, Any]]:
        keys = ["changed", "site"]
        run(nr, kind, sets_data, key="changed")
        reads = [run(nr, kind, reads_data, keys=keys)]
        another = runner.plugin(**runner.options)
        reads.append(run(nr.with_runner(another), kind, reads_data, keys=keys))
        nr.inventory.hosts["edge1"]["changed"] = "by the user"
        nr.inventory.groups["core"].data["site"] = "moved"
        reads += [run(nr, kind, reads_data, keys=keys)]
        reads += [run(nr.with_runner(another), kind, reads_data, keys=keys)]
        for done in (another, nr.runner):
            getattr(done, "close", lambda: None)()
        return [{h: (m.failed, m.result) for h, m in r.items()} for r in reads]

    ours = seen(on(runner, inventory), kind, runner)
    assert ours == seen(reference(inventory), SYNC, THREADED)
    sites = {
        "edge1": "north", "edge2": "north", "core3": "south", "core4": "north",
        "lone5": "nowhere", "lab6": "lab-bench",
    }
    assert ours[0] == ours[1] == {h: (False, [h, site]) for h, site in sites.items()}
    sites.update(core3="moved")
    assert ours[2] == ours[3] == {
        h: (False, ["by the user" if h == "edge1" else h, site]) for h, site in sites.items()
    }
