#!/usr/bin/env python3
"""A local emulator of the mobile platform server, as docs/platform-api.md describes it.

Python 3 standard library only. Start it on a free port and read the address from the
first line it prints:

    $ python3 Emulator/emulator.py --port 0
    dray-emulator listening on http://127.0.0.1:40123/

Serves: the token (POST /api/v1/auth/jwt/obtain/), the schema (GET /api/v1/schema/),
table data and uniform requests (POST /api/v1/rpc/<resource>/) with ETag, Content-Version,
Cache-Hash-Value, X-Transaction-ID replay and X-Range resume, and error bodies in the
platform's shape. Resources come from resources.json: FRUITS and test_resource as in the
platform's examples, and the ISO code lists Debian's iso-codes package ships as JSON.
FRUITS_EDIT inserts and deletes FRUITS rows and answers the refreshed table; FRUITS_WRITE appends
rows, an id held already included (changes.py).
File connections `nfs4` and `local_storage` are served from a folder (files.py).

Test helpers under /admin/ (no token):
    GET  /admin/requests   the requests received (method, path, headers, status, body_bytes,
                           response_bytes: answer body bytes written), oldest first
    POST /admin/reset      clears that log
    POST /admin/faults     replaces the fault rules with a JSON list (see faults.py)
    DELETE /admin/faults   removes every fault rule
    POST /admin/config     {"token_lifetime": seconds, "token_exp_claim": bool, "revoke_tokens": true}
                           changes settings while running (see faults.py)
    GET|POST /admin/versions/<NAME>, POST /admin/deltas   versions and deltas (versions.py)
    POST /admin/schemes/<NAME>  {"table": "output_table", "columns": [["id", "BIGINT", "int8"], ...],
                           "rows": [[1, ...], ...]} changes an output table's scheme and rows
                           between runs (drift: a column gained, lost or retyped); "table"
                           defaults to the first output table, "rows" to none. A cached
                           resource's next version holds the new rows. 404 for an unknown
                           resource, 400 for a body that is not such an object.

A resource of a --resources file may hold "scheme_output": a JSON list served verbatim as
its scheme's "output" (tests of malformed schemes: duplicate tables, columns that are not
objects).

Generated resources (--generate NAME:ROWS) have 8 mixed-type columns; their answer is
rendered once to a file under --cache-dir and streamed from disk (see generated.py).
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import changes
import faults
import files
import generated
import versions
from faults import Faults

HERE = os.path.dirname(os.path.abspath(__file__))
ISO_DIR = "/usr/share/iso-codes/json"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Platform:
    """The emulated server's state: users, resources, tokens, transactions, request log."""

    def __init__(self, config, users, token_lifetime=None, generate=(), cache_dir=None, files_root=None):
        self.faults = Faults()
        self.cache_dir = cache_dir
        self.environment = config["environment"]
        self.project = config["project"]
        self.users = users
        self.secret = os.urandom(32)
        self.token_lifetime = token_lifetime
        self.token_exp_claim = True
        self.lock = threading.Lock()
        self.transactions = {}
        self.requests = []
        self.devices = {}
        self.resources = {}
        self.versions = versions.Versions()
        for name, spec in config["resources"].items():
            self.resources[name] = self.build_resource(name, spec)
            if self.resources[name]["lifetime"] is not None:
                self.versions.register(self.resources[name])
        for name, rows in generate:
            columns = [{"name": c[0], "type": c[1], "source": {"name": "PG", "type": c[2]}} for c in generated.COLUMNS]
            self.resources[name] = {
                "name": name, "lifetime": None, "input": {"scalar": [], "tabular": []},
                "outputs": [{"name": "output_table", "columns": columns, "rows": []}], "generated_rows": rows,
            }
        changes.install(self)
        self.files = files.FileServer(files_root)

    # Resources

    def build_resource(self, name, spec):
        outputs = []
        for table_name, table in spec["outputs"].items():
            columns = [{"name": c[0], "type": c[1], "source": {"name": "PG", "type": c[2]}} for c in table["columns"]]
            if "iso" in table:
                rows = self.iso_rows(table["iso"], [c[0] for c in table["columns"]])
            else:
                rows = [list(r) for r in table.get("rows", [])]
            outputs.append({"name": table_name, "columns": columns, "rows": rows})
        resource = {
            "name": name,
            "lifetime": spec.get("lifetime"),
            "input": spec.get("input", {"scalar": [], "tabular": []}),
            "outputs": outputs,
        }
        if "scheme_output" in spec:
            # Served as the scheme's "output" verbatim, to test malformed schemes.
            resource["scheme_output"] = spec["scheme_output"]
        return resource

    @staticmethod
    def iso_rows(iso, columns):
        with open(os.path.join(ISO_DIR, iso["file"]), encoding="utf-8") as f:
            entries = json.load(f)[iso["key"]]
        derived = iso.get("derived", {})
        rows = []
        for entry in entries:
            row = []
            for column in columns:
                if column in derived:
                    source, rule = derived[column]
                    value = entry.get(source)
                    if rule == "prefix-" and value is not None:
                        value = value.split("-")[0]
                    row.append(value)
                else:
                    row.append(entry.get(column))
            rows.append(row)
        return rows

    def scheme(self, resource, index):
        out = {
            "id": index,
            "name": resource["name"],
            "type": "tabular",
            "input": resource["input"],
            "output": [
                {"id": 100 * index + i, "name": t["name"], "columns": t["columns"]}
                for i, t in enumerate(resource["outputs"])
            ],
        }
        if "scheme_output" in resource:
            out["output"] = resource["scheme_output"]
        if resource["lifetime"] is not None:
            out["lifetime"] = resource["lifetime"]
        return out

    def answer(self, resource, params, delta=None):
        """The answer's body and headers for a resource: full data, or for a cached resource
        asked with X-Delta (`delta`), the change since that version (versions.py)."""
        if "changes" in resource:
            changes.apply(self, resource, params)
            params = {}
        if not delta and resource["lifetime"] is not None and self.versions.delta_for_full:
            delta = self.versions.delta_for_full
        if delta and resource["lifetime"] is not None and self.versions.deltas_enabled:
            return self.delta_answer(resource, params, delta)
        if "generated_rows" in resource:
            path = generated.answer_file(self.cache_dir, resource["generated_rows"])
            return FileBody(path), {"ETag": generated.etag(path), "Content-Version": "v1"}
        tables = []
        hashes = []
        cached = resource["lifetime"] is not None
        for table in resource["outputs"]:
            rows = table["rows"]
            if cached:
                rows = self.versions.rows(resource, table)
            rows = self.filter_rows(rows, table, params, cached)
            tables.append({"name": table["name"], "data": rows})
            digest = hashlib.sha256(canonical(rows).encode()).hexdigest()[:16]
            hashes.append(urllib.parse.quote(f"{table['name']}-Hash:{digest}", safe=""))
        body = json.dumps(tables, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {
            "ETag": '"%s"' % hashlib.sha256(body).hexdigest()[:32],
            "Content-Version": "v%d" % self.versions.latest(resource) if cached else "v1",
        }
        if cached:
            headers["Cache-Hash-Value"] = ",".join(hashes)
            headers["Expires"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + resource["lifetime"]))
        headers["Last-Modified"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(START_TIME))
        return BytesBody(body), headers

    def delta_answer(self, resource, params, header):
        """A delta answer (platform-api.md §3); raises versions.BadDelta for a bad range."""
        def select(table, pairs):
            rows = self.filter_rows([[i] + list(r) for i, r in pairs], table, params, True)
            return [(r[0], r[1:]) for r in rows]
        tables, start, end = self.versions.delta(resource, header, select)
        body = json.dumps(tables, ensure_ascii=False, separators=(",", ":")).encode()
        # The hash of each table as it stands at the delta's end version, as a full answer gives it.
        hashes = []
        for table in resource["outputs"]:
            rows = self.filter_rows(self.versions.rows(resource, table, end), table, params, True)
            digest = hashlib.sha256(canonical(rows).encode()).hexdigest()[:16]
            hashes.append(urllib.parse.quote(f"{table['name']}-Hash:{digest}", safe=""))
        headers = {
            "ETag": '"%s"' % hashlib.sha256(body).hexdigest()[:32],
            "Content-Version": '"delta %s"' % self.versions.wrong_range if self.versions.wrong_range else '"delta v%d-v%d"' % (start, end),
            "Cache-Hash-Value": ",".join(hashes),
            "Expires": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + resource["lifetime"])),
        }
        return BytesBody(body), headers

    @staticmethod
    def filter_rows(rows, table, params, cached):
        """A scalar parameter named like a column keeps the rows whose column equals it."""
        names = [c["name"] for c in table["columns"]]
        for key, value in params.items():
            if key in names and not isinstance(value, (list, dict)):
                index = names.index(key) + (1 if cached else 0)
                rows = [r for r in rows if r[index] == value]
        return rows

    # Tokens (HS256 JWT)

    def make_token(self, username, device):
        header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        now = int(time.time())
        claims = {"sub": username, "env": self.environment, "project": self.project, "device": device, "iat": now, "jti": uuid.uuid4().hex}
        if self.token_lifetime is not None and self.token_exp_claim:
            claims["exp"] = now + self.token_lifetime
        payload = b64url(json.dumps(claims).encode())
        signature = b64url(hmac.new(self.secret, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        return f"{header}.{payload}.{signature}"

    def check_token(self, authorization):
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[7:].strip()
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = b64url(hmac.new(self.secret, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, parts[2]):
            return None
        try:
            claims = json.loads(b64url_decode(parts[1]))
        except ValueError:
            return None
        if "exp" in claims and claims["exp"] <= time.time():
            return None
        if self.token_lifetime is not None and claims.get("iat", 0) + self.token_lifetime <= time.time():
            return None
        return claims


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY on each connection, as production servers set it: the handler writes an
    # answer's head and its body separately, and with Nagle's algorithm the body waited for
    # the client's delayed ACK of the head, 40 ms an answer on Linux.
    disable_nagle_algorithm = True
    server_version = "dray-emulator/1"
    platform = None  # set by main()

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("emulator: " + fmt % args + "\n")

    # Plumbing

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, body=b"", headers=None, content_type="application/json", offset=0):
        """Sends a status, headers and a body (bytes or a Body) from `offset`, honouring the
        request's fault rule (close_after, trickle)."""
        source = body if isinstance(body, Body) else BytesBody(body)
        length = source.length - offset
        fault = self.fault or {}
        if fault.get("delay_answer"):
            time.sleep(float(fault["delay_answer"]))
        # gzip on a 200 or 206 answer when the request asks for it (or the rule `gzip_unasked`
        # sends it anyway); a 206 compresses the tail from `offset`, which counts the bytes
        # before compression (X-Range, platform-api.md §3). The ETag stays the uncompressed
        # answer's, so that a resume may change coding.
        compressed = status in (200, 206) and length > 0 and (wants_gzip(self.headers.get("Accept-Encoding")) or fault.get("gzip_unasked"))
        if self.entry is not None:
            self.entry["status"] = status
            if compressed:
                self.entry["content_encoding"] = "gzip"
                self.entry["offset"] = offset
        self.send_response(status)
        if length or status not in (204, 304):
            self.send_header("Content-Type", fault.get("content_type", content_type))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if compressed:
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        if (fault.get("chunked") or compressed and not fault.get("close_delimited")) and length > 0:
            fault = dict(fault, chunked=True)
            self.send_header("Transfer-Encoding", "chunked")
        elif fault.get("close_delimited") and length > 0:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length + int(fault.get("overstate_length", 0))))
        self.end_headers()
        if self.command == "HEAD" or length <= 0:
            return
        if offset:
            # Only an answer sent from byte 0 is garbled.
            fault = {key: value for key, value in fault.items() if key != "garble"}
        pieces = source.chunks(offset, 1 << 20)
        if compressed:
            # The answer is damaged before it is compressed, as at its source.
            if fault.get("garble"):
                pieces = faults.garbled(pieces)
                fault = {key: value for key, value in fault.items() if key != "garble"}
            pieces = gzipped(pieces)
        faults.write_body(self, pieces, fault)
        if fault.get("overstate_length"):
            self.close_connection = True
            self.connection.shutdown(2)

    def send_json(self, status, value, headers=None):
        self.send(status, json.dumps(value, ensure_ascii=False).encode(), headers)

    def error(self, status, description, originals=None):
        body = {"code": status, "description": description, "original_descriptions": originals or []}
        self.send_json(status, body)

    fault = None
    entry = None

    def record(self, body=b""):
        self.entry = {
            "method": self.command,
            "path": self.path,
            "headers": {k: v for k, v in self.headers.items()},
            "body_bytes": len(body),
            "response_bytes": 0,
        }
        with self.platform.lock:
            self.platform.requests.append(self.entry)

    def count_sent(self, n):
        """Adds `n` answer body bytes written to the socket to this request's log entry."""
        if self.entry is not None:
            with self.platform.lock:
                self.entry["response_bytes"] += n

    def self_url(self):
        scheme = "https" if getattr(self.server, "tls", False) else "http"
        host, port = self.server.server_address[:2]
        return f"{scheme}://{host}:{port}{self.path}"

    def route(self):
        parsed = urllib.parse.urlsplit(self.path)
        return parsed.path, urllib.parse.parse_qs(parsed.query)

    # Methods

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        path, query = self.route()
        body = self.read_body()
        self.fault = self.entry = None  # a kept-alive connection reuses this handler
        if path.startswith("/admin/"):
            return self.admin(method, path, body)
        self.record(body)
        self.fault = self.platform.faults.take(path)
        if self.fault and faults.answer_early(self, self.fault, body):
            return
        prefix = "/api/v1/"
        if not path.startswith(prefix):
            return self.error(404, "Not Found")
        rest = path[len(prefix):]
        if rest == "auth/jwt/obtain/" and method == "POST":
            return self.obtain_token(body)
        claims = self.platform.check_token(self.headers.get("Authorization"))
        if claims is None:
            return self.error(401, "Unauthorized")
        if rest == "schema/" and method == "GET":
            return self.schema()
        if rest.startswith("rpc/") and rest.endswith("/") and method == "POST":
            return self.rpc(urllib.parse.unquote(rest[4:-1]), body)
        if rest.startswith(("directory/", "file/")):
            return self.platform.files.handle(self, method, rest, query, body, FileBody)
        return self.error(404, "Not Found")

    # Token

    def obtain_token(self, body):
        fields = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        missing = [f for f in ("environment", "project", "username", "password") if not fields.get(f)]
        if missing:
            return self.error(400, "Bad Request", [f"missing field: {m}" for m in missing])
        p = self.platform
        if fields["environment"] != p.environment or fields["project"] != p.project:
            return self.error(401, "Unauthorized", ["unknown environment or project"])
        if p.users.get(fields["username"]) != fields["password"]:
            return self.error(401, "Unauthorized")
        device = fields.get("device_id") or self.headers.get("X-Device-Id") or "unknown"
        with p.lock:
            p.devices.setdefault(device, fields["username"])
        self.send_json(200, {"token": p.make_token(fields["username"], device)})

    # Schema

    def schema(self):
        resources = self.platform.resources
        out = {name: self.platform.scheme(r, i + 1) for i, (name, r) in enumerate(sorted(resources.items()))}
        self.send_json(200, out)

    # Table data

    def rpc(self, name, body):
        resource = self.platform.resources.get(name)
        if resource is None:
            return self.error(404, "Not Found", [f"resource {name} does not exist"])
        try:
            params = json.loads(body or b"{}")
        except ValueError as e:
            return self.error(400, "Bad Request", [f"body is not JSON: {e}"])
        if not isinstance(params, dict):
            return self.error(400, "Bad Request", ["body must be a JSON object of parameters"])
        transaction = self.headers.get("X-Transaction-ID")
        stored = None
        if transaction:
            with self.platform.lock:
                stored = self.platform.transactions.get(transaction)
        if stored is None:
            try:
                payload, headers = self.platform.answer(resource, params, self.headers.get("X-Delta"))
            except (changes.BadParameters, versions.BadDelta) as e:
                return self.error(400, "Bad Request", [str(e)])
            if transaction:
                with self.platform.lock:
                    self.platform.transactions[transaction] = (payload, headers)
        else:
            payload, headers = stored
        self.send_answer(payload, headers)

    def send_answer(self, payload, headers):
        """Sends a full answer, or its tail when X-Range (or Range) asks for one."""
        fault = self.fault or {}
        headers = faults.answer_headers(headers, fault)
        ranged = self.headers.get("X-Range") or self.headers.get("Range")
        condition = self.headers.get("If-Match") or self.headers.get("If-Range")
        if ranged and fault.get("answer_416"):
            return self.send(416, b"", dict(headers, **{"Content-Range": f"bytes */{payload.length}"}))
        if ranged and not fault.get("ignore_range"):
            if condition and condition != headers["ETag"]:
                if self.headers.get("If-Match"):
                    return self.error(412, "Precondition Failed")
                return self.send(200, payload, headers)
            spec = ranged.strip()
            if not spec.startswith("bytes=") or not spec.endswith("-"):
                return self.send(200, payload, headers)
            try:
                offset = int(spec[6:-1])
            except ValueError:
                return self.send(200, payload, headers)
            if offset >= payload.length:
                return self.send(416, b"", dict(headers, **{"Content-Range": f"bytes */{payload.length}"}))
            partial = dict(headers, **{"Content-Range": f"bytes {offset}-/*"})
            return self.send(206, payload, partial, offset=offset)
        self.send(200, payload, headers)

    # Admin (tests only)

    def change_scheme(self, name, body):
        p = self.platform
        resource = p.resources.get(name)
        if resource is None:
            return self.error(404, "Not Found", [f"resource {name} does not exist"])
        try:
            with p.lock:
                changed_scheme(resource, json.loads(body or b"null"))
        except ValueError as e:
            return self.error(400, "Bad Request", [str(e)])
        return self.send(204)

    def admin(self, method, path, body):
        p = self.platform
        if path.startswith("/admin/versions/") or path == "/admin/deltas":
            return p.versions.admin(self, p, method, path, body)
        if path.startswith("/admin/schemes/") and method == "POST":
            return self.change_scheme(path[len("/admin/schemes/"):], body)
        if path.startswith("/admin/files/"):
            return p.files.admin(self, method, path, body)
        if path == "/admin/requests" and method == "GET":
            with p.lock:
                return self.send_json(200, list(p.requests))
        if path == "/admin/reset" and method == "POST":
            with p.lock:
                p.requests.clear()
            return self.send(204)
        if path == "/admin/faults" and method == "POST":
            try:
                rules = json.loads(body)
                p.faults.set(rules if isinstance(rules, list) else [rules])
            except ValueError as e:
                return self.error(400, "Bad Request", [str(e)])
            return self.send(204)
        if path == "/admin/faults" and method == "DELETE":
            p.faults.clear()
            return self.send(204)
        if path == "/admin/config" and method == "POST":
            try:
                config = json.loads(body)
            except ValueError as e:
                return self.error(400, "Bad Request", [str(e)])
            if "token_lifetime" in config:
                p.token_lifetime = config["token_lifetime"]
            if "token_exp_claim" in config:
                p.token_exp_claim = bool(config["token_exp_claim"])
            if config.get("revoke_tokens"):
                p.secret = os.urandom(32)
            return self.send(204)
        return self.error(404, "Not Found")


def changed_scheme(resource, change):
    """Applies a POST /admin/schemes/<NAME> body to `resource`: the output table named
    (default: the first) takes the new columns and rows. Raises ValueError for a bad body."""
    if not isinstance(change, dict) or not isinstance(change.get("columns"), list):
        raise ValueError('the body must be {"table": NAME, "columns": [[name, type, source type], ...], "rows": [...]}')
    name = change.get("table", resource["outputs"][0]["name"])
    table = next((t for t in resource["outputs"] if t["name"] == name), None)
    if table is None:
        raise ValueError(f"no output table {name}")
    columns = []
    for column in change["columns"]:
        if not isinstance(column, list) or len(column) != 3:
            raise ValueError("each column is [name, type, source type]")
        columns.append({"name": column[0], "type": column[1], "source": {"name": "PG", "type": column[2]}})
    rows = change.get("rows", [])
    if not isinstance(rows, list) or any(not isinstance(r, list) or len(r) != len(columns) for r in rows):
        raise ValueError("each row is a list of one value per column")
    table["columns"] = columns
    table["rows"] = [list(r) for r in rows]


def wants_gzip(accept_encoding):
    """Whether an Accept-Encoding value accepts gzip (RFC 9110 §12.5.3): named, or `*`, with
    a weight above 0."""
    for item in (accept_encoding or "").split(","):
        name, _, params = item.partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if name.strip().lower() in ("gzip", "x-gzip", "*") and weight > 0:
            return True
    return False


def gzipped(pieces):
    """The pieces compressed as one gzip stream, level 6, flushed every piece."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    for piece in pieces:
        out = compressor.compress(piece)
        if out:
            yield out
    yield compressor.flush()


class Body:
    """An answer body: bytes in memory or a file on disk, read in chunks from an offset."""

    length = 0

    def chunks(self, offset, size):
        raise NotImplementedError


class BytesBody(Body):
    def __init__(self, data):
        self.data = data
        self.length = len(data)

    def chunks(self, offset, size):
        for start in range(offset, self.length, size):
            yield self.data[start:start + size]


class FileBody(Body):
    def __init__(self, path):
        self.path = path
        self.length = os.path.getsize(path)

    def chunks(self, offset, size):
        with open(self.path, "rb") as f:
            f.seek(offset)
            while True:
                piece = f.read(max(size, 1 << 20) if size >= 65536 else size)
                if not piece:
                    return
                yield piece


START_TIME = time.time()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that goes away mid-answer (killed, cancelled) is routine here, not an error."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def load_users(args):
    users = {}
    if args.users:
        with open(args.users, encoding="utf-8") as f:
            for entry in json.load(f)["users"]:
                users[entry["username"]] = entry["password"]
    for spec in args.user or []:
        name, _, password = spec.partition(":")
        users[name] = password
    return users


def main(argv=None):
    parser = argparse.ArgumentParser(description="Local emulator of the mobile platform server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--resources", default=os.path.join(HERE, "resources.json"))
    parser.add_argument("--users", default=os.path.join(HERE, "users.json"), help="JSON file: {\"users\": [{\"username\", \"password\"}]}")
    parser.add_argument("--user", action="append", help="NAME:PASSWORD, may repeat")
    parser.add_argument("--token-lifetime", type=int, default=None, help="seconds until tokens expire")
    parser.add_argument("--fault", action="append", default=[], help="a fault rule as JSON (see faults.py), may repeat")
    parser.add_argument("--generate", action="append", default=[], help="NAME:ROWS, a generated resource of 8 mixed-type columns")
    parser.add_argument("--cache-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "dray-emulator-cache"),
                        help="where generated answers are rendered once and kept")
    parser.add_argument("--files", default=None,
                        help="folder served as the file connections, one subfolder each, changed in place "
                             "(default: a fresh copy of Emulator/files)")
    parser.add_argument("--tls-cert", help="PEM certificate: serve HTTPS (with --tls-key)")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes (tests hold it open)")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    with open(args.resources, encoding="utf-8") as f:
        config = json.load(f)
    generate = []
    for spec in args.generate:
        name, _, rows = spec.partition(":")
        generate.append((name, int(rows)))
    Handler.platform = Platform(config, load_users(args), args.token_lifetime, generate, args.cache_dir, args.files)
    for rule in args.fault:
        Handler.platform.faults.add(json.loads(rule))
    server = Server((args.host, args.port), Handler)
    server.verbose = args.verbose
    server.tls = bool(args.tls_cert)
    if server.tls:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    host, port = server.server_address[:2]
    print(f"dray-emulator listening on {'https' if server.tls else 'http'}://{host}:{port}/", flush=True)
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
