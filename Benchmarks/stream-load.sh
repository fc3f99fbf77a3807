#!/usr/bin/env bash
# Loading while downloading: dray's wall time beside `curl` downloading the same answer from
# a server throttled to about RATE bytes a second, in one run.
#
# Serves a generated answer of ROWS rows x 8 columns (default 1,000,000: about 94 MB) from
# the platform emulator, every body sent at RATE bytes a second (default 12,000,000: the
# emulator's `trickle`, uncompressed). Each round, in turn:
#   curl:        curl -o FILE of the answer (POST with the token, as dray sends it)
#   dray:        dray run of a job that downloads and loads it (table_stream: the load reads
#                the part as it arrives)
#   sequential:  the same step as the only member of a parallel group, whose load follows
#                its download (what every table_stream did before)
#   gzip:        the first job with platform.compression on: the emulator sends the answer
#                gzip-compressed, at the same RATE of bytes on the wire
# Wall time and peak RSS of each come from /usr/bin/time. Each dray figure is compared with
# the mean of the curl rounds before and after it. Prints each round, the medians, the
# median of the rounds' ratios, and checks that both jobs loaded the same rows.
# Goals: dray within 1.05x of curl; with gzip, faster than curl; peak RSS under 64 MB. CHECK=1
# exits 1 when one is missed.
#
#   Benchmarks/stream-load.sh                   # release build, 5 rounds
#   ROWS=200000 ROUNDS=3 Benchmarks/stream-load.sh
source "$(dirname "$0")/common.sh"
rows=${ROWS:-1000000}
rate=${RATE:-12000000}
rounds=${ROUNDS:-5}

if [ -n "${DRAY_BINARY:-}" ]; then dray=$DRAY_BINARY; else build_release; fi
render_answer
start_emulator --fault "{\"path\": \"/api/v1/rpc/BIG/\", \"trickle\": $rate}"
token=$(curl -sS --data "environment=DocumentationExampleEnv&project=DocumentationExampleProj&username=$FMP_USER&password=$FMP_PASSWORD" \
  "${url}api/v1/auth/jwt/obtain/" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
streamed=$(COMPRESSION=false write_job "$work/streamed")
sequential=$(COMPRESSION=false write_job "$work/sequential")
compressed=$(COMPRESSION=true write_job "$work/gzip")
# The same step as the only member of a parallel group: its load follows its download.
python3 - "$sequential" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read().replace(
    "  - id: big\n    table_stream: { resource: BIG }\n",
    "  - id: group\n    parallel:\n      max: 1\n      steps:\n        - id: big\n          table_stream: { resource: BIG }\n")
open(path, "w").write(text)
PY

echo "answer: $size bytes ($rows rows) from ${url}api/v1/rpc/BIG/, sent at $rate bytes/s"

# Prints "<seconds> <peak RSS in KB>" of a command, from /usr/bin/time.
timed() {
  /usr/bin/time -f '%e %M' -o "$work/time.out" "$@" >"$work/command.out" 2>&1 || { cat "$work/command.out" >&2; exit 1; }
  cat "$work/time.out"
}

curl_round() {
  local figures
  figures=$(timed curl -sS -o "$work/curl.out" -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept-Encoding: identity' --data-binary '{}' "${url}api/v1/rpc/BIG/")
  [ "$(stat -c %s "$work/curl.out")" -eq "$size" ] || { echo "curl fetched $(stat -c %s "$work/curl.out") bytes, not $size" >&2; exit 1; }
  rm -f "$work/curl.out"
  echo "${figures% *}"
}

# One dray run of a job from a fresh folder; prints "<seconds> <peak RSS in KB>".
dray_round() {
  local folder
  folder=$(dirname "$1")
  rm -rf "$folder/data" "$folder/.dray"
  timed "$dray" run "$1" --quiet
  sync "$folder/data/db.sqlite"
}

printf '%-6s %10s %10s %12s %8s %10s %8s %8s %9s\n' round "curl s" "dray s" "sequential s" ratio "dray MB" "seq/curl" "gzip s" "gzip/curl"
curl_times=("$(curl_round)")
dray_times=()
sequential_times=()
gzip_times=()
ratios=()
sequential_ratios=()
gzip_ratios=()
peaks=()
for round in $(seq "$rounds"); do
  read -r seconds peak < <(dray_round "$streamed")
  dray_times+=("$seconds")
  peaks+=("$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')")
  read -r seconds _ < <(dray_round "$sequential")
  sequential_times+=("$seconds")
  read -r seconds peak < <(dray_round "$compressed")
  gzip_times+=("$seconds")
  peaks+=("$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')")
  curl_times+=("$(curl_round)")
  mean=$(awk -v a="${curl_times[$((round - 1))]}" -v b="${curl_times[$round]}" 'BEGIN { print (a + b) / 2 }')
  ratios+=("$(awk -v d="${dray_times[-1]}" -v c="$mean" 'BEGIN { printf "%.3f", d / c }')")
  sequential_ratios+=("$(awk -v d="${sequential_times[-1]}" -v c="$mean" 'BEGIN { printf "%.3f", d / c }')")
  gzip_ratios+=("$(awk -v d="${gzip_times[-1]}" -v c="$mean" 'BEGIN { printf "%.3f", d / c }')")
  printf '%-6s %10s %10s %12s %8s %10s %8s %8s %9s\n' "$round" "$mean" "${dray_times[-1]}" "${sequential_times[-1]}" "${ratios[-1]}" \
    "${peaks[-2]}" "${sequential_ratios[-1]}" "${gzip_times[-1]}" "${gzip_ratios[-1]}"
done

for job in sequential gzip; do
  [ "$(table_checksum "$work/streamed")" = "$(table_checksum "$work/$job")" ] || { echo "the $job job loaded other rows" >&2; exit 1; }
done
ratio=$(median "${ratios[@]}")
peak=$(median "${peaks[@]}")
echo "median wall time: curl $(median "${curl_times[@]}") s (${#curl_times[@]} runs), dray $(median "${dray_times[@]}") s," \
  "sequential $(median "${sequential_times[@]}") s (${#dray_times[@]} runs each)"
gzip_ratio=$(median "${gzip_ratios[@]}")
largest=$(printf '%s\n' "${peaks[@]}" | sort -g | tail -1)
echo "gzip: median $(median "${gzip_times[@]}") s"
echo "ratio dray/curl: $ratio (goal: at most 1.05); sequential/curl: $(median "${sequential_ratios[@]}"); gzip/curl: $gzip_ratio (goal: under 1)"
echo "dray peak RSS: median $peak MB, largest $largest MB, gzip runs included (goal: under 64 MB)"
echo "rows: the same in the three jobs ($rows)"
if [ "${CHECK:-0}" = 1 ] && awk -v r="$ratio" -v g="$gzip_ratio" -v p="$largest" 'BEGIN { exit !(r > 1.05 || g >= 1 || p >= 64) }'; then exit 1; fi
