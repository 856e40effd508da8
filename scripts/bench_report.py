#!/usr/bin/env python3
"""The report and the comparison of two runs at scale: ``nornir-bench report`` and
``nornir-bench diff`` on records files of ``--hosts`` hosts (default 100,000).

    python scripts/bench_report.py [--hosts 100000] [--keep DIR] [--quick] [--record PATH]

Two real runs make the records: ``nornir-bench run`` of a synthetic job (``sim_rtt``, 1 ms,
2 % of hosts failing, ``retries: 1``, canary batches: 1 %, then the rest) on the asyncio
runner, twice. Then, each in a process of its own, timed from outside (wall, and the
child's peak RSS from ``getrusage``):

- ``report RUN2 -o page.html``: its seconds and peak RSS, the page's size; then the same with
  ``--compare RUN1``;
- the page in headless Chromium (``--dump-dom``, from the process's start to its exit, which
  is after the page's scripts ran), minus the same for an empty page: the page's own time;
- ``diff RUN1 RUN2 --no-diffs`` and ``diff RUN1 RUN2``: seconds and peak RSS.

Targets (issue 28): report <= 10 s and <= 500 MB RSS, page <= 5 MB rendering in <= 2 s;
diff <= 5 s. Nothing leaves 127.0.0.1; everything is written in a temporary folder (or
``--keep DIR``). ``--quick``: 200 hosts, the page rendered once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import harness
from harness.jobs import nornir_bench

TARGETS = {"report_s": 10.0, "report_mb": 500.0, "page_mb": 5.0, "render_s": 2.0,
           "diff_s": 5.0}

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--keep", type=Path, help="write the files here and keep them")


def measured(args: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Seconds and the peak RSS (MiB, its own: ``wait4``) of ``args`` run to its end."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(args, process.returncode, out.read(), err.read())
    return took, usage.ru_maxrss / 1024, done


def main(bench: harness.Bench) -> int:
    args = bench.args
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return measure(bench, folder, args.hosts or (200 if bench.quick else 100_000))
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


def measure(bench: harness.Bench, folder: Path, hosts: int) -> int:
    (folder / "job.yaml").write_text(textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: {hosts}}}}}
        runner: {{plugin: asyncio, options: {{num_workers: 1000, batches: ["1%", "100%"],
                 retries: 1, retry_delay: 0.001,
                 retry_on: [nornir_bench.core.exceptions.SimulatedFailure]}}}}
        task: {{name: sim_rtt, params: {{rtt: 0.001, fail_rate: 0.02}}}}
        logging: {{enabled: false}}
        """))
    for name in ("run1.jsonl", "run2.jsonl"):
        took, _, done = measured(nornir_bench("run", "job.yaml", "-o", name, "--quiet"), folder)
        if done.returncode not in (0, 1):
            print(done.stderr, file=sys.stderr)
            return 2
        size = (folder / name).stat().st_size / 1e6
        print(f"{name}: {hosts:,} hosts, {size:.1f} MB, run in {took:.1f} s")
    figures: dict[str, float] = {}
    took, peak, done = measured(nornir_bench("diff", "run1.jsonl", "run2.jsonl", "--no-diffs"),
                                folder)
    figures["diff_s"] = took
    print(f"diff --no-diffs: {took:.2f} s, exit {done.returncode}, peak RSS {peak:.0f} MiB")
    took, peak, done = measured(nornir_bench("diff", "run1.jsonl", "run2.jsonl"), folder)
    figures["diff_s"] = max(figures["diff_s"], took)
    print(f"diff: {took:.2f} s, peak RSS {peak:.0f} MiB, {done.stdout.splitlines()[0]}")
    took, peak, done = measured(nornir_bench("report", "run2.jsonl", "-o", "page.html"), folder)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 2
    figures["report_s"], figures["report_mb"] = took, peak * 1.048576
    figures["page_mb"] = (folder / "page.html").stat().st_size / 1e6
    print(f"report: {took:.2f} s, peak RSS {peak:.0f} MiB, page {figures['page_mb']:.2f} MB")
    took, peak, done = measured(
        nornir_bench("report", "run2.jsonl", "--compare", "run1.jsonl", "-o", "both.html"),
        folder,
    )
    size = (folder / "both.html").stat().st_size / 1e6
    print(f"report --compare: {took:.2f} s, peak RSS {peak:.0f} MiB, page {size:.2f} MB "
          "(no target: it reads both files as diff does, and the page's own again)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("render: chromium is not installed: not measured")
    else:
        (folder / "empty.html").write_text("<!DOCTYPE html><html><body></body></html>")
        renders: dict[str, list[float]] = {}
        pages = ("empty.html", "page.html") * (1 if bench.quick else 2)
        for page in pages:
            took, _, done = measured(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={folder / 'chromium'}", "--dump-dom",
                 (folder / page).as_uri()], folder)
            renders.setdefault(page, []).append(took)
        figures["render_s"] = min(renders["page.html"]) - min(renders["empty.html"])
        print(f"render: {figures['render_s']:.2f} s (page {min(renders['page.html']):.2f} s, "
              f"an empty page {min(renders['empty.html']):.2f} s)")
    print()
    print("| figure | measured | target |")
    print("|---|---|---|")
    for key, target in TARGETS.items():
        if key in figures:
            verdict = "met" if figures[key] <= target else "MISSED"
            print(f"| {key} | {figures[key]:.2f} | <= {target:g} ({verdict}) |")
    print(f"\n{os.cpu_count()} cores")
    bench.record(figures, hosts=hosts)
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER)
