"""A restore's intended configuration, ``from_history`` (no device: the change's plan driven
against a list of lines, a repository written as backup writes it): a host's file at a
commit, any revision resolved once; a line backed up masked left out of both sides and never
sent; each mistake refused in one line before any device. The real routers' restore is
tests/history/test_restore_routers.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pygit2
import pytest

from nornir_bench.core.changes import CHANGED
from nornir_bench.core.secrets import MASK
from nornir_bench.history.at_commit import commit_of, config_at
from nornir_bench.history.repository import ConfigRepository, RepositoryError, Written
from nornir_bench.jobs.load import JobError, load_job
from nornir_bench.tasks.changes.from_history import (
    history_lines,
    history_source,
    masked_lines,
)
from nornir_bench.tasks.dialects.config_text import parse_config
from nornir_bench.tasks.dialects.dialects import driver_for
from tests.cli.in_process import nornir_bench_here
from tests.tasks.changes.test_change_flow import ForgetfulDevice, _change

SECRET_LINE = "username admin secret 5 $1$mERr$real"
MASKED_LINE = f"username admin secret 5 {MASK}"


def message(written: Written) -> str:
    return f"backup: {len(written.changed)} changed\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two runs: r1 and core/sw1 backed up (r1 with a secret, masked as backup masks it);
    then r1 with a route more."""
    path = tmp_path / "configs"
    written = ConfigRepository(path)
    written.commit_run({"r1": f"hostname r1\n{MASKED_LINE}\n", "core/sw1": "hostname sw1\n"},
                       message)
    written.commit_run({"r1": f"hostname r1\n{MASKED_LINE}\nip route 10.9.0.0/16 Null0\n",
                        "core/sw1": "hostname sw1\n"}, message)
    return path


def test_any_revision_names_one_commit_and_a_hosts_file_is_read_at_it(repo: Path) -> None:
    git = pygit2.Repository(str(repo))
    head, first = str(git.head.target), str(git.revparse_single("HEAD~1").id)
    git.references.create("refs/tags/before", first)
    assert commit_of(repo, "HEAD") == head
    assert commit_of(repo, "HEAD~1") == commit_of(repo, first[:7]) == commit_of(repo, "before")
    assert config_at(repo, "r1", first) == f"hostname r1\n{MASKED_LINE}\n"
    assert config_at(repo, "core/sw1", head) == "hostname sw1\n"  # core%2Fsw1.cfg


def test_a_host_the_commit_lacks_is_named_with_the_commit_and_its_file(repo: Path) -> None:
    head = commit_of(repo, "HEAD")
    with pytest.raises(ValueError) as caught:
        history_lines("r9", history_source({"repo": str(repo)}), 1 << 20)
    assert str(caught.value) == (f"from_history: commit {head[:12]} of {repo} holds no r9.cfg: "
                                 "r9 was not backed up by then, or was pruned")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("configs", "from_history must be {repo: DIR, commit: REV} (commit: HEAD unless given), "
                    "got 'configs'"),
        ({"repo": "{repo}", "rev": "HEAD"}, "from_history must be {repo: DIR, commit: REV}"),
        ({"repo": "{repo}", "commit": 3}, "from_history: commit must be a revision (HEAD, "
                                         "HEAD~1, a commit id, a branch, a tag), got 3"),
        ({"repo": "{repo}", "commit": "HEAD~2"}, "from_history: repo {repo}: no commit 'HEAD~2' "
                                                 "in it: give a commit id (or its first "
                                                 "characters), a branch, a tag, HEAD or HEAD~N"),
        ({"repo": "{repo}", "commit": "HEAD:r1.cfg"}, "from_history: repo {repo}: no commit "
                                                      "'HEAD:r1.cfg' in it ("),
        ({"repo": "{empty}"}, "from_history: repo {empty}: no commit 'HEAD' in it (it has no "
                              "commit yet)"),
        ({"repo": "{plain}"}, "from_history: repo {plain}: not a git repository: give one "
                              "nornir-bench backup wrote"),
    ],
    ids=["not-a-mapping", "unknown-key", "commit-not-text", "no-such-commit", "a-file",
         "no-commit-yet", "not-a-repository"],
)
def test_a_source_that_names_no_commit_is_refused_in_one_line(
    repo: Path, tmp_path: Path, value: object, says: str
) -> None:
    pygit2.init_repository(str(tmp_path / "empty"), initial_head="main")
    (tmp_path / "plain").mkdir()
    where = {"{repo}": repo, "{empty}": tmp_path / "empty", "{plain}": tmp_path / "plain"}

    def placed(text: str) -> str:
        for name, path in where.items():
            text = text.replace(name, str(path))
        return text

    if isinstance(value, dict):
        value = {k: placed(v) if isinstance(v, str) else v for k, v in value.items()}
    with pytest.raises(ValueError) as caught:
        history_source(value)
    assert str(caught.value).startswith(placed(says)), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_past_the_size_cap_is_refused_before_it_is_read(repo: Path) -> None:
    head = commit_of(repo, "HEAD")
    with pytest.raises(ValueError, match=rf"^from_history: r1.cfg at commit {head[:12]} of "
                                         rf"{repo} is larger than 10 bytes: not a "
                                         "configuration$"):
        history_lines("r1", history_source({"repo": str(repo)}), 10)


def test_a_file_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "configs"
    git = pygit2.init_repository(str(path), initial_head="main")
    blob = git.create_blob(b"hostname r1\n\xff\xfe\n")
    builder = git.TreeBuilder()
    builder.insert("r1.cfg", blob, pygit2.enums.FileMode.BLOB)
    sign = pygit2.Signature("t", "t@localhost")
    commit = str(git.create_commit("HEAD", sign, sign, "by hand", builder.write(), []))
    with pytest.raises(RepositoryError, match=rf"^r1.cfg at commit {commit[:12]} of {path} is "
                                              "not UTF-8 text"):
        config_at(path, "r1", commit)


def test_a_masked_line_finds_itself_and_the_devices_line_whatever_its_secret() -> None:
    driver = driver_for("frr", replace=True)
    lines = ["hostname r1", "router bgp 65001", f" neighbor 192.0.2.1 password {MASK}",
             f"snmp-server community {MASK} RO"]
    found = masked_lines(lines, driver)
    assert len(found) == 2
    device = parse_config("\n".join([
        "hostname r1", "router bgp 65001", " neighbor 192.0.2.1 password s3cret",
        " neighbor 192.0.2.2 password other", "snmp-server community public RO",
        "snmp-server community private RW"]), driver, found)
    assert [c.text for c in device.all_children()] == [
        "hostname r1", "router bgp 65001", "neighbor 192.0.2.2 password other",
        "snmp-server community private RW"]
    assert [c.text for c in parse_config(lines, driver, found).all_children()] == [
        "hostname r1", "router bgp 65001"]
    assert masked_lines(["hostname r1"], driver) == ()


@pytest.mark.parametrize("on_device", [True, False], ids=["device-has-it", "device-lacks-it"])
def test_a_line_backed_up_masked_is_never_sent_and_the_device_keeps_its_own(
    tmp_path: Path, on_device: bool
) -> None:
    """Restored whole (no scope): the route the device gained goes, the route it lost comes
    back; the secret line, which the file holds masked, is neither sent nor removed."""
    intended = ["hostname r1", MASKED_LINE, "ip route 10.0.0.0/24 Null0"]
    device = ForgetfulDevice()
    device.lines = ["hostname r1", "ip route 10.5.0.0/24 Null0"] + (
        [SECRET_LINE] if on_device else [])
    driver = driver_for("ios", replace=True)
    change = _change(device, tmp_path, lines=tuple(intended), replace=True, driver=driver,
                     ignore=masked_lines(intended, driver))
    assert change.state == CHANGED
    assert device.sent == ["no ip route 10.5.0.0/24 Null0", "ip route 10.0.0.0/24 Null0"]
    assert not any(MASK in line for line in device.sent)
    assert (SECRET_LINE in device.lines) is on_device


def job(tmp_path: Path, params: str) -> Path:
    (tmp_path / "hosts.yaml").write_text("r1: {hostname: 127.0.0.1, port: 9, platform: ios}\n")
    path = tmp_path / "jobs" / "restore.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent("""\
        inventory: {plugin: SimpleInventory, options: {host_file: ../hosts.yaml}}
        logging: {enabled: false}
        task:
          name: send_config
          params:
        """) + textwrap.indent(textwrap.dedent(params), "    "))
    return path


def test_a_job_finds_the_repository_from_its_folder_and_pins_the_commit_once(
    repo: Path, tmp_path: Path
) -> None:
    loaded = load_job(job(tmp_path, "from_history: {repo: ../configs}\nmode: replace\n"))
    source = loaded.params["from_history"]
    assert Path(source["repo"]).resolve() == repo.resolve()
    assert source["commit"] == commit_of(repo, "HEAD")  # an id, not HEAD: one for every host


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ("from_history: {repo: ../configs}\n",
         "task send_config: from_history restores a host's configuration as a replace: give "
         "mode: replace with it (and scope to restore only some sections)"),
        ("from_history: {repo: ../configs}\nmode: replace\nlines: [hostname r1]\n",
         "task send_config: give the config as exactly one of lines, config_file, "
         "template_file, from_history, not lines and from_history"),
        ("from_history: {repo: ../configs, commit: HEAD~5}\nmode: replace\n",
         "task send_config: from_history: repo {repo}: no commit 'HEAD~5' in it"),
    ],
    ids=["merge", "two-sources", "no-such-commit"],
)
def test_a_job_restoring_wrongly_is_one_line_before_any_device(
    repo: Path, tmp_path: Path, params: str, says: str
) -> None:
    with pytest.raises(JobError) as caught:
        load_job(job(tmp_path, params))
    assert says.format(repo=tmp_path / "jobs" / ".." / "configs") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_scope_the_commits_file_lacks_stops_the_run_before_any_device(
    repo: Path, tmp_path: Path
) -> None:
    """As for any replace's intended configuration (r1's port: nothing listens there)."""
    path = job(tmp_path, "from_history: {repo: ../configs}\nmode: replace\n"
                         "scope: [route-map]\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("nornir-bench: error: scope 'route-map' matches no section of the "
                           "intended configuration of r1: a scope names the first words of "
                           "sections it holds, such as 'router bgp' or 'ip route'\n")
