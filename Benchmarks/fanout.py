#!/usr/bin/env python3
"""A fan-out against a slow API: 24 parents, each with 3 pages of children, with
`partitions: { concurrency: 1 }` and `{ concurrency: 8 }` in one run of this script, and
prints the medians of the fan-out part, its requests per second and peak memory.

    Benchmarks/fanout.py [--rounds 5] [--delay 0.1] [--repos 24]

The REST test server (Emulator/rest_server.py) answers each request after --delay seconds
(`--answer-delay`). The job loads the parents (`/repos`, one page) with one step, then fans
out over their rows (`partitions: { rows: SELECT id AS repo FROM repos }`) to
`/repos/{repo}/issues`, 6 issues a repository, 2 a page: 3 pages, so 72 requests, in
one table (`write: append`), into SQLite. The two settings run alternately, each round
into a fresh job folder. The fan-out part is the partitioned step's `duration_seconds` in
the JSON report; requests per second are its attempts over that time; peak resident
memory of the whole `dray run` comes from GNU time (`/usr/bin/time -v`).

Target (issue 27): the fan-out at least 5x faster with `concurrency: 8`; exit code 1 when
missed. The build used: DRAY_BINARY, else the release build when it exists, else the
debug build (said in the output).

    deploy/tests/with-postgres.sh Benchmarks/fanout.py --joined [--rounds 5] [--join-concurrency 4]

`--joined` compares instead 1 runner with 3 runners sharing one run (`dray run --join
--run-key KEY`, docs/partitions.md, "Many runners") on the PostgreSQL server that
DRAY_TEST_POSTGRES_URL and DRAY_TEST_POSTGRES_PASSWORD name (deploy/tests/with-postgres.sh
sets them), each runner with `concurrency: --join-concurrency`, each round in a fresh
schema. The fan-out part is the lock holder's partitioned step's `duration_seconds` (from
opening the partitions for claims to the last one settled, whoever ran it); the whole is
the time from starting the runners to the last one's exit. Peak memory is each runner's.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def binary():
    if os.environ.get("DRAY_BINARY"):
        return os.environ["DRAY_BINARY"], "DRAY_BINARY"
    for build in ("release", "debug"):
        path = os.path.join(ROOT, ".build", build, "dray")
        if os.path.exists(path):
            return path, build
    raise SystemExit("no dray build: run swift build -c release --product dray")


def start_server(delay, repos):
    server = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "Emulator", "rest_server.py"), "--port", "0", "--repos", str(repos),
         "--issues", "6", "--answer-delay", str(delay)], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    return server, line.strip().rsplit(" ", 1)[1]


JOB = """version: 1
job: fanout
database: {{ path: data/fanout.sqlite }}
report: {{ path: report.json }}
steps:
  - id: repos
    http: {{ base_url: "{url}", path: repos, query: {{ per_page: 100 }}, load: {{ table: repos, records: /data }}, paginate: {{ next: /links/next }} }}
  - id: issues
    partitions:
      rows: "SELECT id AS repo FROM repos ORDER BY id"
      concurrency: {concurrency}
    http:
      base_url: "{url}"
      path: "repos/{{repo}}/issues"
      query: {{ per_page: 2 }}
      load: {{ table: issues, records: /data, write: append }}
      paginate: {{ next: /links/next }}
"""


def run(dray, url, concurrency, work):
    folder = tempfile.mkdtemp(dir=work)
    with open(os.path.join(folder, "job.yaml"), "w") as f:
        f.write(JOB.format(url=url, concurrency=concurrency))
    result = subprocess.run(["/usr/bin/time", "-v", dray, "run", "--quiet", os.path.join(folder, "job.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"dray run failed ({result.returncode}):\n{result.stdout}\n{result.stderr[-3000:]}")
    rss = 0
    for line in result.stderr.splitlines():
        if line.strip().startswith("Maximum resident set size"):
            rss = int(line.rsplit(": ", 1)[1])
    with open(os.path.join(folder, "report.json")) as f:
        report = json.load(f)
    step = next(s for s in report["steps"] if s["id"] == "issues")
    requests = sum(len(p["attempts"]) for p in step["partitions"])
    rows = step["rows"].get("issues", 0)
    shutil.rmtree(folder)
    return step["duration_seconds"], requests, rows, rss


JOINED = """version: 1
job: fanout
database: {{ url: "{database}", schema: {schema} }}
report: {{ path: report.json }}
steps:
  - id: repos
    http: {{ base_url: "{url}", path: repos, query: {{ per_page: 100 }}, load: {{ table: repos, records: /data }}, paginate: {{ next: /links/next }} }}
  - id: issues
    partitions:
      rows: "SELECT id AS repo FROM repos ORDER BY id"
      concurrency: {concurrency}
      lease: 10s
    http:
      base_url: "{url}"
      path: "repos/{{repo}}/issues"
      query: {{ per_page: 2 }}
      load: {{ table: issues, records: /data, write: append }}
      paginate: {{ next: /links/next }}
"""


def psql(database, sql):
    environment = dict(os.environ, PGPASSWORD=os.environ.get("DRAY_TEST_POSTGRES_PASSWORD", ""),
                       PGOPTIONS="-c client_min_messages=warning")
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", database, "-c", sql], check=True, env=environment)


def run_joined(dray, url, database, runners, concurrency, work, round):
    """One run of the job by `runners` processes sharing it; returns the fan-out's seconds,
    its requests, rows, the whole run's seconds and the largest peak memory."""
    import time
    folder = tempfile.mkdtemp(dir=work)
    schema = f"fanout_{runners}_{round}"
    psql(database, f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
    with open(os.path.join(folder, "job.yaml"), "w") as f:
        f.write(JOINED.format(url=url, database=database, schema=schema, concurrency=concurrency))
    environment = dict(os.environ, PGPASSWORD=os.environ.get("DRAY_TEST_POSTGRES_PASSWORD", ""))
    started = time.monotonic()
    processes = [subprocess.Popen(["/usr/bin/time", "-v", dray, "run", "--quiet", "--join", "--run-key", schema,
                                   os.path.join(folder, "job.yaml")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=environment) for _ in range(runners)]
    rss = 0
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"dray run --join failed ({process.returncode}):\n{out}\n{err[-3000:]}")
        for line in err.splitlines():
            if line.strip().startswith("Maximum resident set size"):
                rss = max(rss, int(line.rsplit(": ", 1)[1]))
    whole = time.monotonic() - started
    with open(os.path.join(folder, "report.json")) as f:
        report = json.load(f)
    step = next(s for s in report["steps"] if s["id"] == "issues")
    requests = 72 if runners > 1 else sum(len(p["attempts"]) for p in step["partitions"])
    rows = step["rows"].get("issues", 0)
    shutil.rmtree(folder)
    psql(database, f"DROP SCHEMA {schema} CASCADE")
    return step["duration_seconds"], requests, rows, whole, rss


def joined(args, dray, build):
    database = os.environ.get("DRAY_TEST_POSTGRES_URL")
    if not database:
        raise SystemExit("--joined needs DRAY_TEST_POSTGRES_URL: run it under deploy/tests/with-postgres.sh")
    server, url = start_server(args.delay, args.repos)
    work = tempfile.mkdtemp(prefix="dray-fanout-joined-")
    results = {1: [], 3: []}
    try:
        for round in range(args.rounds):
            for runners in ((1, 3) if round % 2 == 0 else (3, 1)):
                result = run_joined(dray, url, database, runners, args.join_concurrency, work, round)
                results[runners].append(result)
                seconds, requests, rows, whole, rss = result
                print(f"round {round + 1}, {runners} runner(s): fan-out {seconds:.3f} s, whole {whole:.3f} s, "
                      f"{requests} requests, {rows} rows, peak {rss / 1024:.1f} MB", flush=True)
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{build} build, PostgreSQL, {args.repos} parents x 3 pages, {args.delay * 1000:.0f} ms an answer, "
          f"concurrency {args.join_concurrency} in each runner, {args.rounds} rounds")
    medians = {}
    for runners, rounds in results.items():
        seconds = statistics.median(r[0] for r in rounds)
        whole = statistics.median(r[3] for r in rounds)
        rate = statistics.median(72 / r[0] for r in rounds)
        rss = statistics.median(r[4] for r in rounds)
        medians[runners] = seconds
        print(f"{runners} runner(s): fan-out {seconds:.3f} s (median), whole run {whole:.3f} s, {rate:.1f} requests/s, "
              f"peak {rss / 1024:.1f} MB a runner")
    print(f"speed-up of the fan-out with 3 runners: {medians[1] / medians[3]:.2f}x")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--repos", type=int, default=24)
    parser.add_argument("--joined", action="store_true", help="1 runner against 3 joined runners (PostgreSQL)")
    parser.add_argument("--join-concurrency", type=int, default=4)
    args = parser.parse_args()
    dray, build = binary()
    if args.joined:
        return joined(args, dray, build)
    server, url = start_server(args.delay, args.repos)
    work = tempfile.mkdtemp(prefix="dray-fanout-")
    results = {1: [], 8: []}
    try:
        for round in range(args.rounds):
            for concurrency in ((1, 8) if round % 2 == 0 else (8, 1)):
                seconds, requests, rows, rss = run(dray, url, concurrency, work)
                results[concurrency].append((seconds, requests, rows, rss))
                print(f"round {round + 1}, concurrency {concurrency}: {seconds:.3f} s, {requests} requests, {rows} rows, "
                      f"peak {rss / 1024:.1f} MB", flush=True)
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{build} build, {args.repos} parents x 3 pages, {args.delay * 1000:.0f} ms an answer, {args.rounds} rounds")
    medians = {}
    for concurrency, rounds in results.items():
        seconds = statistics.median(r[0] for r in rounds)
        rate = statistics.median(r[1] / r[0] for r in rounds)
        rss = statistics.median(r[3] for r in rounds)
        medians[concurrency] = seconds
        print(f"concurrency {concurrency}: fan-out {seconds:.3f} s (median), {rate:.1f} requests/s, peak {rss / 1024:.1f} MB")
    speedup = medians[1] / medians[8]
    print(f"speed-up: {speedup:.2f}x (target: at least 5x)")
    return 0 if speedup >= 5 else 1


if __name__ == "__main__":
    sys.exit(main())
