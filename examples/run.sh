#!/usr/bin/env bash
# Runs one example against a fresh platform emulator on a free port, then stops it:
#
#   examples/run.sh NAME [EMULATOR OPTIONS...]
#   examples/run.sh HHFWFiles
#   examples/run.sh HHFWRequestRetry --fault '{"path": "/api/v1/rpc/FRUITS/", "times": 2, "status": 503}'
#
# NAME is a manifest in this folder without .yaml. Options after it go to the emulator
# (Emulator/emulator.py --help), e.g. --fault rules to watch retries and resumes. The run
# is --fresh (the emulator is new, so every step runs) and its files land in out/NAME/.
# Environment: DRAY_BINARY (default .build/debug/dray, built when missing), DRAY_REPO (the
# repository holding Emulator/, default this folder's parent).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=${DRAY_REPO:-$(dirname "$here")}

examples() { (cd "$here" && ls -1 ./*.yaml | sed 's|^\./||; s|\.yaml$||' | paste -sd ' ' -); }
if [ $# -lt 1 ]; then
  echo "usage: examples/run.sh NAME [EMULATOR OPTIONS...]; examples: $(examples)" >&2
  exit 2
fi
name=$1
shift
manifest="$here/$name.yaml"
if [ ! -f "$manifest" ]; then
  echo "no example named '$name'; examples: $(examples)" >&2
  exit 2
fi
# An example against another server brings its own runner (rest-paginated.sh: the REST server).
if [ -f "$here/$name.sh" ]; then
  DRAY_REPO=$repo exec bash "$here/$name.sh" "$@"
fi

dray=${DRAY_BINARY:-$repo/.build/debug/dray}
if [ ! -x "$dray" ]; then
  (cd "$repo" && swift build --product dray)
fi

# shellcheck source=../scripts/server.sh
. "$repo/scripts/server.sh"
start_server "platform emulator" emulator.py "$@"

export FMP_HOST=$server_url FMP_USER=demo FMP_PASSWORD=demo-password
status=0
"$dray" run --fresh "$manifest" || status=$?

echo
echo "files in examples/out/$name:"
if [ -d "$here/out/$name" ]; then
  (cd "$here/out/$name" && find . -type f -not -path './.dray/*' -not -path './reports/*' -not -name '*.sqlite*' | sort |
    while read -r f; do printf '  %-40s %6s bytes\n' "${f#./}" "$(wc -c <"$f" | tr -d ' ')"; done)
fi
exit $status
