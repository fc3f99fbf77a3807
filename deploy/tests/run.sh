#!/usr/bin/env bash
# The deployment checks (make test runs them after the Swift tests; docs/deploy.md):
#
#   1. scripts/release.sh builds and packs the release tarball, once;
#   2. the tarball's checksum holds, and the packed binary, unpacked in a temporary folder,
#      is stripped and finds its symbols in the .debug file beside the tarball (gdb), prints
#      the commit, validates the example jobs, runs one against the emulator from another
#      working folder, and replays each recorded example with no server;
#   3. deploy/tests/containerfile.py: the Containerfile's runtime packages against `ldd`;
#   4. deploy/tests/kubernetes.py: kubernetes-validate, and two pods contending for the lock,
#      against a PostgreSQL 15 server of its own (deploy/tests/with-postgres.sh; a machine
#      without PostgreSQL fails here, it never skips);
#   5. deploy/tests/schedulers.py: systemd-analyze verify, the units and the crontab run as
#      systemd and cron would.
#
# Needs root (mount namespaces, another user). Prints how long each part took.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

step() { printf '%s: %ss\n' "$1" "$(( $(date +%s) - started ))"; started=$(date +%s); }
started=$(date +%s)

commit=$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
tarball=$(scripts/release.sh)
step "release build"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd dist && sha256sum --quiet -c "$(basename "$tarball").sha256")
tar -xzf "$tarball" -C "$work"
packed=$(echo "$work"/dray-*/dray)
for file in README.md schemas/manifest.schema.json schemas/report.schema.json; do
  [ -f "$(dirname "$packed")/$file" ] || { echo "release: $file is not in $tarball" >&2; exit 1; }
done
# Stripped, its symbols in the .debug file beside the tarball, which gdb finds by the name
# and CRC the binary holds (.gnu_debuglink) once the file is put beside it.
debug="${tarball%.tar.gz}.debug"
[ -f "$debug" ] || { echo "release: $debug is missing" >&2; exit 1; }
if readelf -S --wide "$packed" | grep -qE ' \.(symtab|debug_[a-z_]+) '; then
  echo "release: the packed dray is not stripped (it has a .symtab or .debug_* section)" >&2
  exit 1
fi
# gdb lists a function of dray's own by its source file only from the debug information
# (main and the exported Swift runtime stay in .dynsym, so a symbol alone proves nothing).
sources() { gdb -batch -nx -ex "info functions ReportCommand" "$packed" 2>&1 | grep -c 'Sources/DrayCLI/ReportCommand.swift:' || true; }
without=$(sources)
cp "$debug" "$(dirname "$packed")/"
with=$(sources)
rm "$(dirname "$packed")/$(basename "$debug")"
[ "$without" = 0 ] && [ "$with" = 1 ] || {
  echo "release: gdb should find ReportCommand.swift only with $(basename "$debug") beside the binary; found it $without, then $with time(s)" >&2
  exit 1
}
"$packed" version | grep -qx "commit $commit" || {
  echo "release: dray version does not say commit $commit:" >&2
  "$packed" version >&2
  exit 1
}
# The packed binary, from another folder: validate, then run the fruits job on the emulator.
mkdir "$work/elsewhere" "$work/job"
cp jobs/*.yaml "$work/job/"
(cd "$work/elsewhere" && env -i PATH=/usr/bin:/bin "$packed" validate --no-credentials "$work"/job/*.yaml >/dev/null)
# shellcheck source=scripts/server.sh
source scripts/server.sh
start_server "platform emulator" emulator.py >/dev/null
(cd "$work/elsewhere" && env -i PATH=/usr/bin:/bin FMP_HOST="$server_url" FMP_USER=demo FMP_PASSWORD=demo-password \
  "$packed" run --quiet "$work/job/fruits-delta.yaml")
stop_server
trap 'rm -rf "$work"' EXIT
# The packed (optimised) binary replays every recorded example with no server running: a
# release build once crashed at its first replayed request where the debug build did not.
for recording in examples/recordings/*/; do
  name=$(basename "$recording")
  mkdir "$work/replay-$name"
  cp "examples/$name.yaml" "$work/replay-$name/"
  (cd "$work/elsewhere" && env -i PATH=/usr/bin:/bin FMP_HOST=http://127.0.0.1:8765/ \
    "$packed" run --quiet --fresh "$work/replay-$name/$name.yaml" --replay "$repo/$recording") || {
    echo "release: the packed dray did not replay examples/recordings/$name" >&2
    exit 1
  }
done
echo "release: $tarball: checksum, stripped with $(basename "$debug"), version $("$packed" version | head -1), commit $commit; validate, a run from another folder, and a replay of each recorded example"
step "packed binary"

deploy/tests/containerfile.py "$packed"
step "Containerfile"
deploy/tests/with-postgres.sh deploy/tests/kubernetes.py "$packed"
step "Kubernetes"
deploy/tests/schedulers.py "$packed"
step "systemd and cron"
