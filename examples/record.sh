#!/usr/bin/env bash
# Records one example against a fresh platform emulator on 127.0.0.1:8765 (the address the
# examples default to), into examples/recordings/NAME/, replacing the recording there:
#
#   examples/record.sh NAME [EMULATOR OPTIONS...]
#   examples/record.sh HHFWTableRetryDownload --fault '{"path": "/api/v1/rpc/FRUITS/", "times": 1, "close_after": 60}'
#
# The run is --fresh and starts from an empty out/NAME (its database, journal and files are
# removed first), so the recording holds a whole run, starts from no kept state (its start
# section holds no data, docs/recordings.md) and replays into any folder (examples/replay.sh
# NAME). Port 8765 must be free: the script starts its own emulator there and says so when
# the port is taken. Secrets are masked (docs/recordings.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=${DRAY_REPO:-$(dirname "$here")}
if [ $# -lt 1 ] || [ ! -f "$here/$1.yaml" ]; then
  echo "usage: examples/record.sh NAME [EMULATOR OPTIONS...] (NAME: a platform example in examples/)" >&2
  exit 2
fi
name=$1
shift
dray=${DRAY_BINARY:-$repo/.build/debug/dray}
if [ ! -x "$dray" ]; then
  (cd "$repo" && swift build --product dray)
fi
# It starts its own emulator: one already listening on 8765 (the README's) has to stop first.
if ! python3 -c 'import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 8765))' 2>/dev/null; then
  echo "examples/record.sh: port 8765 is in use (is an emulator already running? stop it: record.sh starts its own, with the options given, on 8765)" >&2
  exit 1
fi
# shellcheck source=../scripts/server.sh
. "$repo/scripts/server.sh"
start_server "platform emulator" emulator.py "$@" --port 8765

export FMP_HOST=http://127.0.0.1:8765/ FMP_USER=demo FMP_PASSWORD=demo-password
rm -rf "${here:?}/out/$name"
"$dray" run --fresh "$here/$name.yaml" --record "$here/recordings/$name"
