#!/usr/bin/env bash
# Installs the Debian packages dray builds and tests with, when any is missing.
# Needs root (or password-less sudo) only when something must be installed.
set -euo pipefail

packages=(
  libyaml-dev          # YAML parser (manifests)
  libsqlite3-dev       # SQLite (target database, journal)
  libcurl4-openssl-dev # HTTP
  libyajl-dev          # streaming JSON parser (table loads)
  libssl-dev           # SHA-256 (table names, fingerprints)
  libxml2-dev          # XML answers of the http step
  libpq-dev            # libpq, PostgreSQL's client library (the PostgreSQL target)
  postgresql           # PostgreSQL 15 server; tests start their own on a free loopback port
  iso-codes            # the emulator's ISO code lists
  sqlite3              # the sqlite3 shell, used by benchmarks and the demo
  curl                 # used by tests and benchmarks
  openssl              # test certificates for the TLS tests
  python3              # the platform emulator
  python3-jsonschema   # tests: reports against docs/report.schema.json (scripts/check-report.py)
  python3-prometheus-client # tests: Prometheus textfiles through the exposition-format parser
  bsdutils             # tests: `script`, to run dray on a pseudo-terminal
  python3-yaml         # deploy tests: reading the Kubernetes manifests
  python3-venv         # deploy tests: kubernetes-validate in a virtualenv under .build
  systemd              # deploy tests: systemd-analyze verify (no systemd running needed)
  binutils             # deploy tests: readelf, the libraries the release binary names
  util-linux           # deploy tests: unshare, setpriv, setsid
  chromium             # tests: HTML report pages opened in a real browser (scripts/check-page-in-browser.sh)
)

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
