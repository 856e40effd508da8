"""``advise`` against real routers: FRR behind an OpenSSH that throttles logins."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from nornir_bench.cli.advise import report_lines
from nornir_bench.jobs.advise import advise_job
from nornir_bench.jobs.load import load_job
from tests.routers import RouterLabProcess, router_lab_process, skip_without_router_lab

HOSTS = 30


@pytest.fixture(scope="module")
def throttling_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterLabProcess]:
    """One FRR router whose OpenSSH lets 3 logins at a time through to authentication
    (``MaxStartups 3``), with 30 inventory hosts on its port."""
    skip_without_router_lab()
    folder = tmp_path_factory.mktemp("advise-lab")
    with router_lab_process(folder, 1, hosts=HOSTS, max_startups="3") as lab:
        yield lab


def job_on(lab: RouterLabProcess, folder: Path, steps: str) -> Path:
    path = folder / "job.yaml"
    inventory = lab.inventory
    path.write_text(textwrap.dedent(f"""\
        inventory:
          plugin: SimpleInventory
          options:
            host_file: {inventory / 'hosts.yaml'}
            group_file: {inventory / 'groups.yaml'}
            defaults_file: {inventory / 'defaults.yaml'}
        runner: {{plugin: asyncio, options: {{num_workers: 100, task_timeout: 60}}}}
        logging: {{enabled: false}}
        """) + steps)
    return path


def test_logins_the_routers_ssh_server_refuses_under_load_are_warned_with_a_start_rate(
    throttling_lab: RouterLabProcess, tmp_path: Path
) -> None:
    job = load_job(job_on(throttling_lab, tmp_path, textwrap.dedent("""\
        steps:
          - {name: asend_command, params: {command: show version}}
          - {name: asend_command, params: {command: show ip route}}
        """)))
    logins = throttling_lab.logins()
    found = advise_job(job, sample=HOSTS, seed=1, runners=["asyncio"])
    first, second = found.steps
    # Two loads: a fifth of the 28 after the two alone, then the rest.
    assert [level.in_flight for level in first.sample.levels] == [5, 23]
    assert first.sample.levels[-1].refused > 0  # 23 logins at once past MaxStartups 3
    assert first.sample.failed == 0  # refused logins are paced and tried again
    # The second step reuses the sessions the first opened: each host logged in once.
    assert throttling_lab.logins() - logins == HOSTS
    assert second.sample.levels[-1].refused == 0
    lines = report_lines(found)
    warned = [line for line in lines if "SSH servers refused" in line]
    assert warned and "logins at 23 in flight: set max_starts_per_second: " in warned[0], lines
    assert any(line.startswith("recommended: runner asyncio") for line in lines)
