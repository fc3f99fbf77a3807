#!/usr/bin/env python3
"""Time to draw the HTML page of a job with 1,000 runs in its journal: `dray report`, whole
process, from start to exit.

Builds dray in release mode, starts the platform emulator on a free loopback port and runs
a real job once (a scheme fetch, a CSV file, two loads, a SQL step), so that the journal and
the JSON report are dray's own. It then gives the job a history of N runs (default 1,000):
N-1 more rows in the journal's `_dray_runs`, one a minute apart, about one in ten failed and
one in twenty interrupted, each with a copy of the real report under its run id, its
duration and row counts varied. Then it runs `dray report job.yaml --runs N -o page.html`
ROUNDS times and prints the median, minimum and maximum wall-clock time, the median CPU
time (user plus system, from the kernel's accounting of the finished child) and the page's
size. Each round reads the journal and all N reports (parsed by dray's JSON lexer) and renders the
page.

The target is a median under one second; the exit status is 1 when the median misses it.

Usage: Benchmarks/report_page.py [--runs N] [--rounds R] [--no-build] [--binary PATH]
"""

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_SECONDS = 1.0


def start_emulator(work):
    log = open(os.path.join(work, "emulator.log"), "w+")
    process = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "Emulator", "emulator.py"), "--port", "0"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for _ in range(200):
        log.seek(0)
        first = log.readline()
        if "listening" in first:
            return process, first.split()[-1]
        time.sleep(0.05)
    process.kill()
    sys.exit("the emulator did not start: " + open(log.name).read())


def write_job(folder, url):
    with open(os.path.join(folder, "job.yaml"), "w") as f:
        f.write(f"""version: 1
job: history
platform: {{ host: "{url}", environment: DocumentationExampleEnv, project: DocumentationExampleProj }}
auth: {{ username: demo, password: demo-password }}
database: {{ path: data/db.sqlite }}
steps:
  - id: schemes
    schemes: {{ resources: [FRUITS, LANGUAGES, COUNTRIES] }}
  - id: fruits-csv
    table: {{ resource: FRUITS, output: out/fruits.csv, format: csv }}
  - id: loads
    parallel:
      steps:
        - id: languages
          table_stream: {{ resource: LANGUAGES }}
        - id: countries
          table_stream: {{ resource: COUNTRIES }}
  - id: tally
    sql: SELECT 1;
report:
  path: "reports/{{job}}-{{run_id}}.json"
""")
    return os.path.join(folder, "job.yaml")


def add_history(folder, runs, seed=7):
    """N-1 more runs in the journal and their reports, copied from the real one."""
    random.seed(seed)
    database = sqlite3.connect(os.path.join(folder, "data", "db.sqlite"))
    (real_id, lineage, fingerprint, pid) = database.execute(
        "SELECT run_id, lineage, manifest_fingerprint, pid FROM _dray_runs").fetchone()
    with open(os.path.join(folder, "reports", f"history-{real_id}.json")) as f:
        report = json.load(f)
    base = time.mktime(time.strptime("2026-01-01T00:00:00", "%Y-%m-%dT%H:%M:%S"))
    rows = []
    for index in range(runs - 1):
        started = base + 60 * index
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(started))
        run_id = f"{stamp}.000Z-{index:06x}"
        status = "failed" if index % 10 == 3 else "interrupted" if index % 20 == 7 else "succeeded"
        duration = round(report["duration_seconds"] * random.uniform(0.7, 1.6), 3)
        copy = json.loads(json.dumps(report))
        copy.update(run_id=run_id, status=status, duration_seconds=duration,
                    started_at=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(started)),
                    ended_at=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started + duration)) + ".500Z")
        for step in copy["steps"]:
            for holder in [step] + step.get("steps", []):
                holder["rows"] = {t: max(0, n - random.randrange(0, 3)) for t, n in holder["rows"].items()}
        with open(os.path.join(folder, "reports", f"history-{run_id}.json"), "w") as f:
            json.dump(copy, f, indent=2)
        rows.append((run_id, lineage, "history", copy["started_at"], copy["ended_at"], status, fingerprint, pid, ""))
    database.executemany("INSERT INTO _dray_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    database.commit()
    database.close()


def timed(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {result.returncode}: {result.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "dray"))
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "dray"], cwd=ROOT, check=True,
                       stdout=sys.stderr)
    work = tempfile.mkdtemp(prefix="dray-bench-report-")
    emulator = None
    try:
        emulator, url = start_emulator(work)
        manifest = write_job(work, url)
        first = subprocess.run([args.binary, "run", manifest, "--quiet"], capture_output=True, text=True)
        if first.returncode != 0:
            sys.exit(f"the job failed: {first.stdout}{first.stderr}")
        emulator.terminate()
        emulator = None
        add_history(work, args.runs)
        page = os.path.join(work, "page.html")
        command = [args.binary, "report", manifest, "--runs", str(args.runs), "-o", page]
        figures = [timed(command) for _ in range(args.rounds)]
        walls = sorted(w for w, _ in figures)
        median = statistics.median(walls)
        print(f"dray report, {args.runs} runs in the journal, {args.rounds} rounds: median {median:.3f} s "
              f"(min {walls[0]:.3f} s, max {walls[-1]:.3f} s), median CPU "
              f"{statistics.median(c for _, c in figures):.3f} s, page {os.path.getsize(page):,} bytes")
        return 0 if median < TARGET_SECONDS else 1
    finally:
        if emulator:
            emulator.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
