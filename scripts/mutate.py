#!/usr/bin/env python3
"""A small mutation check: do the tests notice when a behaviour that matters breaks?

    python scripts/mutate.py [--only NAME,...] [--list] [--no-baseline] [--quick] [--record PATH]

Each mutant in :data:`MUTANTS` breaks one behaviour with one textual replacement in one file
of a copy of the package and its tests, made in a temporary folder (the checkout is never
edited), then runs the tests named for it there. A mutant is "caught" when one of them fails;
"SURVIVED" when all pass: the tests would not notice that behaviour breaking. First the same
tests run on an unmutated copy, and must pass, or a "caught" would mean nothing.

A mutation whose old text is not found exactly once stops the check before anything runs:
the table is kept up with the code, not left to rot. Exit status: 0 every mutant caught,
1 some survived, or a run went wrong (the baseline failed, a test named is gone), 2 a
mutation that no longer applies, or bad usage. ``--quick`` is ``--list``: every mutation
checked to apply, none run (a test runs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("nornir_bench", "tests", "pyproject.toml")  # pyproject.toml: pytest's settings
MUTANT_SECONDS = 600  # a mutant that hangs its tests: pytest-timeout stops each at 120 s


@dataclass(frozen=True)
class Mutant:
    """One behaviour broken: ``old`` replaced by ``new`` in ``file``; ``tests``: pytest node
    ids, one of which must fail."""

    name: str
    behaviour: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


POLICIES = "tests/runners/test_policies.py"
RETRIES = "tests/core/test_retries.py"
NOT_RETRIED_ON_RUNNERS = tuple(
    f"{POLICIES}::test_an_error_not_to_retry_fails_at_once_also_from_a_subtask[{runner}]"
    for runner in ("threadpool-sync", "asyncio-async", "processpool-sync", "dask-async")
)
CHANGE_FLOW = "tests/tasks/changes/test_change_flow.py"
JOURNAL_FSYNC = ("tests/tasks/changes/test_journal.py::"
                 "test_each_entry_is_fsynced_and_the_folder_once_the_journal_is_created")
_COMMANDS_FIRST = (
    "    for key in [k for k in extras if isinstance(k, str) and k.endswith(_COMMAND)]:\n"
    "        named = key[: -len(_COMMAND)]\n"
    "        if is_secret_key(named) and extras.get(named) is None:\n"
    "            extras[named] = commands.output(extras[key], f\"{where} {key}\")\n"
)
_SECRETS_COLLECTED = (
    "    for key, value in extras.items():\n"
    "        under_secret = secret or is_secret_key(key)\n"
    "        if isinstance(value, str):\n"
    "            value = extras[key] = expand_env(value, f\"{where} {key}\")\n"
    "        if isinstance(value, dict):\n"
    "            _resolve_extras(value, f\"{where} {key}\", secrets, commands, under_secret, "
    "depth + 1)\n"
    "        elif under_secret and (text := secret_text(value)) is not None:\n"
    "            secrets.add(text)\n"
)

MUTANTS = [
    Mutant(
        "masking",
        "records are masked before they are JSON-encoded",
        "nornir_bench/processors/records.py",
        "    return json.dumps(\n"
        "        redact.value(record.as_json()), default=redact.json_default, ensure_ascii=False\n"
        "    )\n",
        "    return redact(\n"
        "        json.dumps(record.as_json(), default=redact.json_default, ensure_ascii=False)\n"
        "    )\n",
        (
            "tests/jobs/test_secrets.py::"
            "test_records_hold_no_form_of_a_password_escaped_before_masking",
            "tests/processors/test_records.py::"
            "test_values_json_cannot_hold_are_written_as_repr_and_secrets_masked",
        ),
    ),
    Mutant(
        "failure-causes",
        "the report page's failure causes count their hosts and name them",
        "nornir_bench/report/aggregate.py",
        "        cause.count += 1\n"
        "        if len(cause.hosts) < _HOSTS_NAMED:\n"
        "            cause.hosts.append(record.host)\n",
        "",
        (
            "tests/report/test_aggregate.py::"
            "test_failures_are_grouped_by_cause_each_counting_and_naming_its_hosts",
            "tests/report/test_aggregate.py::"
            "test_a_cause_counts_every_host_and_names_the_first_twenty",
        ),
    ),
    Mutant(
        "crash-isolation",
        "the hosts in flight beside one that crashed its worker run again (crash_reruns)",
        "nornir_bench/runners/processpool/pool.py",
        "self.crashes = CrashLedger(options.crash_reruns)",
        "self.crashes = CrashLedger(0)",
        (
            "tests/runners/test_processpool.py::"
            "test_a_crashing_worker_fails_only_the_host_that_crashes_it",
        ),
    ),
    Mutant(
        "task-timeout",
        "an attempt stops at task_timeout",
        "nornir_bench/core/policies/hosts.py",
        "deadline = None if limit is None else time.monotonic() + limit",
        "deadline = None",
        (f"{POLICIES}::test_what_a_call_given_up_adds_later_does_not_reach_the_result",),
    ),
    Mutant(
        "login-pace",
        "a host tried again after a refused login takes a place in its server's window first",
        "nornir_bench/core/policies/logins.py",
        "if not self.pace.active:",
        "if True:",
        tuple(
            f"tests/runners/test_logins.py::test_hosts_tried_again_log_in_through_the_pace[{r}]"
            for r in ("threadpool-sync", "asyncio-async")
        ),
    ),
    Mutant(
        "retry-never",
        "an authentication error is never retried (retry_never)",
        "nornir_bench/core/policies/retry.py",
        "    if any(policy.retry_never.matches(cause) for cause in found):\n        return False\n",
        "",
        (f"{RETRIES}::test_errors_not_to_retry_fail_at_once[auth]", *NOT_RETRIED_ON_RUNNERS),
    ),
    Mutant(
        "retry-never-subtask",
        "an authentication error is never retried, also when a subtask raised it",
        "nornir_bench/core/policies/retry.py",
        "if any(policy.retry_never.matches(cause) for cause in found):",
        "if policy.retry_never.matches(exc):",
        (f"{RETRIES}::test_a_subtasks_error_decides_the_retry", *NOT_RETRIED_ON_RUNNERS),
    ),
    Mutant(
        "dask-credentials",
        "dask refuses to send hosts' passwords to an unencrypted remote scheduler, if any host "
        "has one",
        "nornir_bench/runners/dask/runner.py",
        "if any(_has_password(h) for h in hosts):",
        "if all(_has_password(h) for h in hosts):",
        (
            "tests/runners/test_dask.py::"
            "test_where_credentials_may_go_is_decided_from_the_address_alone",
        ),
    ),
    Mutant(
        "dask-credentials-no-scheme",
        "dask refuses an unencrypted remote scheduler also when its address has no scheme",
        "nornir_bench/runners/dask/address.py",
        'scheme, rest = "tcp", address  # Dask\'s default protocol',
        'scheme, rest = "", address',
        (
            "tests/runners/test_dask.py::"
            "test_credentials_never_go_to_an_unencrypted_remote_scheduler",
        ),
    ),
    Mutant(
        "verify-held",
        "a change verifies what the device holds, read back, not what it took without a word",
        "nornir_bench/tasks/changes/_change_flow.py",
        "left = config_diff(now, merged(now, given))",
        'left = ""',
        (
            "tests/tasks/changes/test_change_flow.py::"
            "test_a_line_taken_and_not_held_fails_the_change_naming_it_and_rolls_back",
        ),
    ),
    Mutant(
        "refusal-at-line-start",
        "a configuration line is refused by a reply line that begins with '% ', and only that",
        "nornir_bench/tasks/dialects/refusals.py",
        'PERCENT = RefusalRule(re.compile(r"% "))',
        'PERCENT = RefusalRule(re.compile(r".*% "))',
        ("tests/tasks/dialects/test_refusals.py::test_a_dialect_with_no_rule_keeps_the_percent_rule",),
    ),
    Mutant(
        "frr-refusal-any-output",
        "FRR refuses a configuration line by printing anything but a note, '%' or not",
        "nornir_bench/tasks/dialects/refusals.py",
        "FRR = RefusalRule(\n    None,\n",
        'FRR = RefusalRule(\n    re.compile(r"% "),\n',
        (
            "tests/tasks/dialects/test_refusals.py::"
            "test_each_answer_frr_gave_to_a_line_it_refused_is_a_refusal_in_its_words",
            "tests/tasks/dialects/test_refusals_routers.py::"
            "test_a_refusal_without_a_percent_names_its_line_not_the_next_one",
        ),
    ),
    Mutant(
        "journal-pending-first",
        "a confirmed change is pending in its journal before its first line is sent",
        "nornir_bench/tasks/changes/_change_flow.py",
        "    around.pending(saved)\n"
        "    read = _Read(running, how.keep_configs)\n"
        "    try:\n"
        "        problem, printed, now = yield from _apply(lines, before, given, target, how)\n",
        "    read = _Read(running, how.keep_configs)\n"
        "    try:\n"
        "        problem, printed, now = yield from _apply(lines, before, given, target, how)\n"
        "        around.pending(saved)\n",
        (f"{CHANGE_FLOW}::"
         "test_a_confirmed_change_is_pending_in_the_journal_before_its_first_line_is_sent",),
    ),
    Mutant(
        "journal-fsync-entry",
        "each journal entry is fsync'd as it is written",
        "nornir_bench/tasks/changes/journal.py",
        "        os.fsync(descriptor)\n",
        "",
        (JOURNAL_FSYNC,),
    ),
    Mutant(
        "journal-fsync-folder",
        "the journal's folder is fsync'd once the journal is created",
        "nornir_bench/tasks/changes/journal.py",
        "        os.fsync(folder)\n",
        "        pass\n",
        (JOURNAL_FSYNC,),
    ),
    Mutant(
        "check-one-line-drift",
        "a replace's --check with one line of drift reads drifted",
        "nornir_bench/tasks/changes/_change_flow.py",
        "return DRIFTED if diff else COMPLIANT",
        'return DRIFTED if diff.count("\\n") > 2 else COMPLIANT',  # the diff's 2 header lines
        (f"{CHANGE_FLOW}::test_a_replace_check_with_one_line_of_drift_reads_drifted_and_sends_"
         "nothing",),
    ),
    Mutant(
        "send-only-missing",
        "a line already on the device is not sent again",
        "nornir_bench/tasks/changes/_change_flow.py",
        "sent = remediation(before, target)",
        'sent = remediation(parse_config("", how.driver), target)',
        (f"{CHANGE_FLOW}::test_a_line_already_on_the_device_is_not_sent_again",),
    ),
    Mutant(
        "command-secrets-masked",
        "what a plugin's KEY_command and a jump host's password_command print is masked",
        "nornir_bench/jobs/secrets.py",
        # the secrets collected before the commands' outputs are set: given, not masked
        _COMMANDS_FIRST + _SECRETS_COLLECTED,
        _SECRETS_COLLECTED + _COMMANDS_FIRST,
        ("tests/cli/test_run_password_command.py::"
         "test_the_values_a_plugins_and_a_jump_hosts_commands_print_are_masked_everywhere",),
    ),
    Mutant(
        "recover-revert-failed",
        "recover whose revert fails journals 'revert failed' (and exits 1)",
        "nornir_bench/jobs/recover.py",
        "append_entry(journal.path, name, REVERT_FAILED, backup=backup, by=\"recover\")",
        "append_entry(journal.path, name, REVERTED, backup=backup, by=\"recover\")",
        ("tests/jobs/test_recover.py::"
         "test_a_revert_that_fails_is_journaled_revert_failed_and_exits_non_zero",),
    ),
    Mutant(
        "dask-sites-strict",
        "a Dask site's chunk never runs on another site's worker",
        "nornir_bench/runners/dask/sites.py",
        '"allow_other_workers": False}',
        '"allow_other_workers": True}',
        ("tests/runners/test_dask_sites.py::"
         "test_a_sites_hosts_never_run_on_another_sites_worker_even_with_their_own_paused",),
    ),
    Mutant(
        "known-hosts-lock",
        "two processes recording the same new host key at once write it once",
        "nornir_bench/core/known_hosts.py",
        "        fcntl.flock(file, fcntl.LOCK_EX)  # released as the file closes\n",
        "",
        ("tests/tasks/sessions/test_host_keys.py::"
         "test_two_processes_recording_a_new_key_at_the_same_moment_write_it_once",),
    ),
]


class MutationRotted(Exception):
    """A mutation's old text is not found exactly once in its file."""


def mutated(mutant: Mutant, text: str) -> str:
    found = text.count(mutant.old)
    if found != 1:
        raise MutationRotted(
            f"{mutant.name}: its old text is found {found} times in {mutant.file}, not once: "
            "update the mutation in scripts/mutate.py"
        )
    return text.replace(mutant.old, mutant.new)


def copy_checkout(into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, into / name)


def run_tests(folder: Path, tests: list[str]) -> tuple[int, str]:
    """pytest on ``tests`` in ``folder``, importing the package there; its status and output."""
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-n", "0",
               *tests]
    with subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as pytest:
        try:
            output, _ = pytest.communicate(timeout=MUTANT_SECONDS)
        except subprocess.TimeoutExpired:
            # As Ctrl-C: pytest then tears down, ending its runners' workers and clusters.
            pytest.send_signal(signal.SIGINT)
            try:
                output, _ = pytest.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                pytest.kill()
                output, _ = pytest.communicate()
            return -1, output + f"\nstopped after {MUTANT_SECONDS} s"
        except KeyboardInterrupt:  # Ctrl-C reached pytest too: let it clean up
            pytest.communicate(timeout=60)
            raise
    return pytest.returncode, output


def failed_tests(output: str) -> list[str]:
    """The ids in pytest's short summary: ``FAILED tests/x.py::test[id with spaces] - why``
    (``ERROR`` for a failed setup or teardown; captured log lines above start so too)."""
    summary = output.rpartition(" short test summary info ")[2]
    return [
        line.split(" ", 1)[1].split(" - ", 1)[0]
        for line in summary.splitlines()
        if line.startswith(("FAILED ", "ERROR "))
    ]


def check(mutant: Mutant | None, tests: list[str]) -> tuple[int, str, float]:
    """The tests' status and output on a fresh copy, mutated by ``mutant`` unless ``None``."""
    with tempfile.TemporaryDirectory(prefix="nornir-bench-mutant-") as temporary:
        folder = Path(temporary)
        copy_checkout(folder)
        if mutant is not None:
            path = folder / mutant.file
            path.write_text(mutated(mutant, path.read_text()))
        started = time.monotonic()
        status, output = run_tests(folder, tests)
        return status, output, time.monotonic() - started


PARSER = harness.parser(__doc__, quick="as --list: every mutation checked to apply, none run")
PARSER.add_argument("--only", help="mutants to run, by name, comma-separated")
PARSER.add_argument(
    "--list", action="store_true", help="list the mutants and their tests, and stop"
)
PARSER.add_argument(
    "--no-baseline", action="store_true", help="skip running the tests unmutated first"
)


def main(bench: harness.Bench) -> int:
    args = bench.args
    mutants = MUTANTS
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {m.name for m in MUTANTS})
        if unknown:
            PARSER.error(f"no mutant named {', '.join(unknown)}")
        mutants = [m for m in MUTANTS if m.name in names]
    try:  # every mutation applies to the checkout as it is, before any test runs
        for mutant in mutants:
            mutated(mutant, (ROOT / mutant.file).read_text())
    except MutationRotted as exc:
        print(f"mutate.py: {exc}", file=sys.stderr)
        return 2
    if args.list or args.quick:
        for mutant in mutants:
            print(f"{mutant.name}: {mutant.behaviour} ({mutant.file})")
            print("".join(f"    {test}\n" for test in mutant.tests), end="")
        return 0

    if not args.no_baseline:
        tests = list(dict.fromkeys(test for mutant in mutants for test in mutant.tests))
        status, output, seconds = check(None, tests)
        if status != 0:
            print(output[-4000:])
            print(f"baseline: the tests fail unmutated (pytest status {status}): fix that first")
            return 1
        print(f"baseline  {len(tests)} test ids pass unmutated ({seconds:.0f} s)", flush=True)

    survived, broken = [], []
    for mutant in mutants:
        status, output, seconds = check(mutant, list(mutant.tests))
        if status == 1:
            verdict = f"caught    {mutant.name}: {', '.join(failed_tests(output))} failed"
        elif status == 0:
            verdict = f"SURVIVED  {mutant.name}: {mutant.behaviour}; every test named passed"
            survived.append(mutant.name)
        else:  # 2 interrupted, 4 a test id not found, 5 none collected, -1 stopped
            print(output[-2000:])
            verdict = f"ERROR     {mutant.name}: pytest status {status}"
            broken.append(mutant.name)
        print(f"{verdict} ({seconds:.0f} s)", flush=True)
        bench.record({"status": status, "seconds": seconds}, mutant=mutant.name)
    caught = len(mutants) - len(survived) - len(broken)
    summary = f"{caught} of {len(mutants)} mutants caught"
    if survived:
        summary += f"; survived: {', '.join(survived)}"
    if broken:
        summary += f"; errors: {', '.join(broken)}"
    print(summary)
    return 1 if survived or broken else 0


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="every copy and test run this script started "
                       "is stopped")
