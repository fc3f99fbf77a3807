#!/usr/bin/env bash
# Replays one example from its recording, with no server running and no credential set:
#
#   examples/replay.sh NAME
#   examples/replay.sh HHFWTableStreamRetry
#
# NAME is an example with a recording in examples/recordings/NAME/ (examples/record.sh
# makes one). `dray run --fresh --replay` answers every request from the recording, without
# a network call (docs/recordings.md); the files land in out/NAME/ as in a live run.
# Environment: DRAY_BINARY (default .build/debug/dray, built when missing), DRAY_REPO (the
# repository, default this folder's parent).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=${DRAY_REPO:-$(dirname "$here")}

recorded() { (cd "$here/recordings" && ls -1d ./*/ | sed 's|^\./||; s|/$||' | paste -sd ' ' -); }
if [ $# -ne 1 ]; then
  echo "usage: examples/replay.sh NAME; recorded examples: $(recorded)" >&2
  exit 2
fi
name=$1
if [ ! -f "$here/recordings/$name/recording.json" ]; then
  echo "no recording of an example named '$name'; recorded examples: $(recorded)" >&2
  exit 2
fi

dray=${DRAY_BINARY:-$repo/.build/debug/dray}
if [ ! -x "$dray" ]; then
  (cd "$repo" && swift build --product dray)
fi

# The recorded emulator's address; nothing listens there, and nothing is sent.
unset FMP_USER FMP_PASSWORD
export FMP_HOST=http://127.0.0.1:8765/
status=0
"$dray" run --fresh "$here/$name.yaml" --replay "$here/recordings/$name" || status=$?
exit $status
