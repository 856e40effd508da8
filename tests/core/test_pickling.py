"""Hosts and results cross processes with the process pool's own picklers; the user's own
pickling is nornir's, whatever modules of the package are imported."""

from __future__ import annotations

import copyreg
import importlib
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path

from nornir.core.exceptions import NornirSubTaskError

import nornir_bench
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


def test_importing_the_package_changes_no_pickling_of_the_users_objects() -> None:
    for module in pkgutil.walk_packages(nornir_bench.__path__, "nornir_bench."):
        importlib.import_module(module.name)
    from nornir.core.inventory import Group, Host

    assert not {Host, Group, NornirSubTaskError} & set(copyreg.dispatch_table)
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
    # and a plain pickle is nornir's: the failed subtask does not come back
    try:
        pickle.loads(pickle.dumps(result))
    except TypeError:
        pass
    else:
        raise AssertionError("nornir's NornirSubTaskError unpickles now: drop the reducer")
