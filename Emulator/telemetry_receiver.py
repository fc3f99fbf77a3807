#!/usr/bin/env python3
"""A receiver of OpenLineage events and OTLP/HTTP traces, for dray's tests.

Python standard library only. It keeps every POST it receives (path, headers, body) and
answers it 200 with `{}` (OTLP's empty ExportTraceServiceResponse; Marquez answers 201, any
2xx will do), or with `--status N` every time; `--status 0` never answers. `GET /_received` answers the list of what it
kept, oldest first, as JSON: `[{"path", "headers", "body"}]`.

It checks nothing itself: scripts/check-telemetry.py decodes and validates what it kept
with the OpenTelemetry and OpenLineage Python packages.

    python3 Emulator/telemetry_receiver.py --port 4318
"""

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RECEIVED = []
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    status = 200
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        with LOCK:
            RECEIVED.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
        if self.status == 0:
            # --status 0: keeps the request and never answers (a receiver that hangs).
            threading.Event().wait()
        self.answer(self.status, "{}" if self.status < 300 else '{"error": "injected"}')

    def do_GET(self):
        if self.path != "/_received":
            self.answer(404, '{"error": "not found"}')
            return
        with LOCK:
            self.answer(200, json.dumps(RECEIVED))


def main(argv=None):
    parser = argparse.ArgumentParser(description="OpenLineage and OTLP/HTTP receiver for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--status", type=int, default=200, help="the status every POST is answered")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes (tests hold it open)")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    Handler.status = args.status
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"dray-telemetry-receiver listening on http://{host}:{port}/", flush=True)
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
