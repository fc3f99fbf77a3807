#!/usr/bin/env bash
# An `http` page loaded while it downloads: dray's wall time beside `curl -o` of the same
# URL, from the REST test server slowed to about RATE bytes a second, in one run.
#
# One page of ITEMS items (default 200,000: about 25 MB of JSON), GET
# /items?per_page=ITEMS, every body sent at RATE bytes a second (default 12,000,000: the
# server's `rate` rule), uncompressed (Accept-Encoding: identity for all three). Each round,
# in turn:
#   curl:        curl -o FILE of the page
#   dray:        dray run of a job that loads the page's records into declared columns
#                (the load reads the part as it arrives)
#   sequential:  the same step as the only member of a parallel group, whose load follows
#                its download (what every http page did before)
# Wall time and peak RSS of each come from /usr/bin/time; each dray figure is compared with
# the mean of the curl rounds before and after it. Prints each round, the medians and the
# median of the rounds' ratios, and checks that both jobs loaded the same rows.
#
#   Benchmarks/http-stream.sh                   # release build, 3 rounds
#   ITEMS=50000 ROUNDS=5 Benchmarks/http-stream.sh
source "$(dirname "$0")/common.sh"
items=${ITEMS:-200000}
rate=${RATE:-12000000}
rounds=${ROUNDS:-3}

if [ -n "${DRAY_BINARY:-}" ]; then dray=$DRAY_BINARY; else build_release; fi
python3 "$root/Emulator/rest_server.py" --port 0 --items "$items" --rule "{\"path\": \"/items\", \"rate\": $rate}" \
  >"$work/server.log" 2>&1 </dev/null &
emulator_pid=$! # stopped by common.sh's cleanup
for _ in $(seq 100); do grep -q listening "$work/server.log" && break; sleep 0.1; done
url=$(head -1 "$work/server.log" | sed 's/.* //')
[ -n "$url" ] || { cat "$work/server.log" >&2; exit 1; }
page="${url}items?per_page=$items"

# Writes a job loading the page into <folder>/data/db.sqlite, its step at the top level or
# (with "group") as the only member of a parallel group; prints the manifest's path.
write_http_job() {
  local indent="" head="steps:"
  if [ "$2" = group ]; then
    indent="      "
    head=$'steps:\n  - id: group\n    parallel:\n      max: 1\n      steps:'
  fi
  mkdir -p "$1"
  cat >"$1/job.yaml" <<YAML
version: 1
job: bench
database: { path: data/db.sqlite }
$head
$indent  - id: items
$indent    http:
$indent      base_url: $url
$indent      path: items
$indent      query: { per_page: $items }
$indent      headers: { Accept-Encoding: identity }
$indent      load:
$indent        table: items
$indent        records: /data
$indent        columns: { id: INTEGER, name: TEXT, price: NUMERIC, code: TEXT, active: INTEGER, note: TEXT, tags: TEXT }
YAML
  echo "$1/job.yaml"
}
streamed=$(write_http_job "$work/streamed" top)
sequential=$(write_http_job "$work/sequential" group)

# Prints "<seconds> <peak RSS in KB>" of a command, from /usr/bin/time.
timed() {
  /usr/bin/time -f '%e %M' -o "$work/time.out" "$@" >"$work/command.out" 2>&1 || { cat "$work/command.out" >&2; exit 1; }
  cat "$work/time.out"
}

curl_round() {
  local figures
  figures=$(timed curl -sS -o "$work/curl.out" -H 'Accept-Encoding: identity' "$page")
  size=$(stat -c %s "$work/curl.out")
  rm -f "$work/curl.out"
  echo "${figures% *} $size"
}

# One dray run of a job from a fresh folder; prints "<seconds> <peak RSS in KB>".
dray_round() {
  local folder
  folder=$(dirname "$1")
  rm -rf "$folder/data" "$folder/.dray"
  timed "$dray" run "$1" --quiet
  sync "$folder/data/db.sqlite"
}

read -r first size < <(curl_round)
echo "page: $size bytes ($items items) from $page, sent at $rate bytes/s"
printf '%-6s %10s %10s %12s %8s %10s %8s\n' round "curl s" "dray s" "sequential s" ratio "dray MB" "seq/curl"
curl_times=("$first")
dray_times=()
sequential_times=()
ratios=()
sequential_ratios=()
peaks=()
for round in $(seq "$rounds"); do
  read -r seconds peak < <(dray_round "$streamed")
  dray_times+=("$seconds")
  peaks+=("$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')")
  read -r seconds _ < <(dray_round "$sequential")
  sequential_times+=("$seconds")
  read -r seconds _ < <(curl_round)
  curl_times+=("$seconds")
  mean=$(awk -v a="${curl_times[$((round - 1))]}" -v b="${curl_times[$round]}" 'BEGIN { print (a + b) / 2 }')
  ratios+=("$(awk -v d="${dray_times[-1]}" -v c="$mean" 'BEGIN { printf "%.3f", d / c }')")
  sequential_ratios+=("$(awk -v d="${sequential_times[-1]}" -v c="$mean" 'BEGIN { printf "%.3f", d / c }')")
  printf '%-6s %10s %10s %12s %8s %10s %8s\n' "$round" "$mean" "${dray_times[-1]}" "${sequential_times[-1]}" "${ratios[-1]}" \
    "${peaks[-1]}" "${sequential_ratios[-1]}"
done

checksum() { sqlite3 "$1/data/db.sqlite" "SELECT * FROM items ORDER BY id" | sha256sum | cut -d' ' -f1; }
[ "$(checksum "$work/streamed")" = "$(checksum "$work/sequential")" ] || { echo "the two jobs loaded other rows" >&2; exit 1; }
[ "$(sqlite3 "$work/streamed/data/db.sqlite" "SELECT count(*) FROM items")" = "$items" ] || { echo "not $items rows" >&2; exit 1; }
echo "median wall time: curl $(median "${curl_times[@]}") s (${#curl_times[@]} runs), dray $(median "${dray_times[@]}") s," \
  "sequential $(median "${sequential_times[@]}") s (${#dray_times[@]} runs each)"
echo "ratio dray/curl: $(median "${ratios[@]}"); sequential/curl: $(median "${sequential_ratios[@]}")"
echo "dray peak RSS: median $(median "${peaks[@]}") MB"
echo "rows: the same in both jobs ($items)"
