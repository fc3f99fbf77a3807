#!/usr/bin/env bash
# Opens dray HTML pages in headless Chromium with networking off, fails on any console
# message (a script error, a resource that could not load), and saves a screenshot of each.
#
#     scripts/check-page-in-browser.sh PAGE.html SHOT.png [PAGE.html SHOT.png ...]
#
# Networking is off twice over: every host name resolves to nothing (--host-resolver-rules)
# and every connection goes to a proxy on a port nothing listens on. Console messages come
# from Chromium's own log on standard error (--enable-logging=stderr --v=0). Needs Debian's
# chromium (scripts/install-deps.sh). Exits 1 naming each page with a problem.
set -uo pipefail

browser=$(command -v chromium || command -v chromium-browser) || {
  echo "chromium is missing; install it with scripts/install-deps.sh" >&2
  exit 1
}
[ $(($# % 2)) -eq 0 ] && [ $# -gt 0 ] || {
  echo "usage: $0 PAGE.html SHOT.png [PAGE.html SHOT.png ...]" >&2
  exit 2
}

profile=$(mktemp -d "${TMPDIR:-/tmp}/dray-chromium.XXXXXX")
trap 'rm -rf "$profile"' EXIT
status=0
while [ $# -gt 0 ]; do
  page=$(realpath "$1") shot=$2
  shift 2
  log="$profile/log"
  timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile/user" \
    --host-resolver-rules="MAP * ~NOTFOUND" --proxy-server="127.0.0.1:9" --disable-background-networking \
    --disable-component-update --disable-sync --enable-logging=stderr --v=0 --hide-scrollbars \
    --window-size=1100,1500 --screenshot="$shot" "file://$page" >"$log" 2>&1
  code=$?
  if [ $code -ne 0 ]; then
    echo "$page: chromium exited with $code:" >&2
    tail -5 "$log" >&2
    status=1
  elif grep -E 'CONSOLE|console\(|Uncaught|net::ERR_|Failed to load resource' "$log" >&2; then
    echo "$page: the browser console has the messages above" >&2
    status=1
  elif [ ! -s "$shot" ]; then
    echo "$page: no screenshot was written to $shot" >&2
    status=1
  fi
done
exit $status
