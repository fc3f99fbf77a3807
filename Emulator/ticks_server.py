#!/usr/bin/env python3
"""An API whose cursor is a number written with a fraction or an exponent, for the
`incremental.boundary` tests (docs/http.md, "Cursor boundaries").

Python 3 standard library only. Start it on a free port and read the address from the
first line it prints:

    $ python3 Emulator/ticks_server.py --port 0
    dray-ticks-server listening on http://127.0.0.1:40123/

    GET /ticks?since=X    {"data": [{"id": 1, "c": <c as written>}, ...]}

answers the records whose `c` is above X (exclusive, `>`; all without `since`), in the
order added, each `c` written exactly as it was added (`1701600000.25`, `1e3`). A `since`
that is not a number is a 400. By default `c` and X compare as Python floats (doubles,
as most APIs hold such a cursor); POST /admin/ticks {"compare": "decimal"} compares them
exactly, as decimals.

Test helpers under /admin/:
    POST /admin/ticks      {"add": [[ID, "C as written"], ...], "compare": "float" | "decimal"}
    GET  /admin/requests   the paths (with query) of the requests received, oldest first
    POST /admin/reset      clears that log
"""
import argparse
import json
import os
import signal
import sys
import threading
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self):
        self.records = []  # (id, text of c)
        self.compare = "float"
        self.requests = []
        self.lock = threading.Lock()

    def number(self, text):
        return Decimal(text) if self.compare == "decimal" else float(text)


class Handler(BaseHTTPRequestHandler):
    state = State()

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        st = self.state
        url = urlsplit(self.path)
        if url.path == "/admin/requests":
            with st.lock:
                return self.send(200, json.dumps(st.requests))
        if url.path != "/ticks":
            return self.send(404, '{"error": "not found"}')
        with st.lock:
            st.requests.append(self.path)
            since = parse_qs(url.query).get("since")
            try:
                low = st.number(since[0]) if since else None
            except (ValueError, InvalidOperation):
                return self.send(400, json.dumps({"error": f"since is not a number: {since[0]}"}))
            chosen = [(i, c) for i, c in st.records if low is None or st.number(c) > low]
        body = ", ".join('{"id": %d, "c": %s}' % (i, c) for i, c in chosen)
        self.send(200, '{"data": [' + body + "]}")

    def do_POST(self):
        st = self.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == "/admin/reset":
            with st.lock:
                st.requests = []
            return self.send(200, "{}")
        if self.path == "/admin/ticks":
            change = json.loads(raw or b"{}")
            with st.lock:
                st.compare = change.get("compare", st.compare)
                st.records += [(int(i), str(c)) for i, c in change.get("add", [])]
            return self.send(200, "{}")
        self.send(404, '{"error": "not found"}')


def main(argv=None):
    parser = argparse.ArgumentParser(description="An API with a number cursor written as given")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes (tests hold it open)")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"dray-ticks-server listening on http://{host}:{port}/", flush=True)
    if args.exit_on_eof:
        def watch():
            sys.stdin.buffer.read()
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
