"""The repository of configurations itself (no device): file names any host name can take,
its loose objects packed past a threshold with every commit still whole, and what a run that
changed nothing leaves."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from nornir_bench.history import repository
from nornir_bench.history.repository import ConfigRepository, Written, file_name, host_of


@pytest.mark.parametrize("host", ["r1", "core/sw1", ".hidden", "100%", "dev ü", "a.cfg"])
def test_any_host_name_is_one_file_of_the_top_folder_and_reads_back(host: str) -> None:
    name = file_name(host)
    assert "/" not in name and not name.startswith(".") and name.endswith(".cfg")
    assert host_of(name) == host


def message(written: Written) -> str:
    return f"{len(written.changed)} changed\n"


def test_loose_objects_past_the_threshold_are_packed_and_every_commit_stays_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(repository, "LOOSE_OBJECTS_PACKED", 20)
    repo = ConfigRepository(tmp_path / "history")
    fleet = {f"h{n}": f"hostname h{n}\n" + "interface x\n description a line\n" * n
             for n in range(30)}
    first = repo.commit_run(fleet, message)
    objects = tmp_path / "history" / ".git" / "objects"
    assert [p for folder in objects.glob("[0-9a-f][0-9a-f]") for p in folder.iterdir()] == []
    assert len(list((objects / "pack").glob("pack-*.pack"))) == 1
    fleet["h3"] += "ip route 203.0.113.1/32 Null0\n"
    second = repo.commit_run(fleet, message)
    assert second.changed == ("h3",) and len(second.unchanged) == 29
    git = pygit2.Repository(str(tmp_path / "history"))
    assert git.revparse_single(f"{first.commit}:h3.cfg").read_raw().decode() != fleet["h3"]
    assert git.revparse_single("HEAD:h3.cfg").read_raw().decode() == fleet["h3"]
    done = subprocess.run(["git", "-C", str(tmp_path / "history"), "fsck", "--full"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_an_unchanged_run_makes_no_commit_and_a_failed_host_keeps_its_file(
    tmp_path: Path,
) -> None:
    repo = ConfigRepository(tmp_path / "history")
    first = repo.commit_run({"r1": "a\n", "r2": "b\n"}, message)
    again = repo.commit_run({"r1": "a\n"}, message)  # r2 failed: not given
    assert again == Written(None, (), ("r1",))
    assert (tmp_path / "history" / "r2.cfg").read_text() == "b\n"
    assert str(pygit2.Repository(str(tmp_path / "history")).head.target) == first.commit
    assert repo.hosts() == {"r1", "r2"}


IOS = ("Building configuration...\n\nCurrent configuration : 1234 bytes\n!\n"
       "! Last configuration change at {at} UTC Sun Dec 6 2026 by netops\n"
       "! NVRAM config last updated at {at} UTC Sun Dec 6 2026 by netops\n!\n"
       "hostname r1\nntp clock-period {drift}\n"
       "interface Gi0/1\n description ! Last configuration change at noon\n!\nend\n")


def test_the_lines_a_device_rewrites_on_its_own_make_no_commit(tmp_path: Path) -> None:
    """IOS prints when its configuration last changed and was saved, and its clock's drift:
    a backup of an unchanged router must make no commit. A line that only holds such words
    (a description) is the configuration's, kept."""
    repo = ConfigRepository(tmp_path / "history")
    first = repo.commit_run({"r1": IOS.format(at="10:01:02", drift=17179856)}, message)
    again = repo.commit_run({"r1": IOS.format(at="11:12:13", drift=17179869)}, message)
    assert first.commit is not None and again == Written(None, (), ("r1",))
    kept = (tmp_path / "history" / "r1.cfg").read_text()
    assert kept == ("Building configuration...\n\nCurrent configuration : 1234 bytes\n!\n!\n"
                    "hostname r1\ninterface Gi0/1\n"
                    " description ! Last configuration change at noon\n!\nend\n")
    changed = repo.commit_run({"r1": IOS.format(at="11:12:13", drift=1).replace(
        "hostname r1", "hostname r1-core")}, message)
    assert changed.changed == ("r1",)


@pytest.mark.parametrize(
    "line",
    ["!Time: Sun Dec  6 10:01:02 2026", "!Running configuration last done at: Sun Dec  6 10:01",
     "## Last commit: 2026-12-06 10:01:02 UTC by netops", "## Last changed: 2026-12-06",
     "! No configuration change since last restart"],
)
def test_nxos_and_junos_time_lines_are_left_out_too(line: str) -> None:
    from nornir_bench.history.volatile import without_volatile_lines

    assert without_volatile_lines(f"hostname a\n{line}\nend") == "hostname a\nend"
    assert without_volatile_lines(f"hostname a\n{line}\r\nend\r\n") == "hostname a\nend\r\n"
