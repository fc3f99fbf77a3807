#!/usr/bin/env bash
# Runs examples/rest-paginated.yaml against a fresh REST test server on a free port, shows a
# few rows, and stops the server:
#
#   examples/rest-paginated.sh [SERVER OPTIONS...]
#   examples/rest-paginated.sh --rule '{"path": "/items", "query": {"page": "3"}, "status": 503, "times": 2}'
#
# Options go to Emulator/rest_server.py (--items N, --rule JSON: delays and canned statuses
# to watch retries). Files land in examples/out/rest-paginated/. `examples/run.sh rest-paginated`
# comes here too.
# Environment: DRAY_BINARY (default .build/debug/dray, built when missing), DRAY_REPO (the
# repository holding Emulator/, default this folder's parent).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=${DRAY_REPO:-$(dirname "$here")}

dray=${DRAY_BINARY:-$repo/.build/debug/dray}
if [ ! -x "$dray" ]; then
  (cd "$repo" && swift build --product dray)
fi

log=$(mktemp)
python3 "$repo/Emulator/rest_server.py" --port 0 --items 95 --token demo-token "$@" >"$log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT
for _ in $(seq 100); do
  grep -q listening "$log" && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q listening "$log"; then
  echo "the REST test server did not start:" >&2
  cat "$log" >&2
  exit 1
fi
url=$(head -1 "$log" | sed 's/.* //')
echo "REST test server at $url"

export API_URL=$url API_TOKEN=demo-token
status=0
"$dray" run "$here/rest-paginated.yaml" || status=$?
if [ "$status" -eq 0 ]; then
  echo
  echo "items by tag (dray query):"
  "$dray" query "$here/out/rest-paginated/rest.sqlite" "SELECT tag, n, avg_price FROM items_by_tag"
fi
exit "$status"
