#!/usr/bin/env bash
# Runs the example job from nothing: installs missing packages, builds, starts the platform
# emulator on a free port, runs jobs/iso-reference.yaml, shows a few rows, stops the emulator.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
swift build --product dray
dray=.build/debug/dray

log=$(mktemp)
python3 Emulator/emulator.py --port 0 >"$log" 2>&1 &
emulator=$!
trap 'kill $emulator 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 50); do grep -q listening "$log" && break; sleep 0.1; done
url=$(head -1 "$log" | sed 's/.* //')
echo "platform emulator at $url"

export FMP_HOST=$url FMP_USER=demo FMP_PASSWORD=demo-password
"$dray" run jobs/iso-reference.yaml

echo
echo "rows loaded:"
for t in COUNTRIES CURRENCIES LANGUAGES SUBDIVISIONS; do
  printf '  %-14s %s\n' "$t" "$(sqlite3 jobs/data/iso.sqlite "SELECT count(*) FROM ${t}__output_table")"
done
echo
echo "a few countries (dray query):"
"$dray" query jobs/data/iso.sqlite \
  "SELECT alpha_2, name FROM $("$dray" tables jobs/data/iso.sqlite --resource COUNTRIES | cut -f1) ORDER BY alpha_2 LIMIT 3"
