"""docs/jobs.md's examples, as written: each YAML block loads through the job loader, each
shell block's commands run against the labs with the exit status the doc says.

A YAML block is read by its content: a job (it has ``inventory``), a quote of a shipped job
(first line ``# tasks/NAME.yaml (shipped)``: the file must say what the block says, and it
loads), or a fragment, loaded with a minimal job on the lab's inventory appended (so that
lines and columns stay the block's). One marked ``<!-- example: refused -->`` just above it
must be refused, in the one line the ``text`` block after it shows as the terminal does
(``job.yaml``: the block's file; ``...``: anything).

A command's status is 0 unless its comment says ``exit N``. A shell block that starts a lab
in the background (``nornir-bench lab ... &``) runs whole, with the shipped files, in a network
namespace of its own (the shipped lab's fixed ports are free there). The other blocks' commands
run one after the other, by ``nornir-bench``'s main() in the test's process (a command that
needs the shell, in a shell), in a folder holding copies of tasks/ and inventory/, inventory/lab
pointed at the session's FakeNOS lab, inventory/frr written for the session's router lab as
``nornir-bench lab --routers 3 --write inventory/frr`` writes it; ``frr_lab`` puts its routers
back as they were after the block. The doc's own task module (``mytasks``) sits beside the jobs.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from nornir_bench.jobs.load import JobError, load_job
from nornir_bench.lab import RunningRouterLab
from nornir_bench.lab.inventory_files import write_inventory, write_known_hosts
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.topology import plan_lab
from tests.cli.in_process import nornir_bench_here
from tests.devices import LabProcess
from tests.test_examples import IGNORED, ROOT, own_loopback

DOC = ROOT / "docs" / "jobs.md"
FENCE = re.compile(r"^( *)```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->$")
MARKERS = {"refused": "yaml"}  # what a marker may say, and the blocks it may stand above
SHELLS = ("bash", "console", "sh")
COMMAND = re.compile(r"^(nornir-bench|python3 -m nornir_bench)\s")
STARTS_A_LAB = re.compile(r"^nornir-bench lab\s[^#]*&\s*(#.*)?$")
STATUS = re.compile(r"#.*\bexit (\d+)\b")
SHIPPED = re.compile(r"^# (tasks/[\w.-]+\.yaml) \(shipped\)")
LAB_INVENTORY = """
inventory:
  plugin: SimpleInventory
  options:
    host_file: ../inventory/lab/hosts.yaml
    group_file: ../inventory/lab/groups.yaml
    defaults_file: ../inventory/lab/defaults.yaml
"""
SOME_TASK = "task: {name: send_command, params: {command: show version}}\n"
MYTASKS = '''"""The doc's own task module (``mytasks:collect_logs``), as a reader would have it."""
from nornir.core.task import Result, Task


def collect_logs(task: Task) -> Result:
    return Result(host=task.host, result="")
'''


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced block of the doc: its opening line (from 1), language, text, and the marker
    just above it, if any."""

    line: int
    lang: str
    text: str
    marker: str | None


@dataclasses.dataclass(frozen=True)
class Command:
    """A shell line of a block (continuations joined): its line in the doc, text and the exit
    status the doc gives it."""

    line: int
    text: str
    status: int


def doc_blocks(path: Path = DOC) -> list[Block]:
    """Every fenced block of ``path``, indented ones (in a list item) dedented."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    at = 0
    while at < len(lines):
        opening = FENCE.match(lines[at])
        if opening is None:
            at += 1
            continue
        indent, lang = len(opening[1]), opening[2]
        end = next(i for i in range(at + 1, len(lines)) if lines[i].strip() == "```")
        text = "".join(line[indent:] + "\n" for line in lines[at + 1 : end])
        above = next((line.strip() for line in reversed(lines[:at]) if line.strip()), "")
        marker = MARKER.match(above)
        found.append(Block(at + 1, lang, text, marker[1] if marker else None))
        at = end + 1
    return found


def shell_lines(block: Block) -> list[Command]:
    """The block's commands: continuations joined, blank and comment lines left out, and in a
    ``console`` block only the ``$ `` lines (the others are output)."""
    found: list[Command] = []
    pending: tuple[int, str] | None = None
    for offset, raw in enumerate(block.text.splitlines(), start=block.line + 1):
        if block.lang == "console":
            prompt = "$ " if pending is None else "> "
            if not raw.startswith(prompt):
                continue
            raw = raw.removeprefix(prompt)
        if pending is not None:
            offset, raw = pending[0], pending[1] + " " + raw.strip()
            pending = None
        if raw.endswith("\\"):
            pending = (offset, raw[:-1].rstrip())
            continue
        if raw.strip() and not raw.lstrip().startswith("#"):
            status = STATUS.search(raw)
            found.append(Command(offset, raw.strip(), int(status[1]) if status else 0))
    return found


BLOCKS = doc_blocks()
YAML_BLOCKS = [b for b in BLOCKS if b.lang == "yaml"]
SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELLS]


def where(block: Block) -> str:
    return f"{DOC.name}:{block.line}"


def test_every_example_is_found_and_every_command_is_in_a_shell_block() -> None:
    """The blocks the tests below take are there; each marker is one they know, above a block
    it applies to; no command hides in a block they do not run (``text``: output)."""
    assert YAML_BLOCKS and SHELL_BLOCKS
    for block in BLOCKS:
        if block.marker is not None:
            assert MARKERS.get(block.marker) == block.lang, f"{where(block)}: {block.marker!r}"
        if block.lang in SHELLS:
            assert shell_lines(block), f"{where(block)}: a shell block with no command"
        else:
            hidden = [line for line in block.text.splitlines() if COMMAND.match(line.strip())]
            assert not hidden, f"{where(block)}: commands in a {block.lang or 'plain'} block"


def test_the_blocks_are_read_as_the_doc_writes_them(tmp_path: Path) -> None:
    """Markers, indented fences, ``console`` prompts, continuations and ``exit N``."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- example: refused -->\n\n```yaml\ntask: {}\n```\n"
        "- item:\n\n  ```console\n  $ nornir-bench run a.yaml \\\n  >   --show\n  output\n"
        "  $ nornir-bench run b.yaml  # none left: exit 2\n  ```\n"
    )
    first, second = doc_blocks(doc)
    assert (first.line, first.lang, first.text, first.marker) == (
        3,
        "yaml",
        "task: {}\n",
        "refused",
    )
    assert second.line == 8 and second.marker is None
    assert shell_lines(second) == [
        Command(9, "nornir-bench run a.yaml --show", 0),
        Command(12, "nornir-bench run b.yaml  # none left: exit 2", 2),
    ]
    assert shows("a.yaml:3:3: no 'x'; takes: y, ...", "a.yaml:3:3: no 'x'; takes: y, z")
    assert not shows("a.yaml:3:3: ...", "b.yaml:3:3: no 'x'")


# -- YAML blocks ---------------------------------------------------------------------------


def workspace(
    folder: Path, *, lab: LabProcess | None = None, routers: RunningRouterLab | None = None
) -> Path:
    """``folder`` holding copies of tasks/ and inventory/ and the doc's ``mytasks``; the lab's
    hosts at ``lab``'s ports, inventory/frr that of ``routers`` (else of a lab planned, not
    started: enough to load a job)."""
    shutil.copytree(ROOT / "tasks", folder / "tasks", ignore=IGNORED)
    shutil.copytree(ROOT / "inventory", folder / "inventory", ignore=IGNORED)
    (folder / "tasks" / "mytasks.py").write_text(MYTASKS, encoding="utf-8")
    if lab is not None:
        hosts_file = folder / "inventory" / "lab" / "hosts.yaml"
        yaml = YAML()
        hosts = yaml.load(hosts_file)
        for device in lab.devices:
            hosts[device.name]["port"] = device.port
        yaml.dump(hosts, hosts_file)
        # as ``nornir-bench lab inventory/lab`` writes them, where its defaults name them
        write_known_hosts(lab.devices, folder / "inventory" / "lab")
    planned = RouterLab(plan_lab(3, port=3001, name="frr"))
    write_inventory((routers or planned).devices(), folder / "inventory" / "frr")
    return folder


def as_job(text: str) -> str:
    """The block as a job: a fragment gets the lab's inventory (and a task, if it gives none)
    after its own lines, which keep their numbers."""
    keys = YAML(typ="safe").load(text) or {}
    if "inventory" not in keys:
        text += LAB_INVENTORY
        if "task" not in keys and "steps" not in keys:
            text += SOME_TASK
    return text


def loaded(path: Path) -> None:
    """``path`` loaded as ``nornir-bench run`` loads it before anything runs: the job, then its
    inventory and filters (nornir's own logging off: it would reconfigure this process's)."""
    job = load_job(path)
    dataclasses.replace(job, settings={**job.settings, "logging": {"enabled": False}}).nornir()


def holds(whole: Any, part: Any) -> bool:
    """Whether ``whole`` says everything ``part`` says (mappings: at least its keys)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in whole and holds(whole[key], value) for key, value in part.items()
        )
    return bool(whole == part)


def shown_after(block: Block) -> str:
    """The ``text`` block right after ``block``: what the doc shows it does."""
    following = BLOCKS[BLOCKS.index(block) + 1]
    assert following.lang == "text", f"{where(block)}: no text block after it to show its error"
    return following.text.strip()


def shows(shown: str, said: str) -> bool:
    """Whether ``said`` is what the doc ``shown`` (where ``...`` stands for anything)."""
    return re.fullmatch(".*".join(map(re.escape, shown.split("..."))), said) is not None


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=where)
def test_a_yaml_example_loads_as_written(block: Block, tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    shipped = SHIPPED.match(block.text)
    if shipped:
        path = folder / shipped[1]
        quoted, whole = (YAML(typ="safe").load(text) for text in (block.text, path.read_text()))
        assert holds(whole, quoted), f"{where(block)}: says what {shipped[1]} does not"
    else:
        path = folder / "tasks" / "job.yaml"
        path.write_text(as_job(block.text), encoding="utf-8")
    if block.marker != "refused":
        loaded(path)
        return
    with pytest.raises(JobError) as refused:
        loaded(path)
    message = str(refused.value).replace(str(path), path.name)
    assert "\n" not in message
    shown = shown_after(block)
    assert shows(shown, f"nornir-bench: error: {message}"), f"{where(block)}: {message}"


# -- shell blocks --------------------------------------------------------------------------


def labs_named(commands: list[Command]) -> set[str]:
    """Which labs the jobs the commands name reach: ``lab`` (FakeNOS), ``frr`` (routers)."""
    needs: set[str] = set()
    for command in commands:
        for word in shlex.split(command.text, comments=True):
            job = ROOT / word
            if word.endswith(".yaml") and job.is_file():
                text = job.read_text(encoding="utf-8")
                needs |= {lab for lab in ("lab", "frr") if f"inventory/{lab}/" in text}
    return needs


def shell_env() -> dict[str, str]:
    """This environment, with this interpreter's ``nornir-bench`` and ``python3`` first."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**os.environ, "PATH": path}


def shell(args: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``folder`` with the examples' environment, their output captured."""
    return subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=300,
                          env=shell_env(), check=False)


SHELL_SYNTAX = re.compile(r"[|<>;&$`]")


def run_command(text: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """A command of the doc in ``folder``: split as the shell splits it and run by
    ``nornir-bench``'s main() in this process (tests/cli/in_process.py); one that needs the
    shell (a pipe, a redirection, a variable) by the shell."""
    words = shlex.split(text, comments=True)
    command = text.split("#", 1)[0]
    if SHELL_SYNTAX.search(command):
        return shell(["bash", "-c", text], folder)
    given = words[1:] if words[0] == "nornir-bench" else words[3:]  # python3 -m nornir_bench
    return nornir_bench_here(*given, cwd=folder)


def run_starting_a_lab(block: Block, folder: Path) -> None:
    """The block as a script, in a namespace with only a loopback, from ``folder`` holding
    the shipped files; the labs it starts in the background are stopped when it ends."""
    assert all(c.status == 0 for c in shell_lines(block)), f"{where(block)}: exit N in a lab block"
    for name in ("tasks", "inventory"):
        shutil.copytree(ROOT / name, folder / name, ignore=IGNORED)
    # The labs are stopped when the script ends, also at a failed command (``set -e``): one
    # left running would hold the output open, and its namespace, until killed by hand.
    script = f"set -e\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n{block.text}"
    done = shell(own_loopback(script), folder)
    assert done.returncode == 0, f"{where(block)}:\n{done.stdout}{done.stderr}"
    assert "lab stopped" in done.stdout.splitlines()[-1], f"{where(block)}:\n{done.stdout}"


@pytest.mark.slow  # labs, taken per block (getfixturevalue): conftest.py cannot see them
@pytest.mark.timeout(900)
@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=where)
def test_a_shell_example_runs_as_written(
    block: Block, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    commands = shell_lines(block)
    if any(STARTS_A_LAB.match(c.text) for c in commands):  # a lab of its own: the doc's text
        run_starting_a_lab(block, tmp_path)
        return
    unknown = [c.text for c in commands if not COMMAND.match(c.text)]
    assert not unknown, f"{where(block)}: not a nornir-bench command: {unknown}"
    needs = labs_named(commands)
    lab = request.getfixturevalue("fakenos_lab") if "lab" in needs else None
    # frr_lab puts the routers back after the test, whatever the commands changed.
    routers = request.getfixturevalue("frr_lab") if "frr" in needs else None
    folder = workspace(tmp_path / "work", lab=lab, routers=routers)
    for command in commands:
        done = run_command(command.text, folder)
        assert done.returncode == command.status, (
            f"{DOC.name}:{command.line}: {command.text}\n{done.stdout}{done.stderr}"
        )
