"""SSH host keys checked before the password, on both drivers: a real SSH server on loopback
(asyncssh) that records every password offered to it stands for an impostor.

The check is the task's: netmiko's on threadpool, scrapli's on asyncio (docs/testing.md, the
runner matrix). Its errors come back from a worker process as themselves
(tests/core/test_pickling.py); keys accepted in workers are said by the command
(tests/cli/test_run_host_keys.py, processpool)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from nornir import InitNornir
from nornir.core import Nornir

from nornir_bench.core.known_hosts import record
from nornir_bench.tasks import asend_command, send_command
from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown
from tests.ssh_servers import ssh_server
from tests.waiting import HANG_GUARD, wait_until

PASSWORD = "impostor-gets-nothing"


@dataclass
class Impostor:
    """An SSH server on 127.0.0.1 with its own host key, refusing every login and keeping
    every password offered."""

    port: int
    key: asyncssh.SSHKey
    passwords: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.export_public_key().decode().strip()}\n"


@contextmanager
def impostor() -> Iterator[Impostor]:
    server = Impostor(0, asyncssh.generate_private_key("ssh-ed25519"))

    class Recording(asyncssh.SSHServer):
        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            server.passwords.append(password)
            return False

    with ssh_server(server.key, Recording) as server.port:
        yield server


def nornir_at(
    server: Impostor, folder: Path, runner: str, options: dict[str, Any], **data: Any
) -> Nornir:
    hosts = {
        f"h{n}": {"hostname": "127.0.0.1", "port": server.port, "platform": "cisco_ios"}
        for n in range(3)
    }
    defaults = {"username": "admin", "password": PASSWORD, "data": data}
    (folder / "hosts.yaml").write_text(json.dumps(hosts))
    (folder / "defaults.yaml").write_text(json.dumps(defaults))
    return InitNornir(
        runner={"plugin": runner, "options": options},
        inventory={
            "plugin": "SimpleInventory",
            "options": {
                "host_file": str(folder / "hosts.yaml"),
                "defaults_file": str(folder / "defaults.yaml"),
            },
        },
        logging={"enabled": False},
    )


# The blocking driver on threads, the async one on the event loop.
COMBINATIONS = [("threadpool", send_command), ("asyncio", asend_command)]


def run_against(
    server: Impostor, folder: Path, runner: str, task: Any, **data: Any
) -> dict[str, BaseException | None]:
    nr = nornir_at(server, folder, runner, {}, **data)
    try:
        result = nr.run(task=task, command="show clock")
    finally:
        getattr(nr.runner, "close", lambda: None)()
    return {name: multi[0].exception for name, multi in result.items()}


def ids(value: Any) -> str:
    return getattr(value, "__name__", str(value))


@pytest.fixture
def known(tmp_path: Path) -> Path:
    return tmp_path / "known_hosts"


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_an_unknown_key_gets_no_password_by_default(
    runner: str, task: Any, known: Path, tmp_path: Path
) -> None:
    with impostor() as server:
        errors = run_against(server, tmp_path, runner, task, known_hosts=str(known))
    assert server.passwords == []
    for name, exc in errors.items():
        assert isinstance(exc, HostKeyUnknown), (name, exc)  # its own type, from any worker
        assert f"127.0.0.1:{server.port}" in str(exc)
        assert server.key.get_fingerprint() in str(exc)
    assert not known.exists()


@pytest.mark.parametrize("checking", ["strict", "accept-new"])
@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_key_other_than_the_known_one_gets_no_password(
    runner: str, task: Any, checking: str, known: Path, tmp_path: Path
) -> None:
    genuine = asyncssh.generate_private_key("ssh-ed25519")
    with impostor() as server:
        known.write_text(
            f"[127.0.0.1]:{server.port} {genuine.export_public_key().decode().strip()}\n"
        )
        before = known.read_text()
        errors = run_against(
            server, tmp_path, runner, task, known_hosts=str(known), host_key_checking=checking
        )
    assert server.passwords == []
    for name, exc in errors.items():
        assert isinstance(exc, HostKeyMismatch), (name, exc)
        assert exc.seen == server.key.get_fingerprint()
        assert exc.expected == (genuine.get_fingerprint(),)
        text = str(exc)
        assert server.key.get_fingerprint() in text and genuine.get_fingerprint() in text
        assert "ssh-ed25519" in text and name in text
    assert known.read_text() == before


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_the_known_key_lets_the_login_go_on(
    runner: str, task: Any, known: Path, tmp_path: Path
) -> None:
    """The check is not a wall: the right key reaches the password (which this server
    refuses)."""
    with impostor() as server:
        known.write_text(server.line())
        errors = run_against(server, tmp_path, runner, task, known_hosts=str(known))
    assert server.passwords and set(server.passwords) == {PASSWORD}
    assert all(not isinstance(exc, (HostKeyMismatch, HostKeyUnknown)) for exc in errors.values())


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_accept_new_records_a_new_key_once(
    runner: str, task: Any, known: Path, tmp_path: Path
) -> None:
    with impostor() as server:
        errors = run_against(
            server, tmp_path, runner, task, known_hosts=str(known), host_key_checking="accept-new"
        )
    assert known.read_text() == server.line()
    assert all(not isinstance(exc, (HostKeyMismatch, HostKeyUnknown)) for exc in errors.values())
    assert set(server.passwords) == {PASSWORD}


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_off_checks_nothing(runner: str, task: Any, known: Path, tmp_path: Path) -> None:
    with impostor() as server:
        run_against(server, tmp_path, runner, task, host_key_checking="off")
    assert set(server.passwords) == {PASSWORD}
    assert not known.exists()


def test_many_processes_recording_at_once_write_each_host_once(tmp_path: Path) -> None:
    """accept-new from many processes and threads at once: one line per host, none torn."""
    import multiprocessing

    known = tmp_path / "known_hosts"
    keys = [asyncssh.generate_private_key("ssh-ed25519") for _ in range(4)]
    lines = [k.export_public_key().decode().strip() for k in keys]
    context = multiprocessing.get_context("fork")
    processes = [
        context.Process(target=_record_many, args=(str(known), lines, 200, seed))
        for seed in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(HANG_GUARD)
        assert process.exitcode == 0
    written = known.read_text().splitlines()
    assert len(written) == 200 and len(set(written)) == 200
    for line in written:
        name, key_type, blob = line.split()
        assert name.startswith("[10.0.") and key_type == "ssh-ed25519"
        assert asyncssh.import_public_key(f"{key_type} {blob}")


def _record_many(path: str, lines: list[str], hosts: int, seed: int) -> None:
    order = list(range(hosts))
    order = order[seed:] + order[:seed]
    def work(part: list[int]) -> None:
        for n in part:
            key = asyncssh.import_public_key(lines[n % len(lines)])
            record(path, f"10.0.{n // 250}.{n % 250}", 2200 + n, key)

    threads = [threading.Thread(target=work, args=(order[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os._exit(0)


def _waits_for_a_lock(pid: int, inode: int) -> bool:
    """Whether process ``pid`` waits for a ``flock`` on the file ``inode`` (a waiter's line
    in /proc/locks: ``1: -> FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF``)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[1:3] == ["->", "FLOCK"] and fields[5] == str(pid) \
                and fields[6].rsplit(":", 1)[-1] == str(inode):
            return True
    return False


def _record_with_the_other(path: str, line: str, me: int, checked: list[Any], pids: Any) -> None:
    """Record the key, waiting at the point of appending it (not known yet: append) until the
    other process has checked the file too, or waits for the lock this one holds."""
    from nornir_bench.core import known_hosts

    pids[me] = os.getpid()
    other = 1 - me
    to_append = known_hosts.openssh_line  # called once the file is checked, before appending

    def together(*args: Any) -> str:
        checked[me].set()
        inode = os.stat(path).st_ino
        wait_until(lambda: checked[other].is_set() or _waits_for_a_lock(pids[other], inode),
                   "the other process at the point of appending, or waiting for the lock")
        return to_append(*args)

    known_hosts.openssh_line = together  # type: ignore[assignment]
    trusted = record(path, "127.0.0.1", 2222, asyncssh.import_public_key(line))
    os._exit(0 if not trusted else 10)


def test_two_processes_recording_a_new_key_at_the_same_moment_write_it_once(
    tmp_path: Path,
) -> None:
    """Both reach the point of appending together: without the lock, both find the host not
    known yet and append it, every time; with it, the second waits, then finds it known."""
    import multiprocessing

    known = tmp_path / "known_hosts"
    line = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    context = multiprocessing.get_context("fork")
    checked = [context.Event(), context.Event()]
    pids = context.Array("i", 2)
    processes = [
        context.Process(target=_record_with_the_other, args=(str(known), line, me, checked, pids))
        for me in (0, 1)
    ]
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.join(HANG_GUARD)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    codes = [process.exitcode for process in processes]
    assert sorted(codes) == [0, 10], codes  # one recorded it, the other found it there
    assert all(event.is_set() for event in checked)
    assert known.read_text() == f"[127.0.0.1]:2222 {line}\n"


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_key_added_to_the_file_between_runs_is_known_to_the_next(
    runner: str, task: Any, known: Path, tmp_path: Path
) -> None:
    """Many runs in one process: the file is read again once it changed (it was read once
    per process, so a key added with ssh-keyscan between runs stayed unknown)."""
    with impostor() as server:
        first = run_against(server, tmp_path, runner, task, known_hosts=str(known))
        known.write_text(server.line())
        second = run_against(server, tmp_path, runner, task, known_hosts=str(known))
    assert all(isinstance(exc, HostKeyUnknown) for exc in first.values())
    assert not any(isinstance(exc, HostKeyUnknown) for exc in second.values())
    assert set(server.passwords) == {PASSWORD}


def test_record_reads_what_others_appended_a_line_left_open_and_a_file_replaced(
    tmp_path: Path,
) -> None:
    known = tmp_path / "known_hosts"
    first, second = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))

    def line(port: int, key: asyncssh.SSHKey) -> str:
        return f"[10.9.9.9]:{port} {key.export_public_key().decode().strip()}"

    known.write_text(line(1, first))  # written by hand: no newline at its end
    assert record(str(known), "10.9.9.9", 2, second) == []
    assert known.read_text() == f"{line(1, first)}\n{line(2, second)}\n"
    with known.open("a") as other:  # another program appends a host meanwhile
        other.write(line(3, first) + "\n")
    found = record(str(known), "10.9.9.9", 3, second)  # found, not written twice
    assert [k.get_fingerprint() for k in found] == [first.get_fingerprint()]
    replaced = tmp_path / "new"
    replaced.write_text(line(4, second) + "\n")
    os.replace(replaced, known)  # a new file at the path: read whole again
    found = record(str(known), "10.9.9.9", 4, first)
    assert [k.get_fingerprint() for k in found] == [second.get_fingerprint()]
    assert record(str(known), "10.9.9.9", 1, first) == []  # gone with the old file
    assert known.read_text() == f"{line(4, second)}\n{line(1, first)}\n"


def test_hashed_names_patterns_and_revoked_lines_are_understood(tmp_path: Path) -> None:
    """OpenSSH's own forms (HashKnownHosts, wildcards, @revoked), found without parsing the
    whole file at each login."""
    import base64
    import hashlib
    import hmac

    from nornir_bench.core.known_hosts import matched

    keys = [asyncssh.generate_private_key("ssh-ed25519") for _ in range(4)]
    text = [k.export_public_key().decode().strip() for k in keys]
    salt = os.urandom(20)
    digest = hmac.new(salt, b"[10.1.1.1]:2201", hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    known = tmp_path / "known_hosts"
    known.write_text(
        f"# a comment\n{hashed} {text[0]}\n[10.2.*]:2201 {text[1]}\n"
        f"@revoked [10.2.2.2]:2201 {text[2]}\n10.3.3.3,other {text[3]}\n"
    )
    files = (str(known),)

    def fingerprints(found: list[asyncssh.SSHKey]) -> list[str]:
        return [k.get_fingerprint() for k in found]

    assert fingerprints(matched(files, "10.1.1.1", 2201)[0]) == [keys[0].get_fingerprint()]
    assert matched(files, "10.1.1.1", 2202) == ([], [])  # the hash is of another port
    trusted, revoked = matched(files, "10.2.2.2", 2201)
    assert fingerprints(trusted) == [keys[1].get_fingerprint()]
    assert fingerprints(revoked) == [keys[2].get_fingerprint()]
    assert fingerprints(matched(files, "10.3.3.3", 22)[0]) == [keys[3].get_fingerprint()]
    with known.open("a") as more:  # appended by ssh-keyscan meanwhile: seen at the next login
        more.write(f"[10.4.4.4]:2201 {text[0]}\n")
    assert fingerprints(matched(files, "10.4.4.4", 2201)[0]) == [keys[0].get_fingerprint()]


def test_a_file_rewritten_in_place_is_read_again_whatever_its_size_and_times(
    tmp_path: Path,
) -> None:
    """A known-hosts file rewritten where it stands (an editor, ``cp``, a script's
    ``write_text``) keeps its inode: a key swapped for one of the same length kept the size
    too, the old key stayed trusted, the new one looked unknown and accept-new gave it the
    password."""
    from nornir_bench.core.known_hosts import matched

    keys = [asyncssh.generate_private_key("ssh-ed25519") for _ in range(3)]
    lines = [f"[10.5.5.5]:2201 {k.export_public_key().decode().strip()}\n" for k in keys]
    known = tmp_path / "known_hosts"
    files = (str(known),)

    def trusted() -> list[str]:
        return [k.get_fingerprint() for k in matched(files, "10.5.5.5", 2201)[0]]

    known.write_text(lines[0])
    assert trusted() == [keys[0].get_fingerprint()]
    inode = known.stat().st_ino
    known.write_text(lines[1])  # the same size, the same inode
    assert known.stat().st_ino == inode and len(lines[0]) == len(lines[1])
    assert trusted() == [keys[1].get_fingerprint()]
    before = known.stat()
    known.write_text(lines[2])  # as ``cp -p`` does: the old times put back
    os.utime(known, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert trusted() == [keys[2].get_fingerprint()]
    known.write_text("# hosts\n" + lines[0])  # grown, not appended to
    assert trusted() == [keys[0].get_fingerprint()]
    known.write_text("# hosts\n" + lines[1] + lines[2])  # grown again, its start unchanged
    assert trusted() == [keys[1].get_fingerprint(), keys[2].get_fingerprint()]
    known.write_text("# hosts\n" + lines[2])  # and what record() reads under its lock
    assert [k.get_fingerprint() for k in record(str(known), "10.5.5.5", 2201, keys[0])] == [
        keys[2].get_fingerprint()
    ]



_LOGIN = """
import sys
from pathlib import Path
from nornir_bench.tasks import send_command
from tests.tasks.sessions.test_host_keys import Impostor, nornir_at
port, folder, known = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
nr = nornir_at(Impostor(port, None), folder, "threaded", {}, known_hosts=known)
nr.filter(name="h0").run(task=send_command, command="show clock")
"""


def test_a_login_killed_in_the_middle_leaves_no_known_hosts_file_behind(tmp_path: Path) -> None:
    """A login to a trusted device that never answers, its process SIGKILLed: the keys
    handed to paramiko lived in memory, not in a temporary file left in TMPDIR."""
    import signal
    import socket
    import subprocess
    import sys

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {key}\n")
    temp, folder = tmp_path / "tmp", tmp_path / "inventory"
    temp.mkdir()
    folder.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", _LOGIN, str(port), str(folder), str(known)],
        env={**os.environ, "TMPDIR": str(temp)}, cwd=Path(__file__).parents[3],
    )
    try:
        listener.settimeout(HANG_GUARD)
        connection, _ = listener.accept()  # the login is in flight, waiting for a banner
        child.send_signal(signal.SIGKILL)
        child.wait(HANG_GUARD)
        connection.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        listener.close()
    assert child.returncode == -signal.SIGKILL
    assert list(temp.iterdir()) == []
