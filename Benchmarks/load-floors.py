#!/usr/bin/env python3
"""Loads a generated resource of N rows x 8 mixed-type columns with `dray run` into SQLite and
into PostgreSQL, each beside the floor its database allows, in one run, and prints wall time,
peak memory and the ratios.

    Benchmarks/load-floors.py [--rows 1000000,5000000] [--rounds 5] [--only sqlite|postgres]
                              [--baseline OTHER_DRAY]

The platform emulator serves the answer from a file rendered once (Emulator/generated.py,
cached under --work), so it is never the bottleneck; the job asks for it uncompressed
(`compression: false`: on loopback gzip only costs, and the emulator compresses in
Python). It starts its own PostgreSQL 15 server (initdb into a temporary folder as the
`postgres` user, 127.0.0.1 on a free port, fsync off for both tools alike). For each row
count the pairs run in turn, round after round (the order alternates):

    dray -> SQLite      `dray run` of a job with one table_stream step (release build) into a
                        fresh SQLite file: sign in, download to a file, load in one transaction
    SQLite floor        `INSERT INTO t SELECT * FROM src.t WHERE 1` of the same rows between
                        two database files (the inserts alone: no network, no parsing; WHERE 1
                        keeps SQLite from copying pages instead of inserting), with dray's
                        settings (32 KiB pages, WAL, synchronous=NORMAL) and dray's table
                        definition; and, for comparison only, the same with SQLite's
                        defaults (4 KiB pages, rollback journal, synchronous=FULL)
    dray -> PostgreSQL  `dray run --fresh` of the same job with database.url: one COPY
    \\copy              `psql -c "\\copy t FROM FILE (FORMAT csv, HEADER)"` of the same rows
                        from a local CSV file into a table of the same column types

Wall time, peak resident memory and the tool's own CPU time (user + system) come from GNU
time (`/usr/bin/time -v`); beside each run the script also reads, from /proc, the CPU the
emulator spent meanwhile (serving dray's download: the floors pay none) and the CPU of the
PostgreSQL server (the postmaster and its children, live and reaped: the backend doing the
COPY, the checkpointer, the WAL writer). On a shared machine the CPU figures are the steadier
ones: wall time there measures the other builders too. Targets (issue
31): dray at most 1.0x `psql \\copy` on PostgreSQL, at most 1.2x the `INSERT ... SELECT` floor
with dray's settings on SQLite, peak memory under 64 MB on both. Exit code 1 when a target
is missed. DRAY_BINARY overrides the release build. The machine's 1-minute load average is
printed beside every run and every table (`uptime`): on a shared machine both sides of a
pair see the same load only because the order alternates, and the medians say how loaded.

With `--baseline OTHER_DRAY` (another build of dray, e.g. the commit before a change), that
build runs the same jobs in every round beside this one, in alternating order, and the
report adds the median of the rounds' ratios (this build ÷ the baseline): a change's cost
measured in paired runs on the same machine state.

The final run for issue 31 (estimated from this session's runs: about 10 minutes on a quiet
machine, of which about 3 for rendering the 5M answer and CSV once under --work; 2 rounds at
100,000 rows took 37 s at load average 19, and a loaded machine stretches everything 5 to 10x):

    Benchmarks/load-floors.py --rows 1000000,5000000 --rounds 5
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = "/usr/lib/postgresql/15/bin"


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peers = load("load_peers", "load-peers.py")  # emulator, CSV, timing and build helpers
pgcopy = load("postgres_copy", "postgres-copy.py")  # the PostgreSQL server helpers

# The page size dray gives a database it creates (Database.newPageSize), for the floor too.
PAGE_SIZE = 32768
PG_COLUMNS = ", ".join(f"{name} {'bigint' if kind == 'BIGINT' else 'double precision' if kind == 'DOUBLE' else 'text'}"
                       for name, kind, _ in peers.generated.COLUMNS)


def run_timed(command):
    """Runs `command` under GNU time; returns (wall seconds, peak RSS in KiB, CPU seconds: user + system)."""
    result = subprocess.run(["/usr/bin/time", "-v"] + command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}\n{result.stdout}\n{result.stderr[-3000:]}")
    wall = rss = None
    cpu = 0.0
    for line in result.stderr.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            clock = line.rsplit(": ", 1)[1].split(":")
            wall = sum(float(part) * 60 ** i for i, part in enumerate(reversed(clock)))
        elif line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(": ", 1)[1])
        elif line.startswith("User time (seconds)") or line.startswith("System time (seconds)"):
            cpu += float(line.rsplit(": ", 1)[1])
    return wall, rss, cpu


TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid, children=()):
    """CPU seconds (user + system) of process `pid`, with those of its reaped children, plus
    the CPU of the live processes whose parent it is when `children` is true."""
    total = 0
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15])
    except OSError:
        return 0.0
    if children:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                total += int(fields[11]) + int(fields[12])
    return total / TICK


def start_postgres(folder):
    os.chmod(folder, 0o755)
    if os.getuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = os.path.join(folder, "data")
    port = pgcopy.free_port()
    pgcopy.as_postgres([BIN + "/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                        "--locale=C.UTF-8", "--no-sync"])
    pgcopy.as_postgres([BIN + "/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-o",
                        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
    return data, f"postgresql://postgres@127.0.0.1:{port}/postgres"


def measure(size, url, pg_url, work, binary, rounds, only, baseline=None, emulator=None, postmaster=None):
    resource = f"GEN{size}"
    folder = os.path.join(work, f"floors-{size}")
    os.makedirs(folder, exist_ok=True)
    peers.log(f"{size} rows: rendering the answer and the CSV (once, cached)...")
    subprocess.run(["curl", "-sf", "-o", "/dev/null", "-X", "POST", "-H", f"Authorization: Bearer {peers.token(url)}",
                    f"{url}api/v1/rpc/{resource}/"], check=True)
    csv_path = os.path.join(work, f"{resource}.csv")
    peers.write_csv(csv_path, size)
    jobs = {}
    for target, database in [("sqlite", "{ path: run/dray.sqlite }"), ("postgres", f'{{ url: "{pg_url}" }}')]:
        jobs[target] = os.path.join(folder, f"{target}.yaml")
        with open(jobs[target], "w") as f:
            f.write(f"""version: 1
job: floors-{size}
platform: {{ host: "{url}", environment: DocumentationExampleEnv, project: DocumentationExampleProj, compression: false }}
auth: {{ username: demo, password: demo-password }}
database: {database}
download: {{ path: run/downloads }}
report: {{ path: run/report.json }}
steps:
  - id: load
    table_stream: {{ resource: {resource} }}
""")
    table = f"{resource}__output_table"
    psql = [BIN + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", pg_url]

    def pg_count(name):
        return int(subprocess.run(psql + ["-At", "-c", f'SELECT count(*) FROM "{name}"'], check=True,
                                  capture_output=True, text=True).stdout)

    def dray_sqlite(binary=binary):
        run = peers.fresh(os.path.join(folder, "run"))
        result = run_timed([binary, "run", jobs["sqlite"], "--quiet"])
        assert peers.count_rows(os.path.join(run, "dray.sqlite"), table) == size
        return result

    source = os.path.join(folder, "source.sqlite")

    def sqlite_floor(settings):
        if not os.path.exists(source):
            # dray's own table is the source: the same rows, values and column definitions.
            dray_sqlite()
            shutil.copy(os.path.join(folder, "run", "dray.sqlite"), source)
        run = peers.fresh(os.path.join(folder, "floor"))
        database = os.path.join(run, "floor.sqlite")
        ddl = subprocess.run(["sqlite3", source, f"SELECT sql FROM sqlite_master WHERE name = '{table}'"],
                             check=True, capture_output=True, text=True).stdout.strip()
        script = (f"{settings} ATTACH '{source}' AS src; {ddl}; "
                  f'BEGIN; INSERT INTO "{table}" SELECT * FROM src."{table}" WHERE 1; COMMIT;')
        result = run_timed(["sqlite3", database, script])
        assert peers.count_rows(database, table) == size
        return result

    def dray_settings_floor():
        return sqlite_floor(f"PRAGMA page_size={PAGE_SIZE}; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")

    def default_settings_floor():
        return sqlite_floor("")

    def dray_postgres(binary=binary):
        peers.fresh(os.path.join(folder, "run"))
        result = run_timed([binary, "run", jobs["postgres"], "--quiet", "--fresh"])
        assert pg_count(table) == size
        return result

    def copy():
        subprocess.run(psql + ["-c", f"DROP TABLE IF EXISTS floor; CREATE TABLE floor ({PG_COLUMNS}); CHECKPOINT"],
                       check=True)
        result = run_timed(psql + ["-c", f"\\copy floor FROM '{csv_path}' (FORMAT csv, HEADER)"])
        assert pg_count("floor") == size
        return result

    pairs = []
    if only in (None, "sqlite"):
        pairs.append(("SQLite", ("dray", dray_sqlite), ("floor: INSERT ... SELECT", dray_settings_floor),
                      ("the same, SQLite's defaults", default_settings_floor)))
    if only in (None, "postgres"):
        pairs.append(("PostgreSQL", ("dray", dray_postgres), ("floor: psql \\copy", copy)))
    if baseline:
        # The baseline build last among the tools: with the order reversed every other
        # round, it runs right before and right after this build in turn.
        pairs = [(database, *tools, ("baseline dray", lambda run=tools[0][1]: run(baseline)))
                 for database, *tools in pairs]
    results = []
    for database, *tools in pairs:
        runs = {name: [] for name, _ in tools}
        for r in range(rounds):
            for name, tool in (tools if r % 2 == 0 else tools[::-1]):
                served, server = process_cpu(emulator) if emulator else 0.0, process_cpu(postmaster, True) if postmaster else 0.0
                wall, rss, cpu = tool()
                served = (process_cpu(emulator) if emulator else 0.0) - served
                server = (process_cpu(postmaster, True) if postmaster else 0.0) - server
                runs[name].append(Run(wall, rss, os.getloadavg()[0], cpu, served, server))
                peers.log(f"  {database} round {r + 1}: {name:26} {wall:7.2f} s {rss / 1024:7.1f} MB  CPU {cpu:5.2f} s"
                          f"  emulator {served:4.2f} s  server {server:4.2f} s  load {os.getloadavg()[0]:.1f}")
        results.append((database, runs))
    return results


class Run:
    """One timed run: wall seconds, peak RSS (KiB), the load average after it, the tool's own
    CPU seconds (user + system, GNU time), and the CPU seconds the emulator and the
    PostgreSQL server spent meanwhile (/proc: the postmaster, its reaped and live children)."""

    def __init__(self, wall, rss, load, cpu, emulator, server):
        self.wall, self.rss, self.load, self.cpu, self.emulator, self.server = wall, rss, load, cpu, emulator, server

    def __iter__(self):
        return iter((self.wall, self.rss, self.load))


def report(size, results):
    ok = True
    print(f"\n{size:,} rows x 8 columns")
    print("| database | tool | wall, median | runs | peak RSS | ÷ floor | CPU, median | emulator CPU | server CPU | load average, median |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for database, runs in results:
        # dray, its floor (the target), then any floor shown for comparison only.
        (dray_name, dray), (floor_name, floor) = list(runs.items())[:2]
        floor_median = statistics.median(w for w, _, _ in floor)
        for name, tool_runs in runs.items():
            median = statistics.median(w for w, _, _ in tool_runs)
            peak = max(m for _, m, _ in tool_runs) / 1024
            walls = ", ".join(f"{w:.2f}" for w, _, _ in tool_runs)
            load = statistics.median(a for _, _, a in tool_runs)
            cpu = statistics.median(run.cpu for run in tool_runs)
            served = statistics.median(run.emulator for run in tool_runs)
            server = statistics.median(run.server for run in tool_runs)
            print(f"| {database} | {name} | {median:.2f} s | {walls} | {peak:.1f} MB | {median / floor_median:.2f} "
                  f"| {cpu:.2f} s | {served:.2f} s | {server:.2f} s | {load:.1f} |")
        # Paired: each round's dray ÷ the same round's floor (the two ran back to back).
        paired = [w / f for (w, _, _), (f, _, _) in zip(dray, floor)]
        print(f"  dray ÷ floor, median of {len(paired)} paired rounds: {statistics.median(paired):.2f} "
              f"(rounds: {', '.join(f'{r:.2f}' for r in paired)})")
        if "baseline dray" in runs:
            paired = [w / b for (w, _, _), (b, _, _) in zip(dray, runs["baseline dray"])]
            print(f"  this build ÷ baseline, median of {len(paired)} paired rounds: {statistics.median(paired):.3f} "
                  f"(rounds: {', '.join(f'{r:.3f}' for r in paired)})")
        ratio = statistics.median(w for w, _, _ in dray) / floor_median
        peak = max(m for _, m, _ in dray) / 1024
        goal = 1.0 if database == "PostgreSQL" else 1.2
        for label, met, figure in [(f"{database}: dray at most {goal}x its floor", ratio <= goal, f"{ratio:.2f}x"),
                                   (f"{database}: dray under 64 MB", peak < 64, f"{peak:.1f} MB")]:
            print(f"  {'ok  ' if met else 'MISS'} {label}: {figure}")
            ok = ok and met
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1000000,5000000", help="comma-separated row counts")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each tool per row count")
    parser.add_argument("--only", choices=["sqlite", "postgres"], help="one database only")
    parser.add_argument("--baseline", help="another dray binary, run beside this one in every round")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "dray-bench"),
                        help="scratch folder: rendered answers, CSV files, databases")
    args = parser.parse_args()
    sizes = [int(s) for s in args.rows.split(",")]
    os.makedirs(args.work, exist_ok=True)
    binary = peers.dray_binary()
    emulator, url = peers.start_emulator(sizes, os.path.join(args.work, "cache"))
    server = tempfile.mkdtemp(prefix="dray-floors-pg-")
    data = None
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    ok = True
    try:
        data, pg_url = start_postgres(server)
        for size in sizes:
            postmaster = int(open(os.path.join(data, "postmaster.pid")).readline())
            ok = report(size, measure(size, url, pg_url, args.work, binary, args.rounds, args.only, args.baseline,
                                      emulator.pid, postmaster)) and ok
    finally:
        emulator.stdin.close()
        emulator.wait(timeout=10)
        if data and os.path.exists(os.path.join(data, "postmaster.pid")):
            pgcopy.as_postgres([BIN + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(server, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
