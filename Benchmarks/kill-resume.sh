#!/usr/bin/env bash
# Kill -9 during a large download, then run again: the second run must fetch only the rest.
#
# Serves a generated answer of ROWS rows (default 2,000,000: about 180 MB), starts
# `dray run`, sends SIGKILL to the dray process once KILL_AT of the answer (default 0.5)
# is in its .part file, then runs the job again. Checks, and exits 1 unless all hold:
#   - the second run succeeds, fetching exactly the bytes the part lacked: by its report,
#     and by the emulator's request log (body bytes written for the resumed request);
#   - bytes dray fetched over both runs (the part at the kill + the second run's report)
#     <= 1.05 × the answer's size;
#   - the loaded table equals the one a clean run of the same job loads.
# It also prints what the emulator wrote over both runs: that includes what was still in
# the kernel's socket buffers when dray died, which can be tens of MB on loopback.
# TRICKLE (bytes/s) slows the first answer down, for machines where it would finish
# before the kill.
#
#   Benchmarks/kill-resume.sh
#   ROWS=200000 Benchmarks/kill-resume.sh     # about 18 MB, a few seconds
source "$(dirname "$0")/common.sh"
kill_at=${KILL_AT:-0.5}

build_release
render_answer
faults=()
if [ -n "${TRICKLE:-}" ]; then
  faults=(--fault "{\"path\": \"/api/v1/rpc/BIG/\", \"times\": 1, \"trickle\": $TRICKLE}")
fi
start_emulator "${faults[@]}"
job=$(write_job "$work/job")
threshold=$(awk -v s="$size" -v f="$kill_at" 'BEGIN { printf "%d", s * f }')
echo "answer: $size bytes ($rows rows); killing dray at $threshold bytes"

"$dray" run "$job" --quiet >"$work/first.out" 2>&1 &
dray_pid=$!
part=
while kill -0 "$dray_pid" 2>/dev/null; do
  part=$(ls "$work/job/.dray/downloads/bench/"*.part 2>/dev/null | head -1 || true)
  if [ -n "$part" ] && [ "$(stat -c %s "$part" 2>/dev/null || echo 0)" -ge "$threshold" ]; then
    kill -9 "$dray_pid"
    break
  fi
  sleep 0.005
done
wait "$dray_pid" 2>/dev/null && { echo "the first run finished before the kill; try TRICKLE=100000000" >&2; exit 1; } || true
dray_pid=
[ -n "$part" ] && [ -f "$part" ] || { echo "no partial download to resume" >&2; exit 1; }
kept=$(stat -c %s "$part")
echo "killed: the part held $kept bytes ($(awk -v k="$kept" -v s="$size" 'BEGIN { printf "%.1f", 100 * k / s }') %)"

"$dray" run "$job" --quiet >"$work/second.out" 2>&1 || { cat "$work/second.out" >&2; exit 1; }
second=$(report_figure "$work/job" bytes)
echo "second run: fetched $second bytes in $(report_figure "$work/job" run-seconds) s (download and load)"

# The emulator's log: body bytes written to the socket for each request of the answer.
read -r first_sent second_sent < <(curl -sS "${url}admin/requests" | python3 -c '
import json, sys
sent = [r.get("response_bytes", 0) for r in json.load(sys.stdin) if r["path"] == "/api/v1/rpc/BIG/"]
print(*(sent + [0, 0])[:2])')
received=$((kept + second))
ratio=$(awk -v b="$received" -v s="$size" 'BEGIN { printf "%.4f", b / s }')
served=$((first_sent + second_sent))
echo "fetched by dray over both runs: $received bytes = $ratio × the answer (limit 1.05)"
echo "the server's log: first run $first_sent bytes, second run $second_sent bytes;" \
  "$(awk -v b="$served" -v s="$size" 'BEGIN { printf "%.4f", b / s }') × the answer"
echo "  (of the first run's bytes, $((first_sent - kept)) were in socket buffers when dray died;" \
  "this kernel lets a loopback receive buffer grow to $(cut -f3 /proc/sys/net/ipv4/tcp_rmem) bytes)"

clean=$(write_job "$work/clean")
"$dray" run "$clean" --quiet >"$work/clean.out" 2>&1 || { cat "$work/clean.out" >&2; exit 1; }
resumed_sum=$(table_checksum "$work/job")
clean_sum=$(table_checksum "$work/clean")
echo "table after resume: $resumed_sum"
echo "table of a clean run: $clean_sum"

status=0
[ "$second" -eq $((size - kept)) ] || { echo "FAIL: the second run fetched $second bytes, not the $((size - kept)) missing" >&2; status=1; }
[ "$second_sent" -eq $((size - kept)) ] || { echo "FAIL: the server sent $second_sent bytes to the second run, not $((size - kept))" >&2; status=1; }
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }' || { echo "FAIL: more than 1.05 × the answer was fetched" >&2; status=1; }
[ "$resumed_sum" = "$clean_sum" ] || { echo "FAIL: the resumed table differs from a clean run's" >&2; status=1; }
[ $status -eq 0 ] && echo "PASS"
exit $status
