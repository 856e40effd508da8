"""Repositories a reader of the history cannot read, each kind a test tries: none there, a
folder that is not one, one whose objects are emptied (corrupt)."""

from __future__ import annotations

from pathlib import Path

KINDS = ["missing", "not-a-repository", "corrupt"]


def unreadable(repo: Path, tmp_path: Path, kind: str) -> Path:
    """The path a reader is given for ``kind``: ``repo`` itself, corrupted, for ``corrupt``."""
    if kind == "missing":
        return tmp_path / "nowhere"
    if kind == "not-a-repository":
        plain = tmp_path / "plain"
        plain.mkdir()
        (plain / "r1.cfg").write_text("hostname r1\n")
        return plain
    for objects in (repo / ".git" / "objects").iterdir():
        if len(objects.name) == 2:  # a loose object's folder: its files emptied
            for found in objects.iterdir():
                found.chmod(0o644)
                found.write_bytes(b"")
    return repo
