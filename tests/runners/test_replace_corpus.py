"""``mode: replace`` over a corpus of intended and running configurations, on real FRR
routers (tests/tasks/changes/frr_corpus.yaml: static routes, prefix-lists, route-maps, BGP
neighbours and address families, interfaces), each pair both ways: the router set to one
side (as root, through vtysh), the other side applied through the task, then the change
rolled back through ``restore_config`` (``nornir-bench recover``'s task).

After the apply, the scope read back equals the intended configuration; after the rollback,
the running configuration is the backup, byte for byte. Each round changes every router of a
lab of the module's own at once, half the rounds with netmiko (``send_config`` on
threadpool), half with scrapli (``asend_config`` on asyncio).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from nornir.core.task import Result, Task
from ruamel.yaml import YAML

from nornir_bench import arun_subtask
from nornir_bench.lab import RunningRouterLab
from nornir_bench.lab.vtysh import restore_config as put_router_back
from nornir_bench.tasks import asend_config, send_config
from nornir_bench.tasks.changes.restore import arestore_config, restore_config
from nornir_bench.tasks.dialects.config_text import in_scope, parse_config, replaced, same
from nornir_bench.tasks.dialects.dialects import FRRDriver
from tests.routers import (
    lab_pids,
    router_lab_process,
    skip_without_router_lab,
)
from tests.runners.test_routers import closed

CORPUS = YAML(typ="safe").load(Path(__file__).parents[1] / "tasks" / "changes" / "frr_corpus.yaml")
ROUTERS = 12
SHOW = "show running-config"


class Case(NamedTuple):
    """A pair, one way: the router set to ``start``, then ``intended`` applied."""

    name: str
    scope: list[str]
    start: str
    intended: str


CASES = [Case(f"{p['name']}:{way}", p["scope"], *(
    (p["running"], p["intended"]) if way == "forward" else (p["intended"], p["running"])))
    for p in CORPUS for way in ("forward", "back")]
ROUNDS = [CASES[k:k + ROUTERS] for k in range(0, len(CASES), ROUTERS)]


def test_the_corpus_is_large_and_covers_each_kind_of_section() -> None:
    assert len(CORPUS) >= 30 and len({p["name"] for p in CORPUS}) == len(CORPUS)
    scopes = {scope for p in CORPUS for scope in p["scope"]}
    assert {"ip route", "ip prefix-list", "route-map", "router bgp", "interface"} <= scopes
    assert math.ceil(len(CASES) / ROUTERS) == len(ROUNDS)


@pytest.fixture(scope="module")
def corpus_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRouterLab]:
    """12 routers of the module's own: a round changes that many at once, and the session's
    lab has 3."""
    skip_without_router_lab()
    with router_lab_process(tmp_path_factory.mktemp("corpus-lab"), ROUTERS) as lab:
        yield lab


def frr(text: str) -> Any:
    return parse_config(text, FRRDriver())


def set_to(lab: RunningRouterLab, router: str, case: Case) -> None:
    """``router``'s scope made ``case.start`` (as root, through vtysh), checked."""
    now = frr(lab.vtysh(router, SHOW))
    wanted = "\n".join(replaced(now, frr(case.start), case.scope).lines())
    assert put_router_back(lab.name, router, wanted), (case.name, lab.vtysh(router, SHOW))


def change(task: Task, by_host: dict[str, Case], backup_dir: str) -> Result:
    case = by_host[task.host.name]
    return task.run(task=send_config, lines=case.intended.splitlines(), mode="replace",
                    scope=case.scope, backup_dir=backup_dir)


async def achange(task: Task, by_host: dict[str, Case], backup_dir: str) -> Result:
    case = by_host[task.host.name]
    return await arun_subtask(task, asend_config, lines=case.intended.splitlines(),
                              mode="replace", scope=case.scope, backup_dir=backup_dir)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("cases", ROUNDS, ids=[f"round{k + 1}" for k in range(len(ROUNDS))])
def test_a_replace_makes_the_intended_configuration_and_its_rollback_the_backup(
    corpus_lab: RunningRouterLab, cases: list[Case], tmp_path: Path,
) -> None:
    routers = [r.name for r in corpus_lab.plan.routers][:len(cases)]
    by_host = dict(zip(routers, cases, strict=True))
    for router, case in by_host.items():
        set_to(corpus_lab, router, case)
    scrapli = ROUNDS.index(cases) % 2 == 1
    sessions = set(lab_pids(corpus_lab.name, "vtysh"))
    nr = corpus_lab.nornir("asyncio" if scrapli else "threadpool").filter(
        filter_func=lambda host: host.name in by_host)
    try:
        wrong: dict[str, str] = {}
        backups: dict[str, str] = {}
        applied = nr.run(task=achange if scrapli else change, by_host=by_host,
                         backup_dir=str(tmp_path / "backups"))
        for router, case in by_host.items():
            result = applied[router][1]
            if result.failed or result.change["state"] != "changed":  # type: ignore[attr-defined]
                wrong[case.name] = f"apply: {result.exception or result.result}"
                continue
            backups[router] = result.change["backup"]  # type: ignore[attr-defined]
            now = in_scope(frr(corpus_lab.vtysh(router, SHOW)), case.scope)
            if not same(now, in_scope(frr(case.intended), case.scope)):
                wrong[case.name] = f"after apply, not the intended:\n{list(now.lines())}"
        rolled = nr.filter(filter_func=lambda host: host.name in backups).run(
            task=arestore_config if scrapli else restore_config, backups=backups)
        for router, backup in backups.items():
            case = by_host[router]
            if rolled[router].failed:
                wrong[case.name] = f"rollback: {rolled[router][0].exception}"
            elif corpus_lab.vtysh(router, SHOW).rstrip() != Path(backup).read_text().rstrip():
                wrong[case.name] = "after rollback, not the backup byte for byte"
    finally:
        closed(nr, corpus_lab, sessions)
    assert not wrong, wrong
