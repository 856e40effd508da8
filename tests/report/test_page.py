"""``nornir-bench report``: the page of a run, from real runs (a synthetic job with failures,
retries and canary batches; a change job's rollback is in tests/runners/test_config_routers.py),
loaded in a real headless browser (Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nornir_bench.report.aggregate import fold_cause
from nornir_bench.report.compare import compare_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def nornir_bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nornir_bench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def in_browser(page: Path, folder: Path) -> tuple[str, str]:
    """The page's DOM once its scripts ran, in headless Chromium, and what Chromium logged
    (its console messages among them)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={folder / 'chromium'}",
         "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def ran(tmp_path: Path, name: str, **options: object) -> Path:
    (tmp_path / "job.yaml").write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 120}}
        runner: {plugin: threadpool, options: {num_workers: 20, batches: [5, "25%"],
                 retries: 1, retry_delay: 0.01,
                 retry_on: [nornir_bench.core.exceptions.SimulatedFailure]}}
        task: {name: sim_rtt, params: {rtt: 0.01, fail_rate: 0.2}}
        logging: {enabled: false}
        """))
    done = nornir_bench("run", "job.yaml", "-o", name, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    return tmp_path / name


def test_the_page_of_a_run_loads_in_a_browser_and_counts_as_the_records(tmp_path: Path) -> None:
    first, second = ran(tmp_path, "a.jsonl"), ran(tmp_path, "b.jsonl")
    done = nornir_bench("report", "b.jsonl", "--compare", "a.jsonl", "-o", "page.html",
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("report: page.html (120 hosts, ")
    page = (tmp_path / "page.html").read_text()
    # Self-contained: nothing to fetch (only the SVG and XLink namespaces' names).
    assert set(re.findall(r"https?://[^\"' ]*", page)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    dom, log = in_browser(tmp_path / "page.html", tmp_path)
    assert 'data-ready="1"' in dom and "data-errors" not in dom
    assert not re.search(r"CONSOLE.*(Uncaught|Error)", log), log[-2000:]
    rows = [json.loads(line) for line in second.read_text().splitlines()]
    failed = sum(r["failed"] for r in rows)
    assert f'data-hosts="120" data-ok="{120 - failed}" data-failed="{failed}"' in dom
    assert dom.count("<svg") >= 2  # the timeline, the times per host
    assert "batch 2" in dom and "batch 3" in dom
    if failed:
        assert "Failures by cause" in dom
        # One cause for every simulated failure: the host name and the numbers folded.
        assert "simulated failure on &lt;host&gt; after &lt;n&gt; ms" in dom
    differ = len(compare_runs(first, second).changes)
    assert f'data-differ="{differ}"' in dom


def test_a_records_file_that_is_not_one_exits_2_and_a_corrupt_line_is_skipped_and_said(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.jsonl").write_text("not records\n")
    done = nornir_bench("report", "bad.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("nornir-bench: error: bad.jsonl: line 1 is not a host's record: not "
                           "a records file of nornir-bench run\n")
    good = ran(tmp_path, "a.jsonl")
    with good.open("a") as file:
        file.write('{"host": "dev999", "fail')  # a run killed while writing its last line
    done = nornir_bench("report", "a.jsonl", "-o", "page.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a.jsonl: skipped 1 of 121 lines that are not a host's record" in done.stderr
    assert done.stdout.startswith("report: page.html (120 hosts, ")


def test_causes_fold_what_differs_from_host_to_host() -> None:
    assert fold_cause("login to r7 refused by 10.0.0.7:22 after 3.5 s", "r7") == (
        "login to <host> refused by <address> after <n> s"
    )
    assert fold_cause("worker process 4242 exited with status 1", "dev1") == (
        "worker process <n> exited with status <n>"
    )
    assert fold_cause("no route to 2001:db8::1", "x") == "no route to <address>"


def test_records_written_before_times_were_kept_still_make_a_page(tmp_path: Path) -> None:
    """The keys of records of the last stop's format only: the page says what is missing."""
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({
        "host": f"dev{i}", "step": 1, "task": "sim_rtt", "failed": i == 1, "elapsed": 0.05,
        "result": "ok", "exception": "SimulatedFailure" if i == 1 else None,
        "message": "simulated failure on dev1 after 50.0 ms" if i == 1 else None,
        "traceback": None, "abandoned": False, "attempts": 1, "failed_attempts": [],
        "changed": False, "change": None, "diff": None}) + "\n" for i in range(3)))
    done = nornir_bench("report", "old.jsonl", "-o", "page.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.html").read_text()
    assert "data-hosts='3' data-ok='2' data-failed='1'" in page
    assert "missing: these records hold no start and end times" in page
    assert "simulated failure on &lt;host&gt; after &lt;n&gt; ms" in page


def test_a_page_of_one_host_in_a_folder_not_there_says_both_in_words(tmp_path: Path) -> None:
    """``(1 host, ...)``, not ``(1 hosts``; the missing folder is made, and said; the config
    states read as words; what the command line changed is named."""
    (tmp_path / "one.jsonl").write_text(json.dumps({
        "host": "r1", "overrides": {"limit": "r1", "workers": 5}, "step": 1,
        "task": "send_config", "failed": False, "elapsed": 0.5, "result": "no change",
        "exception": None, "message": None, "changed": False,
        "change": {"state": "no change", "backup": None}, "diff": None}) + "\n")
    done = nornir_bench("report", "one.jsonl", "-o", "new/page.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("report: new/page.html (1 host, ")
    assert done.stderr.splitlines() == ["report: made the folder new, which was not there"]
    page = (tmp_path / "new" / "page.html").read_text()
    assert "config: 1 host with nothing to change" in page
    assert "from the command line: <code>limit r1, workers 5</code>" in page
