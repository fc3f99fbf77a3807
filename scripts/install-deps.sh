#!/usr/bin/env bash
# Installs the Debian packages dray needs, when any is missing:
#
#   scripts/install-deps.sh         everything: building, the demo, every test and the
#                                   deployment checks (make deps, make test, CI)
#   scripts/install-deps.sh demo    only building dray and running the demo (make demo); not
#                                   scripts/check-report.py's python3-jsonschema and
#                                   python3-prometheus-client
#
# Needs root (or password-less sudo) only when something must be installed.
set -euo pipefail

# Building dray (the C libraries it links, binutils for the release's strip and objcopy)
# and running the demo (the emulator, its ISO code lists, the sqlite3 shell).
build_and_demo=(
  libyaml-dev          # YAML parser (manifests)
  libsqlite3-dev       # SQLite (target database, journal)
  libcurl4-openssl-dev # HTTP
  libssl-dev           # SHA-256 (table names, fingerprints)
  libxml2-dev          # XML answers of the http step
  libpq-dev            # libpq, PostgreSQL's client library (the PostgreSQL target)
  binutils             # make release: strip, objcopy (symbols kept apart); deploy tests: readelf
  python3              # the platform emulator; the JSON differential tests' reference
  iso-codes            # the emulator's ISO code lists
  sqlite3              # the sqlite3 shell, used by benchmarks and the demo
)

# The tests and the deployment checks.
tests=(
  postgresql           # PostgreSQL 15 server; tests start their own on a free loopback port
  curl                 # used by tests and benchmarks
  openssl              # test certificates for the TLS tests
  python3-jsonschema   # tests and scripts/check-report.py: reports against docs/report.schema.json
  python3-prometheus-client # tests and scripts/check-report.py: Prometheus textfiles through the exposition-format parser
  bsdutils             # tests: `script`, to run dray on a pseudo-terminal
  python3-yaml         # deploy tests: reading the Kubernetes manifests
  python3-venv         # virtualenvs under .build: kubernetes-validate (deploy tests); opentelemetry-proto and
                       # openlineage-python (TelemetryExportTests, scripts/telemetry-requirements.txt), from PyPI
  systemd              # deploy tests: systemd-analyze verify (no systemd running needed)
  gdb                  # deploy tests: the stripped release binary finds its .debug file
  util-linux           # deploy tests: unshare, setpriv, setsid
  chromium             # tests: HTML report pages opened in a real browser (scripts/check-page-in-browser.sh)
)

case "${1:-all}" in
  all) packages=("${build_and_demo[@]}" "${tests[@]}") ;;
  demo) packages=("${build_and_demo[@]}") ;;
  *)
    echo "usage: $0 [demo]  (no argument: everything the tests need too)" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
