# Shared by the benchmark scripts (sourced): a release build of dray, the platform emulator
# serving a generated resource BIG on a free loopback port, a job that loads it, and the
# figures of dray's run report. Loopback only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=${ROWS:-2000000} # about 100 bytes a row: 2,000,000 rows is about 180 MB of answer
cache=${DRAY_EMULATOR_CACHE:-${TMPDIR:-/tmp}/dray-emulator-cache}
work=$(mktemp -d "${TMPDIR:-/tmp}/dray-bench.XXXXXX")
emulator_pid=
dray_pid=

cleanup() {
  if [ -n "$dray_pid" ]; then kill -9 "$dray_pid" 2>/dev/null || true; fi
  if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Builds dray in release mode; sets $dray.
build_release() {
  (cd "$root" && swift build -c release --product dray >&2)
  dray="$root/.build/release/dray"
}

# Renders BIG's answer once (cached across runs); sets $answer and $size (bytes).
render_answer() {
  answer=$(python3 -c "import sys; sys.path.insert(0, '$root/Emulator'); import generated; print(generated.answer_file('$cache', $rows))")
  size=$(stat -c %s "$answer")
}

# Starts the emulator with extra arguments; sets $url (ends with /).
start_emulator() {
  python3 "$root/Emulator/emulator.py" --port 0 --generate "BIG:$rows" --cache-dir "$cache" "$@" \
    >"$work/emulator.log" 2>&1 </dev/null &
  emulator_pid=$!
  for _ in $(seq 100); do grep -q listening "$work/emulator.log" && break; sleep 0.1; done
  url=$(head -1 "$work/emulator.log" | sed 's/.* //')
  [ -n "$url" ] || { cat "$work/emulator.log" >&2; exit 1; }
}

export FMP_USER=demo FMP_PASSWORD=demo-password

# Writes a job loading BIG into <folder>/data/db.sqlite; prints the manifest's path.
write_job() {
  mkdir -p "$1"
  cat >"$1/job.yaml" <<YAML
version: 1
job: bench
platform:
  host: $url
  environment: DocumentationExampleEnv
  project: DocumentationExampleProj
  compression: ${COMPRESSION:-false} # gzip on the wire; off so that dray and curl move the same bytes
auth: { username: "\${FMP_USER}", password: "\${FMP_PASSWORD}" }
database: { path: data/db.sqlite }
download: { resume: true }
retry: { count: 3, interval: 1s }
steps:
  - id: schemes
    schemes: {}
  - id: big
    table_stream: { resource: BIG }
YAML
  echo "$1/job.yaml"
}

# Prints a figure of step `big` from the newest report in a job folder:
#   bytes | attempt-seconds (the last ok attempt's transfer) | attempt-bytes | run-seconds
report_figure() {
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
folder, what = sys.argv[1], sys.argv[2]
report = json.load(open(sorted(glob.glob(os.path.join(folder, ".dray/reports/*.json")))[-1]))
big = next(s for s in report["steps"] if s["id"] == "big")
own = [a for a in big["attempts"] if "call" not in a]
ok = [a for a in own if a["outcome"] == "ok"][-1]
print({"bytes": big["bytes"], "attempt-seconds": ok["duration_seconds"],
       "attempt-bytes": ok.get("bytes", 0), "run-seconds": report["duration_seconds"]}[what])
PY
}

# The rows of BIG in a job folder's database, hashed.
table_checksum() {
  sqlite3 "$1/data/db.sqlite" "SELECT * FROM BIG__output_table ORDER BY id" | sha256sum | cut -d' ' -f1
}

# Median of numbers given as arguments.
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
