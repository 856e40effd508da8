"""``advise`` against real routers: FRR behind an OpenSSH that throttles logins (the session's
``throttling_lab``: one router letting one login at a time through, 30 hosts on its port)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from nornir_bench.cli.advise import report_lines
from nornir_bench.jobs.advise import advise_job
from nornir_bench.jobs.load import load_job
from nornir_bench.lab import RunningRouterLab
from tests.routers import THROTTLING_HOSTS as HOSTS


def job_on(lab: RunningRouterLab, folder: Path, steps: str) -> Path:
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
    throttling_lab: RunningRouterLab, tmp_path: Path
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
    assert first.sample.levels[-1].refused > 0  # 23 logins at once past MaxStartups 1
    assert first.sample.failed == 0  # refused logins are paced and tried again
    # The second step reuses the sessions the first opened: each host logged in once.
    assert throttling_lab.logins() - logins == HOSTS
    assert second.sample.levels[-1].refused == 0
    lines = report_lines(found)
    warned = [line for line in lines if "SSH servers refused" in line]
    assert warned and "logins at 23 in flight: set max_starts_per_second: " in warned[0], lines
    assert any(line.startswith("recommended: runner asyncio") for line in lines)
