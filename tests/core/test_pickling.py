"""Hosts and results cross processes with the process pool's own picklers; the user's own
pickling is nornir's, whatever modules of the package are imported."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.inventory import Host
from nornir.core.task import Result

from nornir_bench.core._pickling import cloud_dumps, dumps
from tests.conftest import make_nornir, result_view
from tests.tasksets import grouped

# A Host holding a connection, pickled by the user: what comes back, in a process that never
# imports nornir_bench (nornir's own behaviour) and in this one.
_USERS_PICKLE = """
import pickle
from nornir.core.inventory import Host

host = Host("r1", hostname="10.0.0.1", data={"site": "lab"})
host.connections["netmiko"] = ["a session"]
copy = pickle.loads(pickle.dumps(host))
print(sorted(copy.connections), copy.connections["netmiko"], copy.hostname, copy.data)
"""


def _users_pickle() -> str:
    from nornir.core.inventory import Host

    host = Host("r1", hostname="10.0.0.1", data={"site": "lab"})
    host.connections["netmiko"] = ["a session"]  # type: ignore[assignment]
    copy = pickle.loads(pickle.dumps(host))
    return f"{sorted(copy.connections)} {copy.connections['netmiko']} {copy.hostname} {copy.data}"


# The dask runner's modules that import Dask, which imports only when a dask run needs it:
# importing Dask registers pickle reducers for every exception class (tblib's), Dask's own
# doing (docs/runners.md).
_IMPORT_DASK = ("nornir_bench.runners.dask.worker", "nornir_bench.runners.dask.run",
                "nornir_bench.runners.dask.events",
                "nornir_bench.runners.dask.reruns")

_EVERY_MODULE = f"""
import copyreg, importlib, pkgutil, sys
import nornir_bench
for module in pkgutil.walk_packages(nornir_bench.__path__, "nornir_bench."):
    if module.name not in {_IMPORT_DASK!r}:
        importlib.import_module(module.name)
from nornir.core.exceptions import NornirSubTaskError
from nornir.core.inventory import Group, Host
assert "distributed" not in sys.modules
print(sorted(t.__name__ for t in {{Host, Group, NornirSubTaskError}} & set(copyreg.dispatch_table)))
import pickle
try:  # nornir's own: a failed subtask's error pickles, and does not unpickle
    pickle.loads(pickle.dumps(NornirSubTaskError(task="t", result=None)))
except TypeError:
    print("NornirSubTaskError does not unpickle")
"""


def test_importing_the_package_changes_no_pickling_of_the_users_objects() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_MODULE], capture_output=True, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert (done.returncode, done.stdout.split("\n")[:2]) == (
        0, ["[]", "NornirSubTaskError does not unpickle"]
    ), done.stderr
    nornirs = subprocess.run(
        [sys.executable, "-c", _USERS_PICKLE], capture_output=True, text=True, check=True,
        cwd=Path(__file__).parent,  # not the checkout root: no nornir_bench folder there
    ).stdout.strip()
    assert nornirs == "['netmiko'] ['a session'] 10.0.0.1 {'site': 'lab'}"
    assert _users_pickle() == nornirs


def test_the_pools_picklers_leave_connections_behind_and_rebuild_failed_subtasks() -> None:
    result = make_nornir("threaded", hosts=4).run(task=grouped)
    host = result["dev3"].host
    host.connections["netmiko"] = object()
    for pickled in (dumps(result), cloud_dumps(result)):
        restored = pickle.loads(pickled)
        original, copy = result["dev3"][0].exception, restored["dev3"][0].exception
        assert isinstance(copy, NornirSubTaskError)
        assert str(copy) == str(original) == "Subtask: maybe_fail (failed)\n"
        assert result_view(copy.result) == result_view(original.result)
        assert restored["dev3"].host.connections == {}


class Switch(Host):
    """A user's own kind of host."""

    __slots__ = ()


def test_hosts_sent_as_one_list_come_back_slot_for_slot() -> None:
    """``HostList`` (how hosts go to workers): every slot as the host holds it (inheritance
    from groups and defaults kept, not copied in), connections left behind; a subclass of
    ``Host`` goes one host at a time, as itself."""
    from nornir_bench.core._pickling import HostList

    nr = make_nornir("threadpool", hosts=3)
    hosts = list(nr.inventory.hosts.values())
    hosts[0].data["site"] = {"name": "a", "racks": [1, 2]}
    hosts[1].connections["netmiko"] = object()
    hosts[2] = Switch(name="sw", hostname="10.0.0.9", groups=hosts[0].groups)
    for pickled in (dumps(HostList(hosts)), cloud_dumps(HostList(hosts))):
        copies = pickle.loads(pickled)
        assert [type(copy) for copy in copies] == [Host, Host, Switch]
        for host, copy in zip(hosts, copies, strict=True):
            for name in ("name", "hostname", "port", "username", "password", "platform",
                         "data", "connection_options"):
                assert object.__getattribute__(copy, name) == object.__getattribute__(host, name)
            assert [group.name for group in copy.groups] == [g.name for g in host.groups]
            assert copy.connections == {}
        assert copies[0].groups[0] is copies[2].groups[0]  # a group once, shared as before


def test_a_hosts_results_pickle_with_their_name_and_their_own_attributes() -> None:
    from nornir_bench.core.host_task import HostResults

    results = HostResults("task")
    results.append("done")
    results.noted = 3  # type: ignore[attr-defined]
    copy = pickle.loads(dumps(results))
    assert (copy.name, list(copy), copy.noted) == ("task", ["done"], 3)


class CheckedResult(Result):
    """A task's own kind of result."""


def test_results_sent_as_their_values_come_back_as_the_same_objects() -> None:
    """Results go as the values of their attributes (their names once a pickle): every
    attribute, the kind of result, and what refers to what come back as they were, a result
    met twice (a subtask's, in its hook's event too) and one that refers to itself included."""
    from nornir_bench.core.host_task import HostResults

    results = HostResults("task")
    first = Result(host=None, result={"routes": 3}, changed=True, name="task")
    first.worker = "h:1"  # type: ignore[attr-defined]
    itself = Result(host=None, name="sub")
    itself.result = itself
    results.extend([first, itself, CheckedResult(host=None, result="ok")])
    for pickled in (dumps([results, first]), cloud_dumps([results, first])):
        copy, copy_of_first = pickle.loads(pickled)
        assert type(copy) is HostResults and copy.name == "task"
        assert [type(item) for item in copy] == [Result, Result, CheckedResult]
        assert vars(copy[0]) == vars(first) and list(vars(copy[0])) == list(vars(first))
        assert copy[0] is copy_of_first
        assert copy[1].result is copy[1]
        assert vars(copy[2]) == vars(results[2])


def _device_errors() -> list[BaseException]:
    """One of each error the package's device tasks fail a host with, as they build it."""
    import asyncssh

    from nornir_bench.core.exceptions import LoginRefused, NoSSHBanner, SessionClosed, TaskTimeout
    from nornir_bench.tasks.changes.config import ConfigChangeFailed
    from nornir_bench.tasks.changes.restore import RestoreFailed
    from nornir_bench.tasks.checks.audit import StateCheckFailed
    from nornir_bench.tasks.checks.output_parsers import OutputNotParsed
    from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown
    from nornir_bench.tasks.sessions.jump_hosts import JumpHostUnreachable

    seen, known = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))
    check = {"name": "sessions", "before": 2, "after": 1, "held": False}
    return [
        HostKeyMismatch("r1", "127.0.0.1:2201", seen, [known]),
        HostKeyUnknown("r1", "jump host 127.0.0.1:2202", seen, ["/home/ops/.ssh/known_hosts"]),
        JumpHostUnreachable("jump host 127.0.0.1:2203: connection refused", "127.0.0.1:2203"),
        LoginRefused("127.0.0.1:2204", 3),
        NoSSHBanner("127.0.0.1:2205", 1.0),
        SessionClosed("127.0.0.1:2206"),
        TaskTimeout("send_config", "r1", 3.0, change={"state": "interrupted during change",
                                                    "backup": "/b/r1"}),
        ConfigChangeFailed("line 3 of 5 refused", state="rolled back", backup="/b/r1",
                           diff="", checks=[check]),
        StateCheckFailed("check 'sessions' (same): was 2, now 1", checks=[check]),
        OutputNotParsed("textfsm template v.textfsm matched nothing in the output of 'show x'"),
        RestoreFailed("the backup could not be restored", backup="/b/r1", diff="+ip route x"),
    ]


def test_a_device_tasks_errors_come_back_from_a_worker_as_themselves() -> None:
    """What a host of processpool or dask fails with in its worker reaches the parent as its
    own type, message and attributes (else ``RemoteException`` stands in for it): the
    runners' host-key, jump host, login and change cases ran there for this."""
    from nornir_bench.core._pickling import round_trips

    for error in _device_errors():
        assert round_trips(error), type(error).__name__
        for pickled in (dumps(error), cloud_dumps(error)):
            copy = pickle.loads(pickled)
            assert type(copy) is type(error)
            assert (str(copy), vars(copy)) == (str(error), vars(error)), type(error).__name__
