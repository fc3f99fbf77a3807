#!/usr/bin/env bash
# Runs the example job from nothing: installs the missing packages it needs (not the
# tests': scripts/install-deps.sh demo), builds, starts the platform
# emulator on a free port, runs jobs/iso-reference.yaml, shows a few rows, stops the emulator.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh demo
swift build --product dray
dray=.build/debug/dray

repo=$PWD
# shellcheck source=server.sh
. scripts/server.sh
start_server "platform emulator" emulator.py

export FMP_HOST=$server_url FMP_USER=demo FMP_PASSWORD=demo-password
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
