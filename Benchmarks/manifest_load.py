#!/usr/bin/env python3
"""Time to load and validate a manifest, whole process: `dray validate` run from start to exit.

Builds dray in release mode, writes two manifests into a temporary folder, runs
`dray validate` on each many times and prints, in milliseconds, the median, minimum, 90th
percentile and maximum wall-clock time of the whole process, and its median CPU time (user
plus system, from the kernel's accounting of the finished child). `dray version` is timed
the same way: it is the cost of starting the process at all (the dynamic loader binds
Foundation, libcurl and their dependencies), so the difference is what loading and
validating costs. Wall-clock figures include waiting for a CPU: on a shared, busy machine
compare the CPU column and the difference.

- a 200-step manifest: every step kind, parameters, per-step retry and timeouts, SQL with
  {{ table }} templates, parallel groups, anchors and merge keys, ${...} references;
- a manifest holding one 5 MB SQL block.

The target for the 200-step manifest is a median under 50 ms. The exit status is 1 when the
median misses it, so the script can guard CI.

Usage: Benchmarks/manifest_load.py [--runs N] [--no-build] [--static] [--binary PATH]

--static builds with --static-swift-stdlib (the Swift runtime and Foundation linked in),
which starts faster; the binary goes to .build/static/.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_MS = 50.0
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "FMP_USER": "bench", "FMP_PASSWORD": "bench-password"}


def manifest_200_steps():
    """A realistic 200-step manifest: 200 entries in `steps`, groups counted once."""
    lines = [
        "# 200 steps of every kind, for Benchmarks/manifest_load.py",
        "version: 1",
        "job: bench-200",
        "description: Two hundred steps of every kind.",
        "secrets: [FMP_PASSWORD]",
        "x-patient: &patient { count: 8, interval: 2s, max_interval: 1m }",
        "platform:",
        "  host: ${FMP_HOST:-http://127.0.0.1:8765/}",
        "  environment: BenchEnv",
        "  project: BenchProj",
        "  timeouts: { connect: 5s, idle: 30s }",
        "  headers: { X-Trace: bench }",
        "auth:",
        "  username: ${FMP_USER}",
        "  password: ${FMP_PASSWORD}",
        "database: { path: data/bench.sqlite }",
        "retry: { count: 5, interval: 1s, backoff: exponential, max_interval: 30s, jitter: true }",
        "report: { path: \"reports/{job}-{run_id}.json\", formats: [json] }",
        "steps:",
        "  - id: schemes",
        "    schemes: { resources: [" + ", ".join(f"R{i:03d}" for i in range(60)) + "] }",
    ]
    count = 1
    resource = 0
    while count < 200:
        kind = count % 10
        if kind in (1, 2, 3, 4):
            lines += [
                f"  - id: load-{count:03d}",
                f"    description: Load resource R{resource:03d} for region {count % 7}.",
                f"    table_stream: {{ resource: R{resource:03d}, params: {{ region: \"{count % 7}\", year: 2024 }}, delta: true }}",
            ]
            if kind == 2:
                lines += ["    retry:", "      <<: *patient", "      jitter: false", "    timeouts: { idle: 2m }"]
            resource = (resource + 1) % 60
        elif kind == 5:
            r = (resource + 59) % 60
            lines += [
                f"  - id: fix-{count:03d}",
                "    sql: |",
                f"      DELETE FROM {{{{ table \"R{r:03d}\" \"output_table\" '{{\"region\":\"{(count - 1) % 7}\",\"year\":2024}}' }}}}",
                "        WHERE id IS NULL;",
                f"      UPDATE {{{{ table \"R{r:03d}\" \"output_table\" '{{\"region\":\"{(count - 1) % 7}\",\"year\":2024}}' }}}}",
                "        SET name = trim(name);",
            ]
        elif kind == 6:
            lines += [
                f"  - id: check-{count:03d}",
                "    query:",
                "      sql: SELECT count(*) AS n FROM {{ table \"R000\" \"output_table\" '{\"region\":\"1\",\"year\":2024}' }}",
                f"      output: out/check-{count:03d}.json",
                "      expect: { n: { min: 0, max: 1000000 } }",
            ]
        elif kind == 7:
            lines += [
                f"  - id: export-{count:03d}",
                f"    table: {{ resource: R{resource:03d}, output: out/r{count:03d}.csv, format: csv }}",
            ]
        elif kind == 8:
            lines += [
                f"  - id: group-{count:03d}",
                "    parallel:",
                "      max: 3",
                "      steps:",
            ]
            for member in range(3):
                lines.append(f"        - table_stream: {{ resource: R{(resource + member) % 60:03d}, params: {{ shard: {member} }} }}")
        elif kind == 9:
            lines += [
                f"  - id: files-{count:03d}",
                f"    files: {{ connection: local_storage, action: get, path: in/{count}.csv, local: in/{count}.csv }}",
            ]
        else:
            lines += [f"  - id: ping-{count:03d}", "    request: { resource: STATUS, params: { verbose: true } }"]
        count += 1
    return "\n".join(lines) + "\n"


def manifest_5mb_sql():
    row = "      INSERT INTO prices(id, name, price) VALUES (1, 'a name long enough to fill the line', 0.52);\n"
    body = row * (5 * 1024 * 1024 // len(row) + 1)
    return (
        "version: 1\njob: bench-5mb\ndatabase: { path: data/bench.sqlite }\n"
        "steps:\n  - id: load\n    sql: |\n" + body
    )


def summary(times, cpu):
    times = sorted(times)
    return {
        "median": statistics.median(times),
        "min": times[0],
        "p90": times[min(len(times) - 1, int(len(times) * 0.9))],
        "max": times[-1],
        "cpu": statistics.median(cpu),
    }


def measure(commands, runs):
    """Times each command `runs` times, round-robin, so that a change in the machine's load
    during the measurement weighs on every command alike."""
    for _ in range(3):  # warm the page cache and the dynamic loader
        for command in commands:
            subprocess.run(command, env=ENVIRONMENT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = [[] for _ in commands]
    cpu = [[] for _ in commands]
    for _ in range(runs):
        for i, command in enumerate(commands):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter_ns()
            done = subprocess.run(command, env=ENVIRONMENT, capture_output=True, text=True)
            times[i].append((time.perf_counter_ns() - start) / 1e6)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[i].append(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000)
            if done.returncode != 0:
                sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return [summary(t, c) for t, c in zip(times, cpu)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per manifest (default 30)")
    parser.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    parser.add_argument("--static", action="store_true", help="build with --static-swift-stdlib into .build/static")
    parser.add_argument("--binary", help="the dray binary to time (implies --no-build)")
    args = parser.parse_args()

    scratch = os.path.join(ROOT, ".build", "static") if args.static else os.path.join(ROOT, ".build")
    binary = args.binary or os.path.join(scratch, "release", "dray")
    if not args.binary and not args.no_build:
        command = ["swift", "build", "-c", "release", "--product", "dray"]
        if args.static:
            command += ["--static-swift-stdlib", "--scratch-path", scratch]
        print("building: " + " ".join(command), file=sys.stderr)
        subprocess.run(command, cwd=ROOT, check=True)

    with tempfile.TemporaryDirectory(prefix="dray-bench-") as folder:
        steps_path = os.path.join(folder, "bench-200.yaml")
        sql_path = os.path.join(folder, "bench-5mb.yaml")
        with open(steps_path, "w") as f:
            f.write(manifest_200_steps())
        with open(sql_path, "w") as f:
            f.write(manifest_5mb_sql())
        check = subprocess.run([binary, "validate", steps_path], env=ENVIRONMENT, capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit(f"the 200-step manifest does not validate:\n{check.stderr}")

        names = [
            "dray version (process start)",
            f"validate 200 steps ({os.path.getsize(steps_path) // 1024} KB)",
            f"validate 5 MB SQL ({os.path.getsize(sql_path) // 1024} KB)",
        ]
        commands = [[binary, "version"], [binary, "validate", steps_path], [binary, "validate", sql_path]]
        rows = list(zip(names, measure(commands, args.runs)))

    load = os.getloadavg()[0]
    print(f"dray manifest load, whole process, {args.runs} runs each, ms ({binary}; load average {load:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'':40} {'median':>8} {'min':>8} {'p90':>8} {'max':>8} {'CPU':>8}")
    for name, t in rows:
        print(f"{name:40} {t['median']:8.1f} {t['min']:8.1f} {t['p90']:8.1f} {t['max']:8.1f} {t['cpu']:8.1f}")
    start, steps = rows[0][1], rows[1][1]
    print(f"loading and validating 200 steps costs {steps['median'] - start['median']:.1f} ms wall, "
          f"{steps['cpu'] - start['cpu']:.1f} ms CPU over starting the process")
    verdict = "within" if steps["median"] < TARGET_MS else "OVER"
    print(f"200-step manifest: median {steps['median']:.1f} ms, {verdict} the {TARGET_MS:.0f} ms target")
    return 0 if steps["median"] < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
