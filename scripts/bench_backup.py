#!/usr/bin/env python3
"""A backup run's commit with each git library, against a plain ``git add -A && git commit``:
which library ``nornir-bench backup`` writes its repository with (issue 53).

    python scripts/bench_backup.py [--hosts 2000] [--runs 30] [--quick] [--record PATH]

A fleet of ``--hosts`` synthetic configurations (2-20 KB of interfaces, BGP neighbours and
access lists, the same every time: a seeded draw), committed once, then ``--runs`` runs in
which 1 % of the hosts change a line or two. Each side gets the same files and the same
changes, in a repository of its own with a work tree:

- ``pygit2`` (libgit2): the changed files written, ``Index.add`` of each, the index written,
  its tree and a commit;
- ``dulwich`` (pure Python): the changed files written, ``WorkTree.stage`` of them, a commit;
- ``GitPython``: the changed files written, ``IndexFile.add`` of them, ``IndexFile.commit``;
- ``git`` (the command): the changed files written, ``git add -A``, ``git commit``;
- ``nornir-bench``'s own repository (pygit2): every host's configuration given, as the
  command gives them, the changed ones told by their blob ids, its loose objects packed once
  past git's ``gc.auto`` (6,700: the first run at 10,000 hosts packs them).

A run's commit is timed from the first file written to the commit's ref (wall and CPU of this
process and its children), the sides in turn each run so that the machine's drift hits them
alike. Then each repository's objects (bytes under ``.git/objects``) as the side left them,
and after the side's own packing (pygit2's ``Repository.pack`` with the loose objects
removed, dulwich's ``porcelain.gc``, GitPython's and the command's ``git gc``), against the
command's ``git gc`` of its own history. Also, once: what telling the changed hosts from the
others costs (a git blob id of every configuration, compared with the last commit's), and
masking their secrets (as a backup's files are masked).

Targets (issue 53): the commit of a run within 5 s on 2 cores at 10,000 hosts; the repository
within 2x the size of ``git gc``'s packing after 30 runs. The default, 2,000 hosts, runs in a
minute or two on 2 shared cores; ``--hosts 10000`` is the issue's fleet (about 110 MB of
configurations). ``--quick``: 100 hosts, 3 runs. Everything is written in a temporary folder.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import harness
from harness.tables import met, table
from nornir_bench.core.secrets import mask_config_secrets

AUTHOR = ("nornir-bench", "nornir-bench@localhost")
GIT_ENV = {"GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
           "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1]}
COMMIT_TARGET_S = 5.0
SIZE_TARGET = 2.0

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole(10))
PARSER.add_argument("--runs", type=harness.whole(1))


# -- the fleet -------------------------------------------------------------------------------


def configuration(rng: random.Random, name: str) -> list[str]:
    """A host's configuration, 2-20 KB, as lines."""
    size = rng.randint(2_000, 20_000)
    lines = [f"hostname {name}", "!", "service timestamps log datetime msec", "!"]
    number = 0
    while sum(len(line) + 1 for line in lines) < size:
        number += 1
        kind = rng.random()
        if kind < 0.6:
            lines += [f"interface GigabitEthernet0/{number}",
                      f" description link to {rng.choice('abcdefgh')}{rng.randint(1, 999)}",
                      f" ip address 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.1 "
                      "255.255.255.0", " no shutdown", "!"]
        elif kind < 0.8:
            lines += [f"ip access-list extended acl-{number}",
                      *(f" permit tcp any host 192.0.2.{rng.randint(1, 254)} eq "
                        f"{rng.choice((22, 80, 443, 830))}" for _ in range(rng.randint(2, 6))),
                      "!"]
        else:
            lines += [f" neighbor 198.51.100.{rng.randint(1, 254)} remote-as "
                      f"{rng.randint(64512, 65534)}", "!"]
    return lines


def changed(rng: random.Random, lines: list[str], run: int) -> list[str]:
    """``lines`` with a line or two changed, as a day's work on a router does."""
    lines = list(lines)
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(4, len(lines))
        lines[at] = f" description changed in run {run} ({rng.randint(0, 10**6)})"
    return lines


# -- the sides -------------------------------------------------------------------------------


class Side(Protocol):
    """A library's repository of configuration files: a run's commit, and its own packing."""

    def commit(self, files: dict[str, bytes], message: str) -> None: ...

    def pack(self) -> None: ...


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Each file written whole, then renamed into place: a file is never half-written."""
    for name, data in files.items():
        part = root / f".{name}.part"
        part.write_bytes(data)
        os.replace(part, root / name)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


class Pygit2Side:
    def __init__(self, root: Path) -> None:
        import pygit2

        self.root = root
        self.repo = pygit2.init_repository(str(root), initial_head="main")
        self.signature = pygit2.Signature(*AUTHOR)

    def commit(self, files: dict[str, bytes], message: str) -> None:
        write_files(self.root, files)
        index = self.repo.index
        index.read()
        for name in files:
            index.add(name)
        index.write()
        tree = index.write_tree()
        parents = [] if self.repo.head_is_unborn else [self.repo.head.target]
        self.repo.create_commit("HEAD", self.signature, self.signature, message, tree, parents)

    def pack(self) -> None:
        self.repo.pack()
        objects = self.root / ".git" / "objects"
        for folder in objects.glob("[0-9a-f][0-9a-f]"):
            shutil.rmtree(folder)


class DulwichSide:
    def __init__(self, root: Path) -> None:
        from dulwich.repo import Repo

        self.root = root
        self.repo = Repo.init(str(root), mkdir=True, default_branch=b"main")
        self.author = f"{AUTHOR[0]} <{AUTHOR[1]}>".encode()

    def commit(self, files: dict[str, bytes], message: str) -> None:
        write_files(self.root, files)
        tree = self.repo.get_worktree()
        tree.stage(sorted(files))
        tree.commit(message.encode(), committer=self.author, author=self.author)

    def pack(self) -> None:
        from dulwich import porcelain

        porcelain.gc(self.repo, prune=True, grace_period=0)


class GitPythonSide:
    def __init__(self, root: Path) -> None:
        import git as gitpython

        self.root = root
        self.repo = gitpython.Repo.init(root, initial_branch="main")
        self.actor = gitpython.Actor(*AUTHOR)

    def commit(self, files: dict[str, bytes], message: str) -> None:
        write_files(self.root, files)
        self.repo.index.add(sorted(files))
        self.repo.index.commit(message, author=self.actor, committer=self.actor)

    def pack(self) -> None:
        self.repo.git.gc()


class GitCommandSide:
    def __init__(self, root: Path) -> None:
        self.root = root
        git(root.parent, "init", "-q", "-b", "main", root.name)

    def commit(self, files: dict[str, bytes], message: str) -> None:
        write_files(self.root, files)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)

    def pack(self) -> None:
        git(self.root, "gc", "-q")


class RepositorySide:
    """nornir-bench's own repository (``ConfigRepository.commit_run``) given every host's
    configuration each run, as ``nornir-bench backup`` gives it: it tells the changed ones
    itself, and packs its loose objects past git's ``gc.auto``."""

    def __init__(self, root: Path) -> None:
        from nornir_bench.history.repository import ConfigRepository

        self.repo = ConfigRepository(root)
        self.fleet: dict[str, str] = {}

    def commit(self, files: dict[str, bytes], message: str) -> None:
        self.fleet.update((name.removesuffix(".cfg"), data.decode()) for name, data in
                          files.items())
        self.repo.commit_run(self.fleet, lambda written: message)

    def pack(self) -> None:
        """Its packing is its commit's."""


SIDES: dict[str, Callable[[Path], Side]] = {
    "pygit2": Pygit2Side, "dulwich": DulwichSide, "GitPython": GitPythonSide,
    "git add -A && git commit": GitCommandSide,
    "nornir-bench (pygit2, all hosts given)": RepositorySide,
}


def objects_size(root: Path) -> int:
    return sum(path.stat().st_size for path in (root / ".git" / "objects").rglob("*")
               if path.is_file())


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object id


# -- the measure -----------------------------------------------------------------------------


def main(bench: harness.Bench) -> int:
    args = bench.args
    hosts = args.hosts or (100 if bench.quick else 2_000)
    runs = args.runs or (3 if bench.quick else 30)
    bench.heading(f"{hosts:,} hosts, {runs} runs of 1 % changed, sides {', '.join(SIDES)}")
    folder = Path(tempfile.mkdtemp(prefix="bench-backup-"))
    try:
        return measure(bench, folder, hosts, runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(bench: harness.Bench, folder: Path, hosts: int, runs: int) -> int:
    rng = random.Random(53)
    fleet = {f"host{number:05d}.cfg": configuration(rng, f"host{number:05d}")
             for number in range(hosts)}
    first = {name: "\n".join(lines).encode() + b"\n" for name, lines in fleet.items()}
    size = sum(len(data) for data in first.values())
    print(f"fleet: {hosts:,} configurations, {size / 1e6:.1f} MB")
    sides = {name: make(folder / f"side{number}") for number, (name, make)
             in enumerate(SIDES.items())}
    firsts = harness.alternate(
        {name: functools.partial(_timed, side.commit, first, "run 0")
         for name, side in sides.items()}, 1)
    each: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    per_run = max(1, hosts // 100)
    for run in range(1, runs + 1):
        names = rng.sample(sorted(fleet), per_run)
        files = {}
        for name in names:
            fleet[name] = changed(rng, fleet[name], run)
            files[name] = "\n".join(fleet[name]).encode() + b"\n"
        got = harness.alternate(
            {name: functools.partial(_timed, side.commit, files, f"run {run}")
             for name, side in sides.items()}, 1, mirror=run % 2 == 0)
        for name, timings in got.items():
            each[name] += timings
    known = {name: blob_id(data) for name, data in first.items()}
    with harness.Stopwatch() as detect:
        differ = sum(blob_id("\n".join(lines).encode() + b"\n") != known[name]
                     for name, lines in fleet.items())
    print(f"telling changed from unchanged: {hosts:,} blob ids in {detect.wall:.3f} s "
          f"({differ:,} differ from run 0)")
    texts = ["\n".join(lines) + "\n" for lines in fleet.values()]
    with harness.Stopwatch() as masking:
        for text in texts:
            mask_config_secrets(text)
    print(f"masking secrets: {hosts:,} configurations in {masking.wall:.3f} s "
          f"({masking.wall / hosts * 1e6:.0f} us each)\n")
    rows = []
    for name in sides:
        walls = harness.Spread.of(wall for wall, _ in each[name])
        cpus = harness.Spread.of(cpu for _, cpu in each[name])
        rows.append([name, f"{firsts[name][0][0]:.2f}", walls.text(3), cpus.text(3),
                     met(walls.high <= COMMIT_TARGET_S, f"<= {COMMIT_TARGET_S:g}")])
    table(["side", "run 0 s (all files)", f"run commit s, median of {runs} (min-max)",
           "CPU s (min-max)", "worst run (target at 10,000 hosts)"], rows, bench,
          hosts=hosts, runs=runs, part="commit")
    roots = {name: folder / f"side{number}" for number, name in enumerate(sides)}
    loose = {name: objects_size(root) for name, root in roots.items()}
    packing = {name: _timed_pack(side) for name, side in sides.items()}
    packed = objects_size(roots["git add -A && git commit"])
    rows = []
    for name in sides:
        own = objects_size(roots[name])
        rows.append([name, f"{loose[name] / 1e6:.1f}", f"{packing[name]:.2f}", f"{own / 1e6:.1f}",
                     f"{own / packed:.2f}", met(own <= SIZE_TARGET * packed, "<= 2")])
    table(["side", "objects MB as left", "its own packing s", "MB after it",
           "x git gc's packing", f"after {runs} runs (target)"], rows, bench, hosts=hosts,
          runs=runs, part="size")
    print(f"git gc's packing of the same history: {packed / 1e6:.2f} MB; {os.cpu_count()} CPUs")
    return 0


def _timed_pack(side: Side) -> float:
    with harness.Stopwatch() as took:
        side.pack()
    return took.wall


def _timed(commit: Callable[[dict[str, bytes], str], None], files: dict[str, bytes],
           message: str) -> tuple[float, float]:
    """Wall and CPU seconds (this process and the children it waited for) of a commit."""
    with harness.Stopwatch() as took:
        commit(files, message)
    return took.wall, took.cpu + took.children


if __name__ == "__main__":
    harness.run_script(main, PARSER)
