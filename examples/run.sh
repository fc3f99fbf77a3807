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

log=$(mktemp)
python3 "$repo/Emulator/emulator.py" --port 0 "$@" >"$log" 2>&1 &
emulator=$!
stop() {
  kill "$emulator" 2>/dev/null || true
  wait "$emulator" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT
for _ in $(seq 100); do
  grep -q listening "$log" && break
  kill -0 "$emulator" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q listening "$log"; then
  echo "the platform emulator did not start:" >&2
  cat "$log" >&2
  exit 1
fi
url=$(head -1 "$log" | sed 's/.* //')
echo "platform emulator at $url"

export FMP_HOST=$url FMP_USER=demo FMP_PASSWORD=demo-password
status=0
"$dray" run --fresh "$manifest" || status=$?

echo
echo "files in examples/out/$name:"
if [ -d "$here/out/$name" ]; then
  (cd "$here/out/$name" && find . -type f -not -path './.dray/*' -not -path './reports/*' -not -name '*.sqlite*' | sort |
    while read -r f; do printf '  %-40s %6s bytes\n' "${f#./}" "$(wc -c <"$f" | tr -d ' ')"; done)
fi
exit $status
