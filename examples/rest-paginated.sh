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

# shellcheck source=../scripts/server.sh
. "$repo/scripts/server.sh"
start_server "REST test server" rest_server.py --items 95 --token demo-token "$@"

export API_URL=$server_url API_TOKEN=demo-token
status=0
"$dray" run "$here/rest-paginated.yaml" || status=$?
if [ "$status" -eq 0 ]; then
  echo
  echo "items by tag (dray query):"
  "$dray" query "$here/out/rest-paginated/rest.sqlite" "SELECT tag, n, avg_price FROM items_by_tag"
fi
exit "$status"
