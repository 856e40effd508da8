"""What a router lab leaves on the machine after it stopped, or was killed: its namespaces, FRR
daemons, SSH server and sessions, user, guard and files."""

from __future__ import annotations

import contextlib
import os
import pwd
from dataclasses import dataclass, field
from pathlib import Path

from harness.processes import command_line, proc_stat

__all__ = ["STATE_FOLDER", "Leftovers", "leftovers", "left_of"]

STATE_FOLDER = Path("/run/nornir-bench/labs")
GUARD = "nornir_bench.lab._guard"


@dataclass
class Leftovers:
    found: dict[str, list[str]] = field(default_factory=dict)
    zombies: int = 0  # processes of the lab's user already dead, not reaped by their parent

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.found.values())

    def text(self) -> str:
        shown = "; ".join(f"{k}: {', '.join(v[:3])}{' ...' if len(v) > 3 else ''}"
                          for k, v in self.found.items() if v)
        return shown or "none"

    def said(self) -> str:
        """``N (what)``, and the zombies of its user if any."""
        zombies = (f"; {self.zombies} zombie(s) of its user not yet reaped" if self.zombies
                   else "")
        return f"{self.count} ({self.text()}){zombies}"


def leftovers(name: str, uids: set[int], workdirs: set[str]) -> Leftovers:
    """Everything of lab ``name`` still on this machine (``uids``: its user's ids while it ran,
    ``workdirs``: its work folders)."""
    found: dict[str, list[str]] = {}
    prefix = f"nb-{name}-"
    try:
        found["namespaces"] = sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix))
    except FileNotFoundError:
        found["namespaces"] = []
    frr, sshd, user_procs, guard = [], [], [], []
    zombies = 0
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        words = command_line(int(entry))
        line = " ".join(words)
        fields = dict(row.split(":", 1) for row in status.splitlines() if ":" in row)
        uid = int(fields.get("Uid", "-1").split()[0])
        zombie = fields.get("State", "").strip().startswith("Z")
        label = f"{entry} {line[:60] or fields.get('Name', '').strip()}"
        pairs = zip(words, words[1:], strict=False)
        if any(w == "-N" and nxt.startswith(prefix) for w, nxt in pairs):
            frr.append(label)
        elif any(d and d in line for d in workdirs) or line.startswith(f"sshd: nbl-{name}"):
            sshd.append(label)
        elif GUARD in words and name in words:
            guard.append(label)
        elif uid in uids:
            if zombie:
                zombies += 1
            else:
                user_procs.append(label)
    found["frr"], found["sshd"], found["user processes"], found["guard"] = (
        frr, sshd, user_procs, guard
    )
    try:
        pwd.getpwnam(f"nbl-{name}")
        found["user"] = [f"nbl-{name}"]
    except KeyError:
        found["user"] = []
    files = [STATE_FOLDER / f"{name}.json", *(Path(d) for d in workdirs if d)]
    for base in (Path("/etc/frr"), Path("/var/run/frr")):
        with contextlib.suppress(OSError):
            files += [p for p in base.iterdir() if p.name.startswith(prefix)]
    found["files"] = [str(p) for p in files if p.exists()]
    return Leftovers(found, zombies)


def left_of(name: str, workdir: str, listener: int, daemons: list[int],
            successor: int) -> Leftovers:
    """What is left of the killed lab ``name`` (its work folder, SSH server ``listener``, FRR
    ``daemons``) while a lab of the same name, the process ``successor``, runs (so the same
    namespaces, user and state file): its sshd, work folder, guard and FRR daemons."""
    found: dict[str, list[str]] = {"frr": [], "sshd": [], "guard": [], "files": []}
    for pid in {*daemons, listener} - {0}:
        try:
            line = " ".join(command_line(pid))
            state = proc_stat(pid)[0]
        except OSError:
            continue
        if state != "Z" and (pid == listener and workdir in line or pid != listener and
                             f"nb-{name}-" in line):
            found["sshd" if pid == listener else "frr"].append(f"{pid} {line[:60]}")
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            words = command_line(int(entry))
            if GUARD in words and name in words and int(proc_stat(int(entry))[1]) != successor:
                found["guard"].append(entry)
    if workdir and Path(workdir).exists():
        found["files"].append(workdir)
    return Leftovers(found)
