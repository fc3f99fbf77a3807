#!/usr/bin/env bash
# Runs examples/rest-incremental.yaml against a fresh REST test server on a free port, changes
# the server's orders (2 inserted, 2 updated to paid with a new field, coupon, 1 deleted), runs it again,
# shows the table, and stops the server:
#
#   examples/rest-incremental.sh [SERVER OPTIONS...]
#
# Options go to Emulator/rest_server.py. Files land in examples/out/rest-incremental/.
# `examples/run.sh rest-incremental` comes here too.
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
start_server "REST test server" rest_server.py --orders 12 "$@"

export API_URL=$server_url
"$dray" run --fresh "$here/rest-incremental.yaml"
echo
echo "changing the orders on the server: 2 inserted, 2 updated (both paid, both gain a coupon), 1 deleted"
curl -sS -X POST -H 'Content-Type: application/json' \
  --data '{"insert": 2, "update": [3, 7], "set": {"status": "paid", "coupon": "WINTER"}, "delete": [5]}' \
  "${server_url}admin/orders"
"$dray" plan "$here/rest-incremental.yaml" | grep -E '^ +sends'
"$dray" run "$here/rest-incremental.yaml"
echo
echo "orders (dray query):"
"$dray" query "$here/out/rest-incremental/shop.sqlite" "SELECT count(*) AS orders, sum(status = 'paid') AS paid, max(id) AS last_id, group_concat(coupon) AS coupons FROM orders"
