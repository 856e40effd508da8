"""What tasks need beyond nornir-bench: a missing device library is one line naming the extra,
and a job registers only the connection plugins its task opens."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nornir_bench.jobs.load import JobError, load_job
from nornir_bench.tasks import (
    BUILTIN_TASKS,
    MissingLibrary,
    Needs,
    asend_command,
    connections_of,
    needs,
    needs_of,
    parse_interfaces,
    require_libraries,
    send_command,
)
from tests.conftest import make_nornir

EXTRA = "pip install 'nornir-bench[devices]'"


def test_every_builtin_task_says_what_it_needs() -> None:
    assert {name: needs_of(task) for name, task in BUILTIN_TASKS.items()} == {
        "send_command": Needs(("netmiko", "nornir_netmiko"), ("netmiko",), EXTRA),
        "asend_command": Needs(("scrapli", "asyncssh"), install=EXTRA),
        "send_config": Needs(("netmiko", "nornir_netmiko", "jinja2"), ("netmiko",), EXTRA),
        "asend_config": Needs(("scrapli", "asyncssh", "jinja2"), install=EXTRA),
        "parse_interfaces": Needs(("ntc_templates",), install=EXTRA, descriptors=0),
        "check_state": Needs(("netmiko", "nornir_netmiko", "jmespath"), ("netmiko",), EXTRA),
        "acheck_state": Needs(("scrapli", "asyncssh", "jmespath"), install=EXTRA),
        "backup_config": Needs(("netmiko", "nornir_netmiko"), ("netmiko",), EXTRA),
        "abackup_config": Needs(("scrapli", "asyncssh"), install=EXTRA),
        **{name: Needs(("ncclient", "xmltodict"), install=EXTRA) for name in (
            "netconf_get", "anetconf_get", "netconf_get_config", "anetconf_get_config")},
        **{name: Needs(("ncclient", "lxml", "xmltodict", "jinja2"), install=EXTRA)
           for name in ("netconf_edit_config", "anetconf_edit_config")},
        "tcp_ping": Needs(descriptors=1),
        "atcp_ping": Needs(descriptors=1),
        "sim_rtt": Needs(descriptors=0),
        "asim_rtt": Needs(descriptors=0),
    }
    assert connections_of(send_command) == {"netmiko"}
    assert connections_of(lambda task: None) is None  # a user's task: any connection


def test_a_users_task_may_say_what_it_needs_and_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @needs(libraries=["napalm_ios"], connections=["napalm"])
    def get_facts(task: object) -> None: ...

    monkeypatch.setitem(sys.modules, "napalm_ios", None)
    assert connections_of(get_facts) == {"napalm"}
    with pytest.raises(MissingLibrary, match="^task get_facts needs napalm-ios, which is not "
                       "installed: pip install napalm-ios$"):
        require_libraries(get_facts)
    with pytest.raises(TypeError, match="needs: connections must be a list of names, got the "
                       "string 'napalm'"):
        needs(connections="napalm")


def job(tmp_path: Path, task: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        inventory:
          plugin: synthetic
          options: {{hosts: 3}}
        task: {task}
        logging: {{enabled: false}}
        """))
    return path


@pytest.mark.parametrize(
    ("task", "blocked", "needs"),
    [
        ("{name: send_command, params: {command: show clock}}", ["nornir_netmiko"],
         "nornir-netmiko, which is"),
        ("{name: send_command, params: {command: show clock}}", ["netmiko", "nornir_netmiko"],
         "netmiko and nornir-netmiko, which are"),
        ("{name: asend_command, params: {command: show clock}}", ["scrapli"],
         "scrapli, which is"),
        ("{name: asend_command, params: {command: show clock}}", ["scrapli", "asyncssh"],
         "scrapli and asyncssh, which are"),
        ("{name: parse_interfaces}", ["ntc_templates"], "ntc-templates, which is"),
    ],
)
def test_a_job_whose_task_needs_a_missing_library_fails_in_one_line_naming_the_extra(
    task: str, blocked: list[str], needs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(JobError) as caught:
        load_job(job(tmp_path, task))
    name = task.split(",")[0].removeprefix("{name: ").rstrip("}")
    assert str(caught.value) == (
        f"{tmp_path / 'job.yaml'}:4:14: task {name} needs {needs} not installed: {EXTRA}"
    )


def test_nornir_bench_run_exits_2_with_that_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; sys.modules['nornir_netmiko'] = None\n"
         "from nornir_bench.cli import entry; entry()",
         "run", str(job(tmp_path, "{name: send_command, params: {command: show clock}}"))],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"nornir-bench: error: {tmp_path / 'job.yaml'}:4:14: task send_command needs "
        f"nornir-netmiko, which is not installed: {EXTRA}"
    ]


@pytest.mark.parametrize(
    ("task", "params", "blocked"),
    [
        (send_command, {"command": "show clock"}, "nornir_netmiko"),
        (asend_command, {"command": "show clock"}, "scrapli"),
        (parse_interfaces, {}, "ntc_templates"),
    ],
    ids=["send_command", "asend_command", "parse_interfaces"],
)
def test_run_from_python_each_host_fails_with_that_line(
    task: object, params: dict[str, str], blocked: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nr = make_nornir("asyncio", hosts=2)
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed
    result = nr.run(task=task, **params)
    assert sorted(result.failed_hosts) == ["dev0", "dev1"]
    exc = result["dev0"][0].exception
    assert isinstance(exc, MissingLibrary) and isinstance(exc, ImportError)
    assert str(exc).endswith(f"not installed: {EXTRA}")


IMPORTED_AFTER_THE_RUN = """\
import sys
from nornir_bench.cli import main
status = main(["run", "--quiet", "--output", sys.argv[2], sys.argv[1]])
print(status, "netmiko" in sys.modules, "paramiko" in sys.modules)
"""


@pytest.mark.parametrize(
    ("task", "imported"),
    [
        ("{name: sim_rtt, params: {rtt: 0}}", "0 False False"),
        ("{name: asim_rtt, params: {rtt: 0}}", "0 False False"),
        # A user's task may open any connection: every plugin is registered, as InitNornir does,
        ("{name: 'mytasks:hello'}", "0 True True"),
        # unless it says which it opens.
        ("{name: 'mytasks:declared'}", "0 False False"),
    ],
)
def test_a_job_imports_netmiko_only_when_its_task_may_open_a_netmiko_connection(
    task: str, imported: str, tmp_path: Path
) -> None:
    (tmp_path / "mytasks.py").write_text(
        "from nornir_bench.tasks import needs\n"
        "def hello(task):\n"
        "    return task.host.name\n"
        "declared = needs(connections=[])(lambda task: task.host.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED_AFTER_THE_RUN, str(job(tmp_path, task)),
         str(tmp_path / "records.jsonl")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == imported
