#!/usr/bin/env python3
"""Copies N generated rows x 8 mixed columns into PostgreSQL with dray's COPY writer and with
`psql \\copy` of the same rows as CSV from a local file, side by side, and prints wall time
and peak memory.

    Benchmarks/postgres-copy.py [--rows 1000000,5000000] [--rounds 3]

It starts its own PostgreSQL 15 server (initdb into a temporary folder as the `postgres`
user, 127.0.0.1 on a free port, fsync off for both tools alike), builds
`dray-bench-postgres` in release mode (Benchmarks/PostgresCopy: the rows go value by value
through PostgresValueRule and PostgresCopyWriter, one transaction, as a load will), writes
the same rows as CSV once, and runs, in turn and into a freshly truncated table:

    dray    dray-bench-postgres copy URL N
    \\copy   psql -c "\\copy bench FROM FILE (FORMAT csv)"

Wall time and peak resident memory come from GNU time (`/usr/bin/time -v`). The table
shows medians and the ratio to \\copy; targets: dray within 1.5x of \\copy, peak memory
under 64 MB. Exit code 1 when a target is missed. The server and folder are removed at
the end.
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = "/usr/lib/postgresql/15/bin"
COLUMNS = ("id bigint, name text, word text, price double precision, quantity bigint, "
           "active boolean, day text, note text")


def as_postgres(args):
    prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    subprocess.run(prefix + args, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(args):
    """Wall seconds and peak RSS in MB of one command, from GNU time."""
    result = subprocess.run(["/usr/bin/time", "-v"] + args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{args[0]} failed: {result.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.+)", result.stderr).group(1)
    seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(wall.split(":"))))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) / 1024
    return seconds, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="1000000")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()

    subprocess.run(["swift", "build", "-c", "release", "--product", "dray-bench-postgres"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    bench = os.path.join(ROOT, ".build", "release", "dray-bench-postgres")
    folder = tempfile.mkdtemp(prefix="dray-pg-bench-")
    os.chmod(folder, 0o755)
    if os.getuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = os.path.join(folder, "data")
    port = free_port()
    missed = False
    try:
        as_postgres([BIN + "/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8",
                     "--no-sync"])
        as_postgres([BIN + "/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-o",
                     f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        psql = [BIN + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url]
        subprocess.run(psql + ["-c", f"CREATE TABLE bench ({COLUMNS})"], check=True)
        for rows in [int(n) for n in options.rows.split(",")]:
            csv = os.path.join(folder, f"rows-{rows}.csv")
            subprocess.run([bench, "csv", csv, str(rows)], check=True)
            results = {"dray": [], "\\copy": []}
            for round_number in range(options.rounds):
                order = ["dray", "\\copy"] if round_number % 2 == 0 else ["\\copy", "dray"]
                for tool in order:
                    subprocess.run(psql + ["-c", "TRUNCATE bench; CHECKPOINT"], check=True)
                    if tool == "dray":
                        results[tool].append(timed([bench, "copy", url, str(rows)]))
                    else:
                        results[tool].append(timed(psql + ["-c", f"\\copy bench FROM '{csv}' (FORMAT csv)"]))
                    count = subprocess.run(psql + ["-At", "-c", "SELECT count(*) FROM bench"], check=True,
                                           capture_output=True, text=True).stdout.strip()
                    if count != str(rows):
                        sys.exit(f"{tool} copied {count} rows, not {rows}")
            copy_median = statistics.median(t for t, _ in results["\\copy"])
            print(f"\n{rows:,} rows x 8 columns")
            print("| tool | wall, median | runs | peak RSS | ÷ \\copy |")
            print("|---|---|---|---|---|")
            for tool, runs in results.items():
                median = statistics.median(t for t, _ in runs)
                peak = max(r for _, r in runs)
                print(f"| {tool} | {median:.2f} s | {', '.join(f'{t:.2f}' for t, _ in runs)} | {peak:.1f} MB | "
                      f"{median / copy_median:.2f} |")
            dray_median = statistics.median(t for t, _ in results["dray"])
            dray_peak = max(r for _, r in results["dray"])
            if dray_median > 1.5 * copy_median or dray_peak >= 64:
                print(f"target missed: dray {dray_median / copy_median:.2f}x of \\copy (1.5x), {dray_peak:.1f} MB (64 MB)")
                missed = True
            os.remove(csv)
    finally:
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            as_postgres([BIN + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
