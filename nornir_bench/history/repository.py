"""A git repository of configurations, one file per host (``HOST.cfg``), one commit per run.

A run's files are written so that nothing half-done is ever committed or left locked, whatever
kills the process: each changed file is written beside its place and renamed into it; the
commit's tree is built in an index of nornir-bench's own (never git's ``index.lock``), from the
last commit's tree (not from the work tree, which a killed run may have left ahead of it); the
commit is made, the branch moved to it, and only then the new index renamed over git's. Objects
are written by libgit2, each whole before it is renamed into place. Once loose objects pile up
past git's own ``gc.auto`` threshold they are packed, with deltas, as ``git gc`` would.

Anything git or the disk refuses (not a repository, a corrupt one, a full disk) is a
:class:`RepositoryError`: one line, and the command's exit status 2.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import pygit2

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.history.volatile import without_volatile_lines

__all__ = [
    "BRANCH",
    "SUFFIX",
    "ConfigRepository",
    "RepositoryError",
    "Written",
    "file_name",
    "host_of",
]

SUFFIX = ".cfg"
BRANCH = "refs/heads/main"
AUTHOR = pygit2.Signature("nornir-bench", "nornir-bench@localhost")
LOOSE_OBJECTS_PACKED = 6700  # git's gc.auto: loose objects past which git packs them
_OUR_INDEX = "nornir-bench-index"
_PART = ".nornir-bench-part"


class RepositoryError(NornirBenchError):
    """The repository cannot be used or written: not one, corrupt, or the disk refused."""


@dataclass(frozen=True)
class Written:
    """What a run changed in the repository.

    Attributes:
        commit: the new commit's id; ``None`` when nothing changed (no commit is made).
        changed: the hosts whose file is new or different.
        unchanged: the hosts whose file is as the last commit holds it.
        removed: the hosts whose file was removed (``prune``).
    """

    commit: str | None
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[str, ...] = ()


def file_name(host: str) -> str:
    """The file holding ``host``'s configuration: its name, ``%``-escaped where a file name
    could not hold it (``/``, a leading ``.``), then ``.cfg``."""
    name = quote(host, safe=" !#$&'()+,;=@[]^`{}~-_.")
    if name.startswith("."):
        name = "%2E" + name[1:]
    return name + SUFFIX


def host_of(name: str) -> str | None:
    """The host whose file ``name`` is (``None``: not a host's file)."""
    return unquote(name[: -len(SUFFIX)]) if name.endswith(SUFFIX) and "/" not in name else None


def _failed(path: Path, doing: str, exc: BaseException) -> RepositoryError:
    if isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    else:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return RepositoryError(f"--repo {path}: {doing}: {why}")


class ConfigRepository:
    """A repository of host configurations at ``path``: opened, or made in a new or empty
    folder.

    Raises:
        RepositoryError: ``path`` is a file, a folder holding other files, a bare or corrupt
            repository, or cannot be written.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.repo = self._open_or_make(path)
            self._head_tree()  # a corrupt HEAD, commit or tree is found before any device
        except (OSError, pygit2.GitError, KeyError, ValueError) as exc:
            raise _failed(path, "not a usable git repository", exc) from None
        self.git_dir = Path(self.repo.path)

    @staticmethod
    def _open_or_make(path: Path) -> pygit2.Repository:
        if path.exists() and not path.is_dir():
            raise RepositoryError(f"--repo {path}: not a folder")
        if not path.exists() or not any(path.iterdir()):
            return pygit2.init_repository(str(path), initial_head="main")
        if not (path / ".git").exists():
            raise RepositoryError(
                f"--repo {path}: not a git repository, and not empty: give a repository "
                "nornir-bench backup made, or a new or empty folder"
            )
        repo = pygit2.Repository(str(path))
        if repo.is_bare or repo.workdir is None:
            raise RepositoryError(f"--repo {path}: a bare repository: give one with a work tree")
        return repo

    def _head_tree(self) -> pygit2.Tree | None:
        if self.repo.head_is_unborn:
            return None
        commit = self.repo.head.peel(pygit2.Commit)
        tree = commit.tree
        len(tree)  # read now: a missing or corrupt tree object raises here
        return tree

    def hosts(self) -> set[str]:
        """The hosts the last commit holds a file of."""
        tree = self._head_tree()
        found = (host_of(entry.name or "") for entry in tree) if tree is not None else ()
        return {host for host in found if host is not None}

    def commit_run(
        self,
        configs: Mapping[str, str],
        message: Callable[[Written], str],
        *,
        remove: Iterable[str] = (),
    ) -> Written:
        """Write each host's configuration in ``configs``, remove the files of the hosts in
        ``remove``, and commit with ``message`` if anything changed. Hosts in neither keep
        their file as it is (a host that failed: its last good file). ``message`` is given
        what the run changes (its ``commit`` still ``None``) and says it.

        Raises:
            RepositoryError: git or the disk refused (the repository is left as it was).
        """
        try:
            self._clean_leftovers()
            return self._commit(configs, message, set(remove))
        except (OSError, pygit2.GitError) as exc:
            raise _failed(self.path, "cannot write the run", exc) from None

    def _commit(self, configs: Mapping[str, str], message: Callable[[Written], str],
                remove: set[str]) -> Written:
        tree = self._head_tree()
        blobs: dict[str, pygit2.Oid] = {}
        unchanged = []
        for host in sorted(configs):
            data = without_volatile_lines(configs[host]).encode("utf-8")
            name = file_name(host)
            if tree is not None and name in tree and tree[name].id == pygit2.hash(data):
                unchanged.append(host)
                continue
            blobs[name] = self.repo.create_blob(data)
            self._write_file(name, data)
        removed = sorted(h for h in remove if tree is not None and file_name(h) in tree)
        if not blobs and not removed:
            if tree is not None:
                self._index_matching(tree)
            return Written(None, (), tuple(unchanged))
        changed = tuple(host_of(name) or name for name in sorted(blobs))
        written = Written(None, changed, tuple(unchanged), tuple(removed))
        commit = self._record(tree, blobs, [file_name(h) for h in removed], message(written))
        for host in removed:
            with contextlib.suppress(FileNotFoundError):
                (self.path / file_name(host)).unlink()
        self._pack_when_loose()
        return Written(str(commit), changed, tuple(unchanged), tuple(removed))

    def _write_file(self, name: str, data: bytes) -> None:
        """``name`` in the work tree, written whole beside its place, then renamed into it."""
        part = self.path / (name + _PART)
        part.write_bytes(data)
        os.replace(part, self.path / name)

    def _record(self, tree: pygit2.Tree | None, blobs: Mapping[str, pygit2.Oid],
                removed: list[str], message: str) -> pygit2.Oid:
        """The commit of the last one's tree with ``blobs`` and without ``removed``; the branch
        moved to it, then git's index replaced by one that matches it."""
        ours = self.git_dir / _OUR_INDEX
        index = pygit2.Index(str(ours))
        if tree is not None:
            index.read_tree(tree)
        for name, oid in blobs.items():
            index.add(pygit2.IndexEntry(name, oid, pygit2.enums.FileMode.BLOB))
        for name in removed:
            index.remove(name)
        new_tree = index.write_tree(self.repo)
        parents = [] if self.repo.head_is_unborn else [self.repo.head.target]
        commit = self.repo.create_commit(None, AUTHOR, AUTHOR, message, new_tree, parents)
        self.repo.references.create(BRANCH, commit, force=True)
        index.write()
        os.replace(ours, self.git_dir / "index")
        return commit

    def _index_matching(self, tree: pygit2.Tree) -> None:
        """git's index made the last commit's again if it is not (a run killed after its
        commit, before its index replaced git's)."""
        if pygit2.Index(str(self.git_dir / "index")).write_tree(self.repo) == tree.id:
            return
        ours = self.git_dir / _OUR_INDEX
        index = pygit2.Index(str(ours))
        index.read_tree(tree)
        index.write()
        os.replace(ours, self.git_dir / "index")

    def _clean_leftovers(self) -> None:
        """What a killed run of ours left: half-written files and its own index, never
        committed (the writer holds the repository's lock: no run of ours is writing now)."""
        for leftover in (*self.path.glob("*" + _PART), *self.git_dir.glob(_OUR_INDEX + "*")):
            leftover.unlink(missing_ok=True)

    def _pack_when_loose(self) -> None:
        """Loose objects past git's ``gc.auto`` packed into a pack of their own, with deltas
        between them; the loose copies removed."""
        objects = self.git_dir / "objects"
        loose = [path for folder in objects.glob("[0-9a-f][0-9a-f]") for path in folder.iterdir()]
        if len(loose) <= LOOSE_OBJECTS_PACKED:
            return
        ids = [pygit2.Oid(hex=path.parent.name + path.name) for path in loose
               if len(path.name) == 38]

        def add_loose(builder: pygit2.PackBuilder) -> None:
            for oid in ids:
                builder.add(oid)

        # Only the loose objects: a run's cost stays the objects since the last pack, not the
        # whole history's; all the CPUs (0: libgit2 counts them).
        self.repo.pack(pack_delegate=add_loose, n_threads=0)
        for path in loose:
            path.unlink(missing_ok=True)
        for folder in objects.glob("[0-9a-f][0-9a-f]"):
            with contextlib.suppress(OSError):
                folder.rmdir()
