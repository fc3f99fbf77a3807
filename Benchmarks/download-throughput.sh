#!/usr/bin/env bash
# Download throughput of dray beside `curl -o` of the same URL, over loopback, in one run.
#
# Serves a generated answer of ROWS rows (default 2,000,000: about 180 MB) from the platform
# emulator and fetches it ROUNDS times (default 5) with dray and ROUNDS + 1 times with curl:
#   curl:  curl -o FILE -w '%{time_total}' (POST with the token, as dray sends it)
#   dray:  dray run of a job that streams the answer to its .part file and loads it; the
#          transfer's time is the download attempt's duration in dray's run report (the
#          load into SQLite comes after and is not counted).
# Each dray round runs between two curl rounds and is compared with their mean. Prints
# each round, the medians in MB/s, and the median of the rounds' dray/curl ratios (goal:
# at least 0.9).
# With CHECK=1 it exits 1 when the ratio is below the goal.
#
#   Benchmarks/download-throughput.sh            # release build, 5 rounds
#   ROWS=500000 ROUNDS=3 Benchmarks/download-throughput.sh
source "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-5}

build_release
render_answer
start_emulator
token=$(curl -sS --data "environment=DocumentationExampleEnv&project=DocumentationExampleProj&username=$FMP_USER&password=$FMP_PASSWORD" \
  "${url}api/v1/auth/jwt/obtain/" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
job=$(write_job "$work/job")

echo "answer: $size bytes ($rows rows) from ${url}api/v1/rpc/BIG/"

# One curl -o of the answer; prints its MB/s.
curl_rate() {
  local seconds bytes
  read -r seconds bytes < <(curl -sS -o "$work/curl.out" -w '%{time_total} %{size_download}\n' -X POST \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'Accept-Encoding: identity' \
    --data-binary '{}' "${url}api/v1/rpc/BIG/")
  [ "$bytes" -eq "$size" ] || { echo "curl fetched $bytes bytes, not $size" >&2; exit 1; }
  rm -f "$work/curl.out"
  awk -v b="$bytes" -v s="$seconds" 'BEGIN { printf "%.1f", b / s / 1e6 }'
}

# One dray run of the job; prints the download attempt's MB/s from the report.
dray_rate() {
  rm -rf "$work/job/data" "$work/job/.dray"
  "$dray" run "$job" --quiet >"$work/dray.out" 2>&1 || { cat "$work/dray.out" >&2; exit 1; }
  local bytes seconds
  bytes=$(report_figure "$work/job" attempt-bytes)
  seconds=$(report_figure "$work/job" attempt-seconds)
  [ "$bytes" -eq "$size" ] || { echo "dray fetched $bytes bytes in one attempt, not $size" >&2; exit 1; }
  # Write the loaded database out now, so that its pages do not go to disk during the next download.
  sync "$work/job/data/db.sqlite"
  awk -v b="$bytes" -v s="$seconds" 'BEGIN { printf "%.1f", b / s / 1e6 }'
}

# Each dray round sits between two curl rounds; its ratio is to their mean, so that a
# machine whose load drifts (a shared CI runner) hurts neither side more.
printf '%-6s %14s %14s %8s\n' round "curl MB/s" "dray MB/s" ratio
curl_rates=("$(curl_rate)")
dray_rates=()
ratios=()
for round in $(seq "$rounds"); do
  dray_rates+=("$(dray_rate)")
  curl_rates+=("$(curl_rate)")
  before=${curl_rates[$((round - 1))]}
  after=${curl_rates[$round]}
  ratio=$(awk -v d="${dray_rates[-1]}" -v a="$before" -v b="$after" 'BEGIN { printf "%.2f", d / ((a + b) / 2) }')
  ratios+=("$ratio")
  printf '%-6s %6s..%-6s %14s %8s\n' "$round" "$before" "$after" "${dray_rates[-1]}" "$ratio"
done

curl_median=$(median "${curl_rates[@]}")
dray_median=$(median "${dray_rates[@]}")
ratio=$(median "${ratios[@]}")
echo "median: curl $curl_median MB/s (${#curl_rates[@]} runs), dray $dray_median MB/s (${#dray_rates[@]} runs)"
echo "ratio dray/curl: $ratio, the median of the rounds' ratios (goal: at least 0.9)"
if [ "${CHECK:-0}" = 1 ] && awk -v r="$ratio" 'BEGIN { exit !(r < 0.9) }'; then exit 1; fi
