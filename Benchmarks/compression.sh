#!/usr/bin/env bash
# Bytes on the wire with and without gzip, in one run, for the platform and for an http step;
# then a second http run against the unchanged resource (a conditional request).
#
#   platform: a table_stream of BIG (ROWS rows x 8 columns, default 1,000,000) with
#             platform.compression true, then false; each loads the same rows.
#   http:     an http step loading ITEMS items (default 200,000) of the REST test server in
#             one page, with its default Accept-Encoding (gzip), then with its own
#             `Accept-Encoding: identity`; then the gzip job again, unchanged: the server
#             answers 304 to If-None-Match and no row is rewritten.
# Prints, per run: bytes decoded, bytes on the wire (from dray's run report, checked against
# the server's log), their ratio, the run's seconds, and the loaded table's checksum.
#
#   Benchmarks/compression.sh                     # release build
#   ROWS=200000 ITEMS=50000 Benchmarks/compression.sh
#   DRAY=.build/debug/dray Benchmarks/compression.sh   # an existing build
ROWS=${ROWS:-1000000}
source "$(dirname "$0")/common.sh"
items=${ITEMS:-200000}

if [ -n "${DRAY:-}" ]; then dray=$(cd "$root" && realpath "$DRAY"); else build_release; fi
render_answer
start_emulator

# step's bytes, wire_bytes, unchanged; the run's seconds: from the newest report of a job folder.
figures() {
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
folder, step = sys.argv[1], sys.argv[2]
report = json.load(open(sorted(glob.glob(os.path.join(folder, ".dray/reports/*.json")))[-1]))
s = next(s for s in report["steps"] if s["id"] == step)
print(s["bytes"], s["wire_bytes"], "unchanged" if s.get("unchanged") else "loaded", report["duration_seconds"])
PY
}

row() { # label bytes wire state seconds checksum
  awk -v l="$1" -v b="$2" -v w="$3" -v st="$4" -v s="$5" -v c="$6" \
    'BEGIN { printf "%-28s %12d %12d %7s %9s %8.2f  %s\n", l, b, w, (b > 0 ? sprintf("%.2f", w / b) : "-"), st, s, substr(c, 1, 12) }'
}

printf '%-28s %12s %12s %7s %9s %8s  %s\n' run "bytes" "on the wire" "ratio" "" seconds "rows sha256"

# The platform: the same job with and without gzip.
for compression in true false; do
  folder="$work/platform-$compression"
  job=$(COMPRESSION=$compression write_job "$folder")
  "$dray" run "$job" --quiet >"$work/dray.out" 2>&1 || { cat "$work/dray.out" >&2; exit 1; }
  read -r bytes wire state seconds < <(figures "$folder" big)
  row "platform, compression: $compression" "$bytes" "$wire" "$state" "$seconds" "$(table_checksum "$folder")"
done

# The http step against the REST test server, its items in one page.
python3 "$root/Emulator/rest_server.py" --port 0 --items "$items" >"$work/rest.log" 2>&1 </dev/null &
rest_pid=$!
trap 'kill "$rest_pid" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do grep -q listening "$work/rest.log" && break; sleep 0.1; done
rest=$(head -1 "$work/rest.log" | sed 's/.* //')
curl -sS -X POST -H 'Content-Type: application/json' --data '[{"path": "/items", "validators": true}]' "${rest}admin/rules" >/dev/null

http_job() { # folder, extra YAML of the step
  mkdir -p "$1"
  cat >"$1/job.yaml" <<YAML
version: 1
job: bench-http
database: { path: data/db.sqlite }
steps:
  - id: items
    http:
      base_url: $rest
      path: items
      query: { per_page: $items }
      load: { table: items, records: /data }$2
YAML
  echo "$1/job.yaml"
}

items_checksum() { sqlite3 "$1/data/db.sqlite" "SELECT * FROM items ORDER BY id" | sha256sum | cut -d' ' -f1; }

# Body bytes the REST server sent to its last request (to check dray's wire_bytes).
server_bytes() {
  curl -sS "${rest}admin/requests" | python3 -c 'import json, sys; print(json.load(sys.stdin)[-1]["response_bytes"])'
}

for mode in gzip identity unchanged; do
  case $mode in
    gzip) folder="$work/http-gzip"; job=$(http_job "$folder" "") ;;
    identity) folder="$work/http-identity"; job=$(http_job "$folder" $'\n      headers: { Accept-Encoding: identity }') ;;
    unchanged) folder="$work/http-gzip"; job="$folder/job.yaml" ;;
  esac
  "$dray" run "$job" --quiet >"$work/dray.out" 2>&1 || { cat "$work/dray.out" >&2; exit 1; }
  read -r bytes wire state seconds < <(figures "$folder" items)
  sent=$(server_bytes)
  [ "$sent" -eq "$wire" ] || { echo "the server sent $sent bytes, dray reports $wire on the wire" >&2; exit 1; }
  row "http, $mode" "$bytes" "$wire" "$state" "$seconds" "$(items_checksum "$folder")"
done
