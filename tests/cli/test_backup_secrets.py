"""``nornir-bench backup``'s secrets on real routers (``frr_lab``): masked by default, so that no
secret of any kind the masking knows reaches a blob, a commit message, a ref or any other file
of the repository; kept only with ``--keep-secrets``, in a repository its owner alone reads."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from urllib.parse import quote, quote_plus

import pygit2

from nornir_bench.core.secrets import MASK
from nornir_bench.lab import RunningRouterLab
from tests.cli.test_backup_routers import backup, backup_job, configure

# A job secret (a key holding "token") with characters each encoding escapes its own way.
TOKEN = 'T0k"en\\x/y&z ü'
# Each kind of configuration secret the masking knows, as a device prints it (carried in
# interface descriptions on FRR), each value unique so that its absence means it was masked.
CONFIG_SECRETS = {
    "neighbor-password": "neighbor 192.0.2.2 password {}",
    "username-secret": "username admin secret 5 {}",
    "enable-password": "enable password 7 {}",
    "key-string": "key-string {}",
    "authentication-key": "ip ospf authentication-key {}",
    "message-digest": "ip ospf message-digest-key 1 md5 {}",
    "community": "snmp-server community {} RO",
    "tacacs": "tacacs-server key {}",
    "radius": "radius-server key 7 {}",
    "pre-shared": "crypto isakmp key 6 {} address 192.0.2.1",
    "pre-shared-key": "pre-shared-key address 192.0.2.9 {}",
}


def secret_of(kind: str) -> str:
    return f"Sec{kind.replace('-', '')}9x"


def encoded(secret: str) -> set[str]:
    """``secret`` as text that encoded it holds it: as is, in JSON, in a repr, in a URL."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
            repr(secret)[1:-1], quote(secret, safe=""), quote_plus(secret)}


def plant_secrets(lab: RunningRouterLab, job: Path) -> set[str]:
    """Every kind of secret on r1 and in the job; the texts none of the repository may hold."""
    job.write_text(job.read_text() + f"user_defined: {{api_token: {json.dumps(TOKEN)}}}\n")
    forms = sorted(encoded(TOKEN))
    texts = [line.format(secret_of(kind)) for kind, line in CONFIG_SECRETS.items()]
    texts += [f"the api token is {form} here" for form in forms]
    lines = []
    for number, text in enumerate(texts):  # as interface descriptions: FRR prints them as given
        lines += [f"interface nbsec{number}", f"description {text}", "exit"]
    configure(lab, "r1", *lines)
    shown = lab.vtysh("r1", "show running-config")
    for text in texts:
        assert f" description {text}\n" in shown, (text, shown)  # the device holds them
    return {*(secret_of(kind) for kind in CONFIG_SECRETS), *forms}


def everything_in(repo: Path) -> list[tuple[str, bytes]]:
    """Every file under ``repo`` as bytes (work tree, refs, logs, index, config...), and every
    object of its database decompressed (blobs, trees, commits and their messages)."""
    found = [(str(path), path.read_bytes()) for path in repo.rglob("*") if path.is_file()]
    database = pygit2.Repository(str(repo)).odb
    found += [(f"object {oid}", database.read(oid)[1]) for oid in database]
    refs = pygit2.Repository(str(repo)).references
    found += [(f"ref {name}", f"{name} {refs[name].target}".encode()) for name in refs]
    return found


def test_no_secret_of_any_kind_reaches_a_blob_a_commit_message_or_a_ref(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, "asyncio", "abackup_config")
    secrets = plant_secrets(frr_lab, job)
    done = backup(job, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "secrets kept" not in done.stdout
    r1 = (repo / "h1.cfg").read_text()
    assert f" description neighbor 192.0.2.2 password {MASK}\n" in r1
    assert f" description snmp-server community {MASK} RO\n" in r1
    leaks = [(where, secret) for where, data in everything_in(repo) for secret in secrets
             if secret.encode() in data]
    assert leaks == []
    assert len(list(pygit2.Repository(str(repo)).odb)) > 4  # the scan read the objects


def test_keep_secrets_keeps_them_in_a_repository_its_owner_alone_reads_and_says_so_once(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    repo = tmp_path / "history"
    job = backup_job(frr_lab, tmp_path, "threadpool", "backup_config")
    plant_secrets(frr_lab, job)
    done = backup(job, repo, "--keep-secrets")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("secrets kept (--keep-secrets): ") == 1
    assert secret_of("community") in (repo / "h1.cfg").read_text()
    assert stat.S_IMODE(repo.stat().st_mode) == 0o700
    assert {stat.S_IMODE(path.stat().st_mode) for path in repo.glob("*.cfg")} == {0o600}
    message = pygit2.Repository(str(repo)).head.peel(pygit2.Commit).message
    assert TOKEN not in message
