# Sourced by the scripts that run dray against a local server (scripts/demo.sh,
# examples/run.sh, examples/rest-paginated.sh); needs $repo, the repository's root.
#
#   start_server "platform emulator" emulator.py [OPTIONS...]
#
# starts Emulator/SCRIPT on a free port in the background, waits up to 10 s for the address
# it prints first (then sets $server_url, ending with /), and stops it when the calling
# shell exits. A server that does not start is an error that shows its output.

start_server() {
  local label=$1 script=$2
  shift 2
  server_log=$(mktemp)
  python3 "$repo/Emulator/$script" --port 0 "$@" >"$server_log" 2>&1 &
  server_pid=$!
  trap stop_server EXIT
  for _ in $(seq 100); do
    grep -q listening "$server_log" && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q listening "$server_log"; then
    echo "the $label did not start:" >&2
    cat "$server_log" >&2
    exit 1
  fi
  server_url=$(head -1 "$server_log" | sed 's/.* //')
  echo "$label at $server_url"
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -f "$server_log"
}
