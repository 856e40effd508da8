"""ruff's rules and the import contracts (pyproject.toml) hold: run as the README's test command
runs everything, next to mypy (tests/test_typing.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# lint-imports as a module: the folder pip puts console scripts in need not be on PATH.
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.exit(lint_imports_command())",
    "--no-cache",
]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under ``root``, with ``root``'s contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # that package, not the one installed
    return subprocess.run(
        LINT_IMPORTS, cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_ruff_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_package_imports_upward_and_no_runner_knows_another() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (  # as core/stopping.py (now stoppable.py) once took NoOpProcessor from processors
            "core/stoppable.py",
            "from nornir_bench.processors.timing import HostTimer",
            "nornir_bench.core is not allowed to import nornir_bench.processors",
        ),
        (  # packages sharing a layer are independent
            "lab/devices.py",
            "from nornir_bench.jobs.secrets import resolve_inventory",
            "nornir_bench.lab is not allowed to import nornir_bench.jobs",
        ),
        (  # the rooms of tasks/ follow their import graph: a session knows no change
            "tasks/sessions/host_keys.py",
            "from nornir_bench.tasks.changes.journal import read_journal",
            "nornir_bench.tasks.sessions is not allowed to import nornir_bench.tasks.changes",
        ),
        (
            "runners/threadpool.py",
            "from nornir_bench.runners._keeper import Keeper",
            "",  # a shared helper of the runners' own: allowed
        ),
        (
            "runners/threadpool.py",
            "from nornir_bench.runners.asyncio_runner import AsyncioRunner",
            "the runners: none knows another BROKEN",
        ),
    ],
)
def test_the_contracts_catch_an_import_that_breaks_them(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """The contracts are not vacuous: a copy of the package with one such import fails them."""
    shutil.copytree(ROOT / "nornir_bench", tmp_path / "nornir_bench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "nornir_bench" / module).open("a") as source:
        source.write(f"\n{line}\n")
    done = lint_imports(tmp_path)
    if not broken:
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert done.returncode != 0
    assert broken in done.stdout, done.stdout + done.stderr


# -- sizes ------------------------------------------------------------------------------------

MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300

# Longer than the limits, each with why. A module or class that grows past a limit fails the
# test below until it is split or its reason is written here; one that shrinks below it fails
# until its line here goes.
LONG_MODULES: dict[str, str] = {}
LONG_CLASSES: dict[str, str] = {}


def test_no_module_or_class_is_longer_than_its_limit_without_a_reason() -> None:
    import ast

    modules, classes = {}, {}
    for path in sorted((ROOT / "nornir_bench").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            modules[name] = text.count("\n")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    classes[f"{name}:{node.name}"] = length
    assert sorted(modules) == sorted(LONG_MODULES), modules
    assert sorted(classes) == sorted(LONG_CLASSES), classes


NEAR_LIMIT = 380


def test_a_module_near_its_limit_says_why_it_is_one_idea() -> None:
    """A module of more than 380 lines is named in docs/architecture.md with its length and
    why it is one idea (a module trimmed to fit under 400 is two ideas, split, not squeezed);
    a module named there that shrank below it fails until its line goes."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    said = text.split("one of more than 380 says here why it is one idea:", 1)[1]
    said = said.split("\n## ", 1)[0]
    named = dict(re.findall(r"^- `([\w/.]+\.py)` \((\d+)\):", said, re.M))
    near = {}
    for path in sorted((ROOT / "nornir_bench").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > NEAR_LIMIT:
            near[path.relative_to(ROOT / "nornir_bench").as_posix()] = lines
    assert sorted(near) == sorted(named), (near, named)


def test_docs_architecture_lists_every_module_in_its_folder() -> None:
    """docs/architecture.md's tree names each module of the package under its own folder."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = text.split("```\nnornir_bench/\n", 1)[1].split("```", 1)[0]
    listed: set[str] = set()
    folders: list[str] = []  # the folders open at each depth
    for line in tree.splitlines():
        match = re.match(r"( +)(\S.*)", line)
        if match is None or len(match.group(1)) % 2:
            continue  # a description's second line
        depth = len(match.group(1)) // 2 - 1
        names = match.group(2).split("  ")[0]  # the name column: one name, or a few
        del folders[depth:]
        if names.endswith("/"):
            folders.append(names.rstrip("/"))
            continue
        listed.update("/".join([*folders, name]) for name in re.findall(r"\w+\.py", names))
    modules = {
        path.relative_to(ROOT / "nornir_bench").as_posix()
        for path in (ROOT / "nornir_bench").rglob("*.py")
        if path.name != "__init__.py" or path.parent == ROOT / "nornir_bench"
    }
    assert sorted(modules - listed) == []


RUNNER_MODULES = [
    "nornir_bench/runners/threadpool.py",
    "nornir_bench/runners/asyncio_runner.py",
    "nornir_bench/runners/processpool/runner.py",
    "nornir_bench/runners/dask/runner.py",
]


def test_a_runner_is_its_transport_on_the_core() -> None:
    """Each runner's ``run()`` is at most 25 lines (the lifecycle is the core's,
    runners/_core/lifecycle.py), and a runner written from the core alone in the tests
    (tests/runners/queue_runner.py, which passes the conformance and policy suites) is at
    most 60 once formatted by ruff: the dispatch is the core's (runners/_core/scheduler.py)."""
    import ast

    for module in RUNNER_MODULES:
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        runs = [
            node for cls in tree.body if isinstance(cls, ast.ClassDef)
            and cls.name.endswith("Runner") for node in cls.body
            if isinstance(node, ast.FunctionDef) and node.name == "run"
        ]
        assert len(runs) == 1, module
        lines = (runs[0].end_lineno or 0) - runs[0].lineno + 1
        assert lines <= 25, (module, lines)
    written = (ROOT / "tests" / "runners" / "queue_runner.py").read_text(encoding="utf-8")
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--no-cache", "--stdin-filename",
         "queue_runner.py", "-"],
        cwd=ROOT, input=written, capture_output=True, text=True, timeout=300, check=True,
    ).stdout
    assert formatted.count("\n") <= 60


def plan_takers(paths: list[Path]) -> list[str]:
    """Where ``paths`` take a host from a ``HostPlan``: each ``.take`` (called or not) on
    something named ``plan`` (``plan``, ``self.plan``, ``run.plan``, ``_plan``), or
    ``HostPlan.take``, as ``path:line``."""
    import ast

    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr == "take"):
                continue
            owner = node.value
            name = (
                owner.id if isinstance(owner, ast.Name)
                else owner.attr if isinstance(owner, ast.Attribute) else ""
            )
            if name.lstrip("_") in {"plan", "HostPlan"}:
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return found


def test_one_place_takes_a_host_from_the_plan() -> None:
    """Dispatch is written once: the runner core's Scheduler is the one taker of the plan's
    hosts; every runner asks it (tests/core/test_policies.py, the plan's own arithmetic, is
    not dispatch and is left out)."""
    paths = [
        path
        for folder in ("nornir_bench", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != ROOT / "tests" / "core" / "test_policies.py"
    ]
    takers = plan_takers(paths)
    assert [taker.split(":")[0] for taker in takers] == [
        "nornir_bench/runners/_core/scheduler.py"
    ], takers


# Where a runner is known by its traits (nornir_bench/core/runner_traits.py) and not by its name.
DECIDED_ON_TRAITS = [
    "nornir_bench/bench", "nornir_bench/jobs/advise.py", "nornir_bench/cli/advise.py"
]
# Names as data: the runners a sweep runs unless told, and each one's note under its table.
RUNNER_NAMES_AS_DATA = {"DEFAULT_RUNNERS", "RUNNER_NOTES"}


def runner_names_deciding(source: str, names: set[str]) -> list[int]:
    """The lines of ``source`` where a runner's name (a string of ``names``) is written
    other than as a parameter's default or in a table of :data:`RUNNER_NAMES_AS_DATA`: a
    comparison, a tuple the code tests against, a choice between two names."""
    import ast

    tree = ast.parse(source)
    as_data: set[int] = set()
    for node in ast.walk(tree):
        held: list[ast.AST] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            held = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in RUNNER_NAMES_AS_DATA for t in targets):
                held = [node.value] if node.value is not None else []
        as_data.update(id(inner) for value in held for inner in ast.walk(value))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in as_data
    ]


def test_advise_and_calibrate_decide_on_a_runners_traits_never_its_name() -> None:
    from importlib import metadata

    names = {ep.name for ep in metadata.entry_points(group="nornir.plugins.runners")}
    assert {"threadpool", "asyncio", "processpool", "dask", "threaded", "serial"} <= names
    # The check sees what it looks for.
    assert runner_names_deciding('local = runner in ("processpool", "dask")', names) == [1, 1]
    assert runner_names_deciding('x = "asyncio" if a else "threadpool"', names) == [1, 1]
    assert runner_names_deciding('DEFAULT_RUNNERS = ("threadpool",)', names) == []
    assert runner_names_deciding('def f(runner="threadpool"): pass', names) == []
    found = []
    for where in DECIDED_ON_TRAITS:
        path = ROOT / where
        for module in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            source = module.read_text(encoding="utf-8")
            found += [
                f"{module.relative_to(ROOT)}:{line}"
                for line in runner_names_deciding(source, names)
            ]
    assert found == []
