"""Job files: every kind of bad input is one line naming file:line:column and what is allowed."""

from __future__ import annotations

import codecs
import random
import re
import textwrap
from pathlib import Path

import pytest

from nornir_bench.jobs._yaml_input import MAX_DEPTH, MAX_JOB_BYTES, MAX_VALUES
from nornir_bench.jobs.load import JobError, load_job
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.conftest import imported_by
from tests.waiting import HANG_GUARD

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
    # nornir-bench's threadpool, not nornir's threaded: same options, stops on Ctrl-C
    assert job.runner_plugin == "threadpool"
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


@pytest.mark.slow
def test_a_dask_job_reaches_a_tls_cluster_with_certificates_relative_to_the_job(
    tmp_path: Path,
) -> None:
    """The job file's ``security`` names PEM files as paths, relative to the job's folder as
    every path of a job is; the run reaches a real TLS scheduler with them."""
    from tests.dask_cluster import dask_cluster

    with dask_cluster(1, tls=True) as cluster:
        certs = tmp_path / "certs"
        certs.mkdir()
        for name in ("ca", "cert", "key"):
            (certs / f"{name}.pem").write_bytes((cluster.folder / f"{name}.pem").read_bytes())
        (tmp_path / "jobs").mkdir()
        job = load_job(
            write(
                tmp_path / "jobs",
                f"""\
            inventory: {{plugin: synthetic, options: {{hosts: 20}}}}
            runner:
              plugin: dask
              options:
                address: {cluster.address}
                num_workers: 5
                security:
                  tls_ca_file: ../certs/ca.pem
                  tls_client_cert: ../certs/cert.pem
                  tls_client_key: ../certs/key.pem
            task: {{name: asim_rtt, params: {{rtt: 0}}}}
            """,
            )
        )
        security = job.settings["runner"]["options"]["security"]
        assert security == {
            key: str(tmp_path / "jobs" / "../certs" / f"{name}.pem")
            for key, name in (
                ("tls_ca_file", "ca"), ("tls_client_cert", "cert"), ("tls_client_key", "key")
            )
        }
        nr, _ = job.nornir()
        try:
            result = nr.run(task=job.task, **job.params)
        finally:
            nr.runner.close()
    assert len(result) == 20 and not result.failed


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
    "session_logs not a boolean": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\noutput: {session_logs: sometimes}\n",
        r"job.yaml:6:\d+: output: session_logs must be true or false, got 'sometimes'",
    ),
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
        r"job.yaml:5:14: unknown task 'send_comand'; built-in tasks: .*send_command.*; "
        r"or a module:function",
    ),
    "task module missing": (
        SYNTHETIC + "task: {name: 'no_such_module_x:run'}\n",
        r"job.yaml:5:14: task no_such_module_x:run: cannot import module 'no_such_module_x': "
        r"ModuleNotFoundError",
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
        r"job.yaml:5:18: unknown runner plugin 'threadpol'; "
        r"available: asyncio, dask, processpool, serial, threaded, threadpool$",
    ),
    "runner option of the wrong type": (
        SYNTHETIC + "runner:\n  plugin: threadpool\n  options:\n    num_workers: ten\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:18: runner plugin threadpool option num_workers must be a whole number, "
        r"got str 'ten'",
    ),
    "runner option out of range": (
        SYNTHETIC + "runner:\n  plugin: asyncio\n  options:\n    num_workers: 0\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin asyncio: ValueError: asyncio runner: num_workers must be",
    ),
    "run policy out of range": (
        SYNTHETIC + "runner:\n  plugin: threadpool\n  options:\n    retries: -1\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin threadpool: ValueError: threadpool runner: retries must be "
        r"a whole number from 0 to 100, got -1$",
    ),
    "misspelt run policy": (
        SYNTHETIC + "runner:\n  plugin: asyncio\n  options:\n    max_failure: 3\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin asyncio has no option 'max_failure'; options: num_workers, "
        r".*max_failures, ",
    ),
    "unknown runner option": (
        SYNTHETIC
        + "runner: {plugin: threadpool, options: {workers: 3}}\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:40: runner plugin threadpool has no option 'workers'; options: num_workers",
    ),
    "async task on a thread runner": (
        SYNTHETIC + "runner: {plugin: threadpool}\ntask: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:5:18: task asim_rtt is async \(async def\) and runner 'threadpool' "
        r"cannot await it; "
        r"use one of: asyncio, dask, processpool",
    ),
    "dask security file missing": (
        SYNTHETIC + "runner:\n  plugin: dask\n  options:\n    address: tls://127.0.0.1:8786\n"
        "    security:\n      tls_ca_file: certs/ca.pem\n      tls_client_cert: job.yaml\n"
        "      tls_client_key: job.yaml\ntask: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:10:20: runner option security.tls_ca_file: no such file: .*/certs/ca.pem$",
    ),
    "dask security not a mapping of the three files": (
        SYNTHETIC + "runner:\n  plugin: dask\n  options:\n    security: {tls_ca_file: job.yaml}\n"
        "task: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin dask: ValueError: dask runner: security must be a "
        r"distributed.security.Security, or a mapping of tls_ca_file, tls_client_cert, "
        r"tls_client_key to PEM files, got \{'tls_ca_file': '.*/job.yaml'\}$",
    ),
    "dask security as one path": (
        SYNTHETIC + "runner:\n  plugin: dask\n  options:\n    security: certs/\n"
        "task: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin dask: ValueError: dask runner: security must be a "
        r"distributed.security.Security, or a mapping of .* to PEM files, got 'certs/'$",
    ),
    "dask option out of range": (
        SYNTHETIC + "runner:\n  plugin: dask\n  options:\n    chunk_size: 0\n"
        "task: {name: asim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:8:5: runner plugin dask: ValueError: dask runner: chunk_size must be a whole "
        r"number >= 1, got 0$",
    ),
    "unknown inventory plugin": (
        "inventory: {plugin: SimpleInv}\ntask: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:1:21: unknown inventory plugin 'SimpleInv'; "
        r"available: SimpleInventory, synthetic$",
    ),
    "missing inventory file": (
        "inventory:\n  options:\n    host_file: nowhere/hosts.yaml\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:3:16: inventory option host_file: no such file: .*nowhere/hosts.yaml",
    ),
    "inventory option refused by the plugin": (
        "inventory: {plugin: synthetic, options: {hosts: -1}}\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:1:41: inventory plugin synthetic: ValueError: "
        r"synthetic inventory: hosts must be",
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
    "no inventory section and no hosts.yaml": (
        "task: {name: sim_rtt, params: {rtt: 0}}\n",
        r"job.yaml:1:1: the job has no inventory section, and SimpleInventory \(nornir's default\) "
        r"found no hosts.yaml next to the job; add inventory: "
        r"\{plugin: \.\.\., options: \{\.\.\.\}\}$",
    ),
    "an inventory section with no plugin and no hosts.yaml": (
        "task: {name: sim_rtt, params: {rtt: 0}}\ninventory: {}\n",
        r"job.yaml:2:1: SimpleInventory needs options.host_file: there is no hosts.yaml next to "
        r"the job$",
    ),
    "round trip longer than MAX_RTT": (
        SYNTHETIC + "task:\n  name: sim_rtt\n  params:\n    rtt: .inf\n",
        r"job.yaml:7:3: task sim_rtt: rtt must be a number of seconds from 0 to 3600 \(an hour: "
        r"longer than any device takes to answer\), got inf$",
    ),
    "jitter longer than MAX_RTT on the async twin": (
        SYNTHETIC + "task: {name: asim_rtt, params: {rtt: 0.1, jitter: 1e300}}\n",
        r"job.yaml:5:24: task asim_rtt: jitter must be a number of seconds from 0 to 3600",
    ),
    "misspelt parameter of a task that passes **kwargs on": (
        SYNTHETIC + "task:\n  name: send_command\n  params:\n    command: show clock\n"
        "    enabel: true\n",
        r"job.yaml:7:3: task send_command: send_command has no parameter 'enabel', nor has "
        r"netmiko's send_command; it takes: command, enable, use_timing, expect_string, ",
    ),
    "a tagged value that cannot be built": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\nuser_defined: {port: !!int ssh}\n",
        r"job.yaml: cannot build a value of the job file: ValueError: invalid literal for int\(\) "
        r"with base 10: 'ssh'; check explicit tags",
    ),
    "nesting deeper than MAX_DEPTH": (
        SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\n"
        f"user_defined: {{x: {'[' * MAX_DEPTH}{']' * MAX_DEPTH}}}\n",
        # {x: is the first level; the last [ the one too many
        rf"job.yaml:6:{len('user_defined: {x: ') + MAX_DEPTH}: nesting deeper than {MAX_DEPTH} "
        r"levels; a job holds settings, not deep data$",
    ),
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


def test_an_alias_may_repeat_settings(tmp_path: Path) -> None:
    job = load_job(
        write(
            tmp_path,
            SYNTHETIC
            + "task: {name: sim_rtt, params: {rtt: 0}}\n"
            + "user_defined: {base: &base {site: x, ports: [1, 2]}, copy: *base}\n",
        )
    )
    user = job.settings["user_defined"]
    assert user["copy"] == user["base"] == {"site": "x", "ports": [1, 2]}


def test_nesting_up_to_max_depth_loads(tmp_path: Path) -> None:
    text = f"user_defined: {{x: {'[' * (MAX_DEPTH - 1)}{']' * (MAX_DEPTH - 1)}}}\n"
    job = load_job(write(tmp_path, SYNTHETIC + "task: {name: sim_rtt, params: {rtt: 0}}\n" + text))
    value = job.settings["user_defined"]["x"]
    for _ in range(MAX_DEPTH - 2):
        (value,) = value
    assert value == []


def write_bytes(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "job.yaml"
    path.write_bytes(data)
    return path


GOOD = "task: {name: sim_rtt, params: {rtt: 0}}\n"

NOT_TEXT = {
    "latin-1": (
        GOOD.encode() + "user_defined: {city: Zürich}\n".encode("latin-1"),
        rf"job.yaml:2:{len('user_defined: {city: Z') + 1}: the job file is not UTF-8 text "
        r"\(byte 0xfc\); save it as UTF-8$",
    ),
    "columns count characters, not bytes": (
        GOOD.encode() + "user_defined: {city: Zürich, x: ".encode() + b"\xff}\n",
        rf"job.yaml:2:{len('user_defined: {city: Zürich, x: ') + 1}: the job file is not UTF-8 "
        r"text \(byte 0xff\)",
    ),
    "random bytes": (
        random.Random(7).randbytes(3000),
        r"job.yaml:\d+:\d+: the job file is not UTF-8 text \(byte 0x[0-9a-f]{2}\); save it as "
        r"UTF-8$",
    ),
    "UTF-16 with no byte-order mark": (
        GOOD.encode("utf-16-le"),
        r"job.yaml:1:2: the job file contains a NUL byte: not a text file",
    ),
    "UTF-16": (GOOD.encode("utf-16"), r"job.yaml: the job file is UTF-16; save it as UTF-8$"),
    "UTF-16 big-endian": (
        codecs.BOM_UTF16_BE + GOOD.encode("utf-16-be"),
        r"job.yaml: the job file is UTF-16; save it as UTF-8$",
    ),
    "UTF-32": (GOOD.encode("utf-32"), r"job.yaml: the job file is UTF-32; save it as UTF-8$"),
    "NUL byte": (
        GOOD.encode() + b"user_defined: {x: a\x00b}\n",
        r"job.yaml:2:20: the job file contains a NUL byte: not a text file; a job is YAML text",
    ),
    "control character": (
        GOOD.encode() + b"user_defined: {x: a\x07b}\n",
        r"job.yaml:2:20: the job file contains the control character U\+0007, which YAML does "
        r"not allow; use printable text \(tabs and line breaks are fine\)$",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_TEXT))
def test_a_file_that_is_not_utf8_text_fails_in_one_line(case: str, tmp_path: Path) -> None:
    data, expected = NOT_TEXT[case]
    message = error_of(write_bytes(tmp_path, data))
    assert re.search(expected, message), message


def test_utf8_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    text = SYNTHETIC + GOOD + "logging: {enabled: false}\n"
    job = load_job(write_bytes(tmp_path, codecs.BOM_UTF8 + text.encode()))
    assert job.task is sim_rtt and job.params == {"rtt": 0}


@pytest.mark.timeout(HANG_GUARD)
def test_nesting_too_deep_for_the_yaml_parser_is_one_line(tmp_path: Path) -> None:
    """2,000 levels exhaust the parser's recursion; the error points at the first too many."""
    message = error_of(write(tmp_path, GOOD + "user_defined: " + "[" * 2000 + "\n"))
    column = len("user_defined: ") + MAX_DEPTH + 1
    assert message.endswith(
        f"job.yaml:2:{column}: nesting deeper than {MAX_DEPTH} levels; "
        "a job holds settings, not deep data"
    ), message


def test_brackets_nested_too_deep_are_refused_before_the_document_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ruamel's scanner slows with each open flow collection: building 2,000 took 10 s before
    its RecursionError. The parser's events refuse them without building anything."""
    from ruamel.yaml import YAML

    def built(*args: object) -> None:
        raise AssertionError("the document was built")

    monkeypatch.setattr(YAML, "load", built)
    message = error_of(write(tmp_path, GOOD + "user_defined: " + "[" * 2000 + "\n"))
    assert message.endswith(f"nesting deeper than {MAX_DEPTH} levels; a job holds settings, "
                            "not deep data"), message


@pytest.mark.timeout(HANG_GUARD)
def test_a_job_file_bigger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    """Parsed, 50 MB of YAML would take minutes (the round-trip parser reads ~0.1 MB/s)."""
    path = tmp_path / "job.yaml"
    with path.open("w") as file:
        file.write(GOOD + "user_defined:\n  hosts:\n")
        for i in range(50 * 1024 * 1024 // 16):
            file.write(f"  - r{i:010d}\n")
    message = error_of(path)
    assert re.search(
        r"job.yaml: the job file is 50.0 MiB, more than the 128 KiB a job file may be: "
        r"it holds settings and a task; hosts and their data belong in inventory files$",
        message,
    ), message


def test_a_job_file_of_the_limit_loads(tmp_path: Path) -> None:
    text = SYNTHETIC + GOOD + "logging: {enabled: false}\n"
    padding = "# " + "x" * (MAX_JOB_BYTES - len(text) - 3) + "\n"
    path = tmp_path / "job.yaml"
    path.write_text(text + padding)
    assert path.stat().st_size == MAX_JOB_BYTES
    assert load_job(path).task is sim_rtt
    with path.open("a") as file:
        file.write("\n")
    assert "more than the 128 KiB a job file may be" in error_of(path)


def alias_bomb(indent: str, levels: int = 9) -> str:
    """YAML lines, each a list of 9 aliases of the line before: 9**levels values expanded."""
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"{indent}l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize(
    ("section", "text"),
    [
        ("user_defined", SYNTHETIC + GOOD + "user_defined:\n" + alias_bomb("  ")),
        ("task.params", SYNTHETIC + "task:\n  name: sim_rtt\n  params:\n" + alias_bomb("    ")),
        (
            "inventory.options.data",
            "inventory:\n  plugin: synthetic\n  options:\n    data:\n" + alias_bomb("      ")
            + GOOD,
        ),
    ],
)
def test_an_alias_bomb_fails_in_one_line_instead_of_expanding(
    tmp_path: Path, section: str, text: str
) -> None:
    message = error_of(write(tmp_path, text))
    match = re.search(
        rf"job.yaml:(\d+):(\d+): {re.escape(section)}\.(l\d) expands to more than "
        rf"{MAX_VALUES:,} values \(each use of a YAML alias counts in full\); a job holds "
        r"settings and a task, and large data belongs in inventory files$",
        message,
    )
    assert match, message
    line, column, name = int(match[1]), int(match[2]), match[3]
    assert text.splitlines()[line - 1][column - 1 :].startswith(f"{name}: &{name} [")


def task_module(tmp_path: Path, name: str, body: str) -> Path:
    """A job naming ``name:run``, next to the module ``name`` whose import runs ``body``."""
    (tmp_path / f"{name}.py").write_text(f"{body}\n\ndef run(task):\n    return 1\n")
    return write(tmp_path, SYNTHETIC + f"task: {{name: '{name}:run'}}\n")


@pytest.mark.parametrize(
    ("body", "code"), [("raise SystemExit(0)", "0"), ("import sys\nsys.exit('bye')", "bye")]
)
def test_a_task_module_that_exits_while_imported_is_an_error(
    tmp_path: Path, body: str, code: str
) -> None:
    name = f"nb_exits_on_import_{code}"
    message = error_of(task_module(tmp_path, name, body))
    assert message.endswith(
        f"job.yaml:5:14: task {name}:run: module {name!r} stopped the program while being "
        f"imported (SystemExit {code}); a task module must only define functions when imported"
    ), message


def test_ctrl_c_while_a_task_module_is_imported_still_stops(tmp_path: Path) -> None:
    job = task_module(tmp_path, "nb_interrupted_on_import", "raise KeyboardInterrupt")
    with pytest.raises(KeyboardInterrupt):
        load_job(job)


INVENTORY_JOB = "inventory: {options: {host_file: hosts.yaml, group_file: groups.yaml}}\n" + GOOD


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize(
    ("hosts", "groups", "owner"),
    [
        ("r1:\n  data:\n" + alias_bomb("    ") + "r2: {data: {x: 1}}\n", "{}\n", "host r1"),
        ("r1: {groups: [core]}\n", "core:\n  data:\n" + alias_bomb("    "), "group core"),
        # nornir's loader keeps an alias inside its own anchor: data that contains itself
        ("r1:\n  data: &d {name: r1, me: *d}\n", "{}\n", "host r1"),
    ],
)
def test_inventory_data_that_expands_past_the_bound_is_refused(
    tmp_path: Path, hosts: str, groups: str, owner: str
) -> None:
    """nornir keeps an alias's data shared; copied or compared value by value (the
    processpool runner compares each host's data after the task), it would not end."""
    (tmp_path / "hosts.yaml").write_text(hosts)
    (tmp_path / "groups.yaml").write_text(groups)
    message = error_of(write(tmp_path, INVENTORY_JOB))
    assert message.endswith(
        f"job.yaml: inventory: {owner} data expands to more than {MAX_VALUES:,} values (each "
        f"use of a YAML alias counts in full); at most {MAX_VALUES:,} values per host, group or "
        "defaults"
    ), message


def test_inventory_data_may_share_an_alias(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text(
        "r1:\n  data: &d {site: x, vlans: [1, 2, 3]}\nr2:\n  data: *d\n"
    )
    (tmp_path / "groups.yaml").write_text("{}\n")
    nr, _ = load_job(write(tmp_path, INVENTORY_JOB)).nornir()
    assert nr.inventory.hosts["r2"].data == {"site": "x", "vlans": [1, 2, 3]}


def test_loading_a_job_does_not_import_the_benchmark() -> None:
    """Job files ask the runner registry, not the benchmark, which runners await async tasks."""
    assert "nornir_bench.bench.benchmark" not in imported_by("import nornir_bench.jobs.load")


def test_a_folder_parameter_is_the_jobs_folders_as_its_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``backup_dir: mybackups`` is next to the job, wherever the command runs."""
    (tmp_path / "jobs").mkdir()
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "jobs", SYNTHETIC + textwrap.dedent("""\
        task:
          name: send_config
          params: {lines: [ip route 192.0.2.0/24 Null0], backup_dir: mybackups}
        """))
    assert load_job(path).params["backup_dir"] == str(tmp_path / "jobs" / "mybackups")


@pytest.mark.parametrize(
    ("files", "wrong"),
    [
        ({"t.j2": "ip route 192.0.2.0/24 Null0\n{% if x %}\nip route {{ }}\n{% endif %}\n"},
         "t.j2:3: template syntax error: Expected an expression, got 'end of print statement'"),
        ({"t.j2": "{% include 'part.j2' %}\n", "part.j2": "\n\n{% if x %}never closed\n"},
         "part.j2:3: template syntax error: Unexpected end of template. Jinja was looking for "
         "the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be "
         "closed is 'if'."),
    ],
)
def test_a_template_syntax_error_is_refused_at_load_naming_its_file_and_line(
    tmp_path: Path, files: dict[str, str], wrong: str
) -> None:
    """Not the same TemplateSyntaxError on every host at run time, without a line number."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = write(tmp_path, SYNTHETIC + "task: {name: send_config, params: {template_file: t.j2}}\n")
    message = error_of(path)
    assert message.startswith(f"{path}:") and f"task send_config: {tmp_path}/" in message
    assert message.endswith(wrong)
