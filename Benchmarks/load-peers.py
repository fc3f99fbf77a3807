#!/usr/bin/env python3
"""Loads a generated resource of N rows x 8 mixed-type columns with dray and with its peers,
in one run, and prints their wall times and peak memory side by side.

    Benchmarks/load-peers.py [--rows 1000000,5000000] [--rounds 3] [--slow-rounds 1] [--no-dlt]

The platform emulator serves the answer from a file rendered once (Emulator/generated.py,
kept under --cache-dir across runs), so it is never the bottleneck. For each row count the
tools run in turn, round after round (the order rotates, so a busy moment of the machine
does not always hit the same tool), each into a fresh database:

    dray      `dray run` of a job with one table_stream step (release build): sign in,
              download to a file, load in one transaction (WAL, synchronous=NORMAL)
    .import   the sqlite3 shell's `.import --csv` of the same rows from a local CSV file
              into a table with declared types (the near-ideal: no network, no JSON)
    python    a hand-written loader (peers/handwritten.py): urllib, json.load, executemany
    dlt       dlt from PyPI (peers/dlt_load.py), in a virtualenv this script makes under
              --work; the sqlalchemy destination with an SQLite URL, as dlt documents it
    curl      `curl` downloading the same answer to /dev/null: the floor for any loader
              that fetches from the server

Wall time and peak resident memory come from GNU time (`/usr/bin/time -v`, "Elapsed (wall
clock) time" and "Maximum resident set size"); curl's time is its own `%{time_total}`. The
table shows medians (python and dlt run --slow-rounds times, the others --rounds), then
the targets: dray within 2x of .import, at least 10x faster than dlt, faster than the
hand-written loader, peak memory under 64 MB. Exit code 1 when a target is missed.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Emulator"))
import generated  # noqa: E402  (the emulator's row generator: the CSV holds the same rows)

DLT_REQUIREMENT = "dlt[sqlalchemy]==1.31.0"
CREATE = ("CREATE TABLE output_table (id INTEGER, code TEXT, name TEXT, amount REAL, quantity INTEGER, "
          "active INTEGER, created TEXT, note TEXT)")


def log(message):
    print(message, file=sys.stderr, flush=True)


def run_timed(command, cwd=None, env=None):
    """Runs `command` under /usr/bin/time -v; returns (wall seconds, peak RSS in KiB)."""
    result = subprocess.run(["/usr/bin/time", "-v"] + command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}\n{result.stdout}\n{result.stderr[-3000:]}")
    wall = rss = None
    for line in result.stderr.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            clock = line.rsplit(": ", 1)[1].split(":")
            wall = sum(float(part) * 60 ** i for i, part in enumerate(reversed(clock)))
        elif line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(": ", 1)[1])
    return wall, rss


def dray_binary():
    if os.environ.get("DRAY_BINARY"):
        return os.environ["DRAY_BINARY"]
    path = os.path.join(ROOT, ".build", "release", "dray")
    log("building dray (release)...")
    subprocess.run(["swift", "build", "-c", "release", "--product", "dray"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return path


def start_emulator(sizes, cache_dir):
    command = [sys.executable, os.path.join(ROOT, "Emulator", "emulator.py"), "--port", "0", "--cache-dir", cache_dir,
               "--exit-on-eof"]
    for rows in sizes:
        command += ["--generate", f"GEN{rows}:{rows}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    url = line.strip().split(" on ", 1)[1]
    return process, url


def token(url):
    body = ("environment=DocumentationExampleEnv&project=DocumentationExampleProj"
            "&username=demo&password=demo-password").encode()
    with urllib.request.urlopen(urllib.request.Request(f"{url}api/v1/auth/jwt/obtain/", data=body)) as response:
        return json.load(response)["token"]


def write_csv(path, rows):
    """The generated rows as CSV, from the generator itself (the same values the answer holds)."""
    if os.path.exists(path):
        return
    import csv
    rng = random.Random(7)
    with open(path + ".tmp", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow([c[0] for c in generated.COLUMNS])
        for i in range(1, rows + 1):
            writer.writerow(["" if v is None else v for v in generated.row(i, rng)])
    os.replace(path + ".tmp", path)


def dlt_python(work):
    venv = os.path.join(work, "venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        log(f"installing {DLT_REQUIREMENT} into {venv}...")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", DLT_REQUIREMENT], check=True)
    return python


def count_rows(database, table):
    out = subprocess.run(["sqlite3", database, f"SELECT count(*) FROM {table}"], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def fresh(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def measure(size, url, work, binary, dlt, rounds, slow_rounds):
    resource = f"GEN{size}"
    folder = os.path.join(work, f"rows-{size}")
    os.makedirs(folder, exist_ok=True)
    log(f"{size} rows: rendering the answer and the CSV (once, cached)...")
    bearer = token(url)
    subprocess.run(["curl", "-sf", "-o", "/dev/null", "-X", "POST", "-H", f"Authorization: Bearer {bearer}",
                    f"{url}api/v1/rpc/{resource}/"], check=True)
    csv_path = os.path.join(work, f"{resource}.csv")
    write_csv(csv_path, size)
    job = os.path.join(folder, "job.yaml")
    with open(job, "w") as f:
        f.write(f"""version: 1
job: bench-{size}
platform: {{ host: "{url}", environment: DocumentationExampleEnv, project: DocumentationExampleProj }}
auth: {{ username: demo, password: demo-password }}
database: {{ path: run/dray.sqlite }}
download: {{ path: run/downloads }}
report: {{ path: run/report.json }}
steps:
  - id: load
    table_stream: {{ resource: {resource} }}
""")

    def run_dray():
        run = fresh(os.path.join(folder, "run"))
        wall, rss = run_timed([binary, "run", job, "--quiet"])
        assert count_rows(os.path.join(run, "dray.sqlite"), f"{resource}__output_table") == size
        return wall, rss

    def run_import():
        run = fresh(os.path.join(folder, "import"))
        database = os.path.join(run, "import.sqlite")
        wall, rss = run_timed(["sqlite3", database, CREATE, f".import --csv --skip 1 {csv_path} output_table"])
        assert count_rows(database, "output_table") == size
        return wall, rss

    def run_python():
        run = fresh(os.path.join(folder, "python"))
        database = os.path.join(run, "python.sqlite")
        wall, rss = run_timed([sys.executable, os.path.join(HERE, "peers", "handwritten.py"), url, token(url), resource, database])
        assert count_rows(database, "output_table") == size
        return wall, rss

    def run_dlt():
        run = fresh(os.path.join(folder, "dlt"))
        database = os.path.join(run, "dlt.sqlite")
        wall, rss = run_timed([dlt, os.path.join(HERE, "peers", "dlt_load.py"), url, token(url), resource, database,
                               os.path.join(run, "pipelines")])
        assert count_rows(database, "output_table") == size
        return wall, rss

    def run_curl():
        out = subprocess.run(["curl", "-sf", "-o", "/dev/null", "-w", "%{time_total}", "-X", "POST", "-H",
                              f"Authorization: Bearer {token(url)}", f"{url}api/v1/rpc/{resource}/"],
                             check=True, capture_output=True, text=True)
        return float(out.stdout), None

    tools = [("dray", run_dray, rounds), (".import", run_import, rounds), ("curl", run_curl, rounds),
             ("python", run_python, slow_rounds)]
    if dlt:
        tools.append(("dlt", run_dlt, slow_rounds))
    results = {name: [] for name, _, _ in tools}
    for r in range(max(rounds, slow_rounds)):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for name, tool, count in order:
            if r >= count:
                continue
            wall, rss = tool()
            results[name].append((wall, rss))
            log(f"  round {r + 1}: {name:8} {wall:8.2f} s" + (f"  {rss / 1024:7.1f} MB" if rss else ""))
    check_same_values(folder, size, resource)
    return results


def check_same_values(folder, size, resource):
    """dray and the hand-written loader must hold the same values (the CSV cannot: it has no NULL)."""
    query = "SELECT count(*), sum(id), total(amount), sum(quantity), count(note), sum(length(name)) FROM {}"
    dray = subprocess.run(["sqlite3", os.path.join(folder, "run", "dray.sqlite"), query.format(f"{resource}__output_table")],
                          capture_output=True, text=True, check=True).stdout
    python_db = os.path.join(folder, "python", "python.sqlite")
    if os.path.exists(python_db):
        python = subprocess.run(["sqlite3", python_db, query.format("output_table")], capture_output=True, text=True,
                                check=True).stdout
        if dray != python:
            raise SystemExit(f"dray and the hand-written loader disagree: {dray.strip()} vs {python.strip()}")
        log(f"  dray and the hand-written loader hold the same values ({dray.strip()})")


def report(size, results):
    median = {name: statistics.median(w for w, _ in runs) for name, runs in results.items() if runs}
    peak = {name: max((m for _, m in runs if m), default=None) for name, runs in results.items() if runs}
    print(f"\n{size:,} rows x 8 columns ({', '.join(f'{n} {len(r)}x' for n, r in results.items())})")
    print(f"{'tool':10} {'wall (median)':>14} {'runs':>24} {'peak RSS':>10} {'÷ dray':>8}")
    for name, runs in results.items():
        if not runs:
            continue
        walls = " ".join(f"{w:.2f}" for w, _ in runs)
        rss = f"{peak[name] / 1024:.1f} MB" if peak[name] else "-"
        ratio = median[name] / median["dray"]
        print(f"{name:10} {median[name]:>12.2f} s {walls:>24} {rss:>10} {ratio:>7.2f}x")
    targets = [
        ("dray within 2x of .import", median["dray"] <= 2 * median[".import"], f"{median['dray'] / median['.import']:.2f}x"),
        ("dray faster than the hand-written loader", "python" not in median or median["dray"] < median["python"],
         f"{median.get('python', float('nan')) / median['dray']:.1f}x"),
        ("dray at least 10x faster than dlt", "dlt" not in median or median["dlt"] >= 10 * median["dray"],
         f"{median.get('dlt', float('nan')) / median['dray']:.1f}x"),
        ("dray peak memory under 64 MB", peak["dray"] < 64 * 1024, f"{peak['dray'] / 1024:.1f} MB"),
    ]
    for label, ok, figure in targets:
        print(f"  {'ok  ' if ok else 'MISS'} {label}: {figure}")
    return all(ok for _, ok, _ in targets)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1000000,5000000", help="comma-separated row counts")
    parser.add_argument("--rounds", type=int, default=3, help="runs of dray, .import and curl per row count")
    parser.add_argument("--slow-rounds", type=int, default=1, help="runs of the Python loader and dlt per row count")
    parser.add_argument("--no-dlt", action="store_true", help="leave dlt out")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "dray-bench"),
                        help="scratch folder: rendered answers, CSV files, the dlt virtualenv, databases")
    args = parser.parse_args()
    sizes = [int(s) for s in args.rows.split(",")]
    os.makedirs(args.work, exist_ok=True)
    binary = dray_binary()
    dlt = None if args.no_dlt else dlt_python(args.work)
    emulator, url = start_emulator(sizes, os.path.join(args.work, "cache"))
    versions = subprocess.run(["sqlite3", "--version"], capture_output=True, text=True).stdout.split()[0]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; sqlite3 {versions}; "
          f"Python {sys.version.split()[0]}" + ("" if dlt is None else f"; {DLT_REQUIREMENT}"))
    ok = True
    try:
        for size in sizes:
            results = measure(size, url, args.work, binary, dlt, args.rounds, args.slow_rounds)
            ok = report(size, results) and ok
    finally:
        emulator.stdin.close()
        emulator.wait(timeout=10)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
