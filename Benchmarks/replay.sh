#!/usr/bin/env bash
# Replay against the live run: the same job loading a generated answer of ROWS rows x 8
# columns (default 1,000,000: about 94 MB) from the local platform emulator, and from a
# recording of it (docs/recordings.md), read from disk with no server running.
#
# Records one run (dray run --record), then alternates ROUNDS live runs (the emulator
# started anew for them) and ROUNDS replays (the emulator stopped), each from a fresh job
# folder. Prints each round's wall time (/usr/bin/time), the medians, and the time the
# recording took to write; checks that every run loaded the same rows.
# Goal: the replay's median no slower than the live run's. CHECK=1 exits 1 when missed.
#
#   Benchmarks/replay.sh                      # release build, 5 rounds
#   ROWS=200000 ROUNDS=3 Benchmarks/replay.sh
source "$(dirname "$0")/common.sh"
rows=${ROWS:-1000000}
rounds=${ROUNDS:-5}

if [ -n "${DRAY_BINARY:-}" ]; then dray=$DRAY_BINARY; else build_release; fi
render_answer
start_emulator
job=$(write_job "$work/job")
# The replays run with the same address: nothing listens there once the emulator stops.
echo "answer: $size bytes ($rows rows) from ${url}api/v1/rpc/BIG/"

timed() {
  /usr/bin/time -f '%e' -o "$work/time.out" "$@" >"$work/command.out" 2>&1 || { cat "$work/command.out" >&2; exit 1; }
  cat "$work/time.out"
}
fresh() { rm -rf "$work/job/data" "$work/job/.dray"; }

fresh
record_seconds=$(timed "$dray" run "$job" --quiet --record "$work/rec")
expected=$(table_checksum "$work/job")
echo "recorded in ${record_seconds}s: $(du -sh "$work/rec" | cut -f1) in $work/rec"

live=()
for round in $(seq "$rounds"); do
  fresh
  live+=("$(timed "$dray" run "$job" --quiet)")
  [ "$(table_checksum "$work/job")" = "$expected" ] || { echo "live round $round loaded other rows" >&2; exit 1; }
  echo "live   round $round: ${live[-1]}s"
done
kill "$emulator_pid" && wait "$emulator_pid" 2>/dev/null || true
emulator_pid=
replay=()
for round in $(seq "$rounds"); do
  fresh
  replay+=("$(timed "$dray" run "$job" --quiet --replay "$work/rec")")
  [ "$(table_checksum "$work/job")" = "$expected" ] || { echo "replay round $round loaded other rows" >&2; exit 1; }
  echo "replay round $round: ${replay[-1]}s"
done
live_median=$(median "${live[@]}")
replay_median=$(median "${replay[@]}")
echo "median: live ${live_median}s, replay ${replay_median}s"
if [ "${CHECK:-0}" = 1 ] && awk -v r="$replay_median" -v l="$live_median" 'BEGIN { exit !(r > l) }'; then
  echo "the replay is slower than the live run" >&2
  exit 1
fi
