"""Job files: every kind of bad input is one line naming file:line:column and what is allowed."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from nornir_bench.job import JobError, load_job
from nornir_bench.tasks import asim_rtt, sim_rtt

SYNTHETIC = """\
inventory:
  plugin: synthetic
  options:
    hosts: 10
"""


def write(tmp_path: Path, text: str, name: str = "job.yaml") -> Path:
    """The job file; nornir's logging off unless the job says (it would log to ./nornir.log
    and warn about pytest's own logging handlers)."""
    text = textwrap.dedent(text)
    if "logging:" not in text and not text.startswith("-"):
        text += "logging: {enabled: false}\n"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(JobError) as caught:
        load_job(path).nornir()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_good_job_loads_with_its_defaults(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0.001}}\n"))
    assert job.task is sim_rtt and job.params == {"rtt": 0.001}
    assert job.runner_plugin == "threaded"  # nornir's default
    nr, secrets = job.nornir()
    assert len(nr.inventory.hosts) == 10 and secrets == frozenset()


def test_an_async_task_gets_the_asyncio_runner_unless_told(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, SYNTHETIC + "task: {name: asim_rtt, params: {rtt: 0}}\n"))
    assert job.task is asim_rtt and job.runner_plugin == "asyncio"


def test_paths_are_relative_to_the_job_file(tmp_path: Path) -> None:
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "hosts.yaml").write_text("r1: {hostname: 127.0.0.1}\nr2: {}\n")
    (tmp_path / "jobs").mkdir()
    job = load_job(
        write(
            tmp_path / "jobs",
            """\
        inventory: {plugin: SimpleInventory, options: {host_file: ../inv/hosts.yaml}}
        task: {name: sim_rtt, params: {rtt: 0}}
        output: {path: out/records.jsonl}
        """,
        )
    )
    assert job.output == (tmp_path / "jobs" / "out" / "records.jsonl").resolve()
    nr, _ = job.nornir()
    assert sorted(nr.inventory.hosts) == ["r1", "r2"]


def test_the_filter_narrows_by_name_group_and_platform(tmp_path: Path) -> None:
    base = """\
        inventory: {plugin: synthetic, options: {hosts: 12, groups: 3, platform: [ios, eos]}}
        task: {name: sim_rtt, params: {rtt: 0}}
        """
    cases = {
        "filter: {hosts: [dev1, dev2]}": ["dev1", "dev2"],
        "filter: {groups: group0}": ["dev0", "dev3", "dev6", "dev9"],
        "filter: {platform: eos, groups: [group0]}": ["dev3", "dev9"],
    }
    for text, expected in cases.items():
        nr, _ = load_job(write(tmp_path, textwrap.dedent(base) + text + "\n")).nornir()
        assert sorted(nr.inventory.hosts, key=lambda n: int(n[3:])) == expected, text


def test_environment_variables_fill_in_values_and_their_secrets_are_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NB_TEST_PASSWORD", "s3cr3t-from-env")
    monkeypatch.setenv("NB_TEST_USER", "netops")
    job = load_job(
        write(
            tmp_path,
            """\
        inventory:
          plugin: synthetic
          options: {hosts: 2, username: "${NB_TEST_USER}", password: "${NB_TEST_PASSWORD}"}
        task: {name: sim_rtt, params: {rtt: 0}}
        """,
        )
    )
    nr, secrets = job.nornir()
    host = nr.inventory.hosts["dev0"]
    assert (host.username, host.password) == ("netops", "s3cr3t-from-env")
    assert secrets == {"s3cr3t-from-env"}


def test_inventory_credentials_may_name_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NB_TEST_PASSWORD", "group-secret")
    monkeypatch.setenv("NB_TEST_ENABLE", "enable-secret")
    (tmp_path / "hosts.yaml").write_text("r1: {groups: [core]}\nr2: {password: literal-pw}\n")
    (tmp_path / "groups.yaml").write_text(
        "core:\n  password: ${NB_TEST_PASSWORD}\n"
        "  connection_options: {netmiko: {extras: {secret: '${NB_TEST_ENABLE}'}}}\n"
    )
    job = load_job(
        write(
            tmp_path,
            """\
        inventory: {options: {host_file: hosts.yaml, group_file: groups.yaml}}
        task: {name: sim_rtt, params: {rtt: 0}}
        """,
        )
    )
    nr, secrets = job.nornir()
    r1 = nr.inventory.hosts["r1"]
    assert r1.password == "group-secret"
    assert r1.get_connection_parameters("netmiko").extras == {"secret": "enable-secret"}
    assert secrets == {"group-secret", "enable-secret", "literal-pw"}


BAD_JOBS = {
    "yaml syntax": (
        "task:\n  name: sim_rtt\n   params: {}\n",
        r"job.yaml:3:\d+: YAML syntax error in the job file: mapping values are not allowed",
    ),
    "unknown top-level key": (
        SYNTHETIC + "tsk: {name: sim_rtt}\n",
        r"job.yaml:5:1: unknown key 'tsk' in the job; allowed: inventory, runner, core, logging",
    ),
    "no task": (SYNTHETIC, r"job.yaml:1:1: the job has no 'task'"),
    "unknown task": (
        SYNTHETIC + "task: {name: send_comand}\n",
        r"job.yaml:5:14: unknown task 'send_comand'; built-in tasks: .*send_command.*; or a module:function",
    ),
    "task module missing": (
        SYNTHETIC + "task: {name: 'no_such_module_x:run'}\n",
        r"job.yaml:5:14: task no_such_module_x:run: cannot import module 'no_such_module_x': ModuleNotFoundError",
    ),
    "unknown task parameter": (
        SYNTHETIC + "task:\n  name: sim_rtt\n  params:\n    rt: 0.1\n",
        r"job.yaml:8:5: task sim_rtt has no parameter 'rt'; it takes: rtt, jitter, fail_rate, seed",
    ),
    "task parameter of the wrong type": (
        SYNTHETIC + "task:\n  name: sim_rtt\n  params:\n    rtt: fast\n",
        r"job.yaml:8:10: task sim_rtt parameter rtt must be a number, got str 'fast'",
    ),
    "task parameter taken by nr.run": (
        SYNTHETIC + "task:\n  name: sim_rtt\n  params:\n    name: x\n",
        r"job.yaml:8:5: task parameter 'name' is taken by nornir's run\(\)",
    ),
    "unknown runner": (
        SYNTHETIC + "runner: {plugin: threadpol}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:18: unknown runner plugin 'threadpol'; available: asyncio, processpool, serial, threaded, threadpool$",
    ),
    "runner option of the wrong type": (
        SYNTHETIC + "runner:\n  plugin: threadpool\n  options:\n    num_workers: ten\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:18: runner plugin threadpool option num_workers must be a whole number, got str 'ten'",
    ),
    "runner option out of range": (
        SYNTHETIC + "runner:\n  plugin: asyncio\n  options:\n    num_workers: 0\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin asyncio: ValueError: asyncio runner: num_workers must be",
    ),
    "unknown runner option": (
        SYNTHETIC
        + "runner: {plugin: threadpool, options: {workers: 3}}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:40: runner plugin threadpool has no option 'workers'; options: num_workers",
    ),
    "async task on a thread runner": (
        SYNTHETIC + "runner: {plugin: threadpool}\ntask: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:18: task asim_rtt is async \(async def\) and runner 'threadpool' cannot await it; "
        r"use one of: asyncio, processpool",
    ),
    "unknown inventory plugin": (
        "inventory: {plugin: SimpleInv}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:1:21: unknown inventory plugin 'SimpleInv'; available: SimpleInventory, synthetic$",
    ),
    "missing inventory file": (
        "inventory:\n  options:\n    host_file: nowhere/hosts.yaml\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:3:16: inventory option host_file: no such file: .*nowhere/hosts.yaml",
    ),
    "inventory option refused by the plugin": (
        "inventory: {plugin: synthetic, options: {hosts: -1}}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:1:41: inventory plugin synthetic: ValueError: synthetic inventory: hosts must be",
    ),
    "unknown core key": (
        SYNTHETIC + "core: {raise_on_eror: true}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:8: core has no option 'raise_on_eror'; options: raise_on_error",
    ),
    "logging option of the wrong type": (
        SYNTHETIC + "logging: {enabled: maybe}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:20: logging option enabled must be true or false or null, got str 'maybe'",
    ),
    "unset environment variable": (
        "inventory: {plugin: synthetic, options: {password: '${NB_TEST_UNSET_VAR}'}}\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml: inventory.options.password: environment variable NB_TEST_UNSET_VAR is not set",
    ),
    "unknown filter key": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\nfilter: {site: x}\n",
        r"job.yaml:6:10: unknown key 'site' in filter; allowed: hosts, groups, platform",
    ),
    "filter naming a host not in the inventory": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\nfilter: {hosts: [dev1, rtr9]}\n",
        r"job.yaml: filter: no such host in the inventory: rtr9",
    ),
    "filter matching nothing": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\nfilter: {platform: junos}\n",
        r"job.yaml: no host to run on: the filter matches none of the inventory",
    ),
    "not a mapping": ("- task\n", r"job.yaml:1:1: a job file must be a mapping"),
}


@pytest.mark.parametrize("case", sorted(BAD_JOBS))
def test_bad_jobs_fail_in_one_line_that_says_where_and_what_is_allowed(
    case: str, tmp_path: Path
) -> None:
    text, expected = BAD_JOBS[case]
    message = error_of(write(tmp_path, text))
    assert re.search(expected, message), message


def test_a_missing_job_file_is_one_line(tmp_path: Path) -> None:
    message = error_of(tmp_path / "nope.yaml")
    assert message.endswith("nope.yaml: cannot read the job file: No such file or directory")


def test_a_yaml_error_in_the_inventory_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text("r1:\n  hostname: [\n")
    message = error_of(write(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n"))
    assert re.search(r"hosts.yaml:\d+:\d+: YAML syntax error in the inventory file", message), (
        message
    )
