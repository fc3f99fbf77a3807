#!/usr/bin/env python3
"""Measures SQLite settings for a load: the time of `INSERT INTO new SELECT * FROM src.t WHERE 1`
(the floor of Benchmarks/load-floors.py: the inserts alone) under each setting, and how long a
reader of the table loaded before ("yesterday's table") is blocked while the load runs.

    Benchmarks/sqlite-settings.py [--rows 1000000] [--rounds 5] [--work DIR]

The source is N rows x 8 mixed-type columns (integers, reals, short and long text), made once.
Each round runs every setting once, the order reversed every other round; for each setting a
fresh database file holds yesterday's table (10,000 rows) and a reader (its own connection,
busy timeout 60 s) runs `SELECT count(*), sum(a) FROM yesterday` back to back during the load:
"reader blocked" is its longest single query, which is the time it waited for a lock.
Prints medians; the figures quoted in docs/store.md, "SQLite settings", come from here.
"""

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import threading
import time

SETTINGS = {
    "WAL, 32 KiB, NORMAL (dray)": "PRAGMA page_size=32768; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "WAL, 32 KiB, NORMAL, cache 8 MB": "PRAGMA page_size=32768; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-8192;",
    "WAL, 64 KiB, NORMAL": "PRAGMA page_size=65536; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "WAL, 32 KiB, OFF": "PRAGMA page_size=32768; PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;",
    "WAL, 32 KiB, NORMAL, no checkpoint at commit": "PRAGMA page_size=32768; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;",
    "rollback (DELETE), 32 KiB, NORMAL": "PRAGMA page_size=32768; PRAGMA journal_mode=DELETE; PRAGMA synchronous=NORMAL;",
    "rollback (DELETE), 4 KiB, FULL (defaults)": "",
}


def make_source(path, rows):
    if os.path.exists(path):
        return
    db = sqlite3.connect(path + ".part")
    db.executescript(f"""
        PRAGMA page_size=32768; PRAGMA journal_mode=OFF;
        CREATE TABLE t (id, a, b, c, d, e, f, g);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
        INSERT INTO t SELECT i, i * 7 % 100003, (i % 1000) / 7.0, 'name ' || i, printf('%08x', i * 2654435761 % 4294967296),
          (i % 97) * 1.5, i % 2, 'a longer text value of some forty characters ' || (i % 13) FROM n;
    """)
    db.close()
    os.rename(path + ".part", path)


def one(settings, source, folder):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "db.sqlite")
    subprocess.run(["sqlite3", path, f"{settings} CREATE TABLE yesterday (a); "
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) "
                    "INSERT INTO yesterday SELECT i FROM n;"], check=True, capture_output=True)
    stop = threading.Event()
    longest = [0.0]

    def reader():
        db = sqlite3.connect(path, timeout=60)
        while not stop.is_set():
            start = time.perf_counter()
            db.execute("SELECT count(*), sum(a) FROM yesterday").fetchall()
            longest[0] = max(longest[0], time.perf_counter() - start)
            time.sleep(0.002)
        db.close()

    thread = threading.Thread(target=reader)
    thread.start()
    # The settings are given again: journal_mode and page size persist, synchronous and cache are per connection.
    script = (f"{settings} ATTACH '{source}' AS src; CREATE TABLE today (id, a, b, c, d, e, f, g); "
              "BEGIN; INSERT INTO today SELECT * FROM src.t WHERE 1; COMMIT;")
    start = time.perf_counter()
    subprocess.run(["sqlite3", path, script], check=True, capture_output=True)
    wall = time.perf_counter() - start
    stop.set()
    thread.join()
    return wall, longest[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", help="comma-separated setting numbers (1-based) to run")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "dray-sqlite-settings"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    source = os.path.join(args.work, f"source-{args.rows}.sqlite")
    make_source(source, args.rows)
    names = list(SETTINGS)
    if args.only:
        names = [names[int(i) - 1] for i in args.only.split(",")]
    results = {name: [] for name in names}
    print(f"{args.rows:,} rows, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f} at start", flush=True)
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            results[name].append(one(SETTINGS[name], source, os.path.join(args.work, "run")))
    print("| setting | load, median | runs | reader blocked, median (longest) |")
    print("|---|---|---|---|")
    for name in names:
        walls = [w for w, _ in results[name]]
        blocked = [b for _, b in results[name]]
        print(f"| {name} | {statistics.median(walls):.2f} s | {', '.join(f'{w:.2f}' for w in walls)} | "
              f"{statistics.median(blocked) * 1000:.0f} ms ({max(blocked) * 1000:.0f} ms) |")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
