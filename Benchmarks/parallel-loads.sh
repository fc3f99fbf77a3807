#!/usr/bin/env bash
# How much faster a `parallel` group of 4 loads finishes than the same 4 steps in sequence,
# against a platform emulator that adds 200 ms to every call.
#
#   Benchmarks/parallel-loads.sh [ROUNDS] [ROWS]
#
# Starts the emulator with --fault '{"delay": 0.2}' and four generated resources of ROWS rows
# (1000 by default), then runs two jobs ROUNDS times each (7 by default), alternating:
# `sequential` (schemes, then four table_stream steps) and `parallel` (schemes, then one
# parallel group of the same four steps, max 4). The time compared is the loads' part of
# each run, read from its report: the sum of the four steps' durations in sequence, the
# group's duration in parallel. Prints the medians and the speed-up, and exits 1 when the
# speed-up is under 2.5.
# Environment: DRAY_BINARY (default .build/release/dray, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
rows=${2:-1000}

dray=${DRAY_BINARY:-.build/release/dray}
[ -x "$dray" ] || swift build -c release --product dray
dray=$(cd "$(dirname "$dray")" && pwd)/$(basename "$dray")

work=$(mktemp -d)
log=$work/emulator.log
python3 Emulator/emulator.py --port 0 --fault '{"delay": 0.2}' \
  --generate LOAD1:"$rows" --generate LOAD2:"$rows" --generate LOAD3:"$rows" --generate LOAD4:"$rows" >"$log" 2>&1 &
emulator=$!
trap 'kill $emulator 2>/dev/null || true; wait $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.1; done
url=$(head -1 "$log" | sed 's/.* //')

header() {
  cat <<YAML
version: 1
job: $1
platform: { host: "$url", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
auth: { username: demo, password: demo-password }
database: { path: $1.sqlite }
retry: { count: 2, interval: 100ms }
report: { path: "reports/$1-{run_id}.json" }
steps:
  - id: schemes
    schemes: { resources: [LOAD1, LOAD2, LOAD3, LOAD4] }
YAML
}
{
  header sequential
  for i in 1 2 3 4; do printf '  - id: load%s\n    table_stream: { resource: LOAD%s }\n' "$i" "$i"; done
} >"$work/sequential.yaml"
{
  header parallel
  printf '  - id: loads\n    parallel:\n      max: 4\n      steps:\n'
  for i in 1 2 3 4; do printf '        - id: load%s\n          table_stream: { resource: LOAD%s }\n' "$i" "$i"; done
} >"$work/parallel.yaml"

echo "parallel group of 4 loads ($rows rows each), emulator delay 200 ms per call, $rounds rounds"
for round in $(seq "$rounds"); do
  for job in sequential parallel; do
    "$dray" run --fresh --quiet "$work/$job.yaml" >/dev/null 2>"$work/$job.err" || {
      cat "$work/$job.err" >&2
      exit 1
    }
  done
  printf '.'
done
echo

python3 - "$work/reports" <<'PY'
import glob, json, statistics, sys
folder = sys.argv[1]
def loads(job):
    out = []
    for path in sorted(glob.glob(f"{folder}/{job}-*.json")):
        steps = json.load(open(path))["steps"]
        out.append(sum(float(s["duration_seconds"]) for s in steps if s["id"] != "schemes"))
    return out
sequential, parallel = loads("sequential"), loads("parallel")
s, p = statistics.median(sequential), statistics.median(parallel)
print(f"  in sequence: {s:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in sequential)})")
print(f"  parallel:    {p:.3f} s  (runs: {', '.join(f'{x:.3f}' for x in parallel)})")
print(f"  speed-up:    {s / p:.2f}x (medians; at least 2.5x wanted)")
sys.exit(0 if s / p >= 2.5 else 1)
PY
