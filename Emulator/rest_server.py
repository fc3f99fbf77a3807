#!/usr/bin/env python3
"""A small REST API for the `http` step's tests and examples (docs/http.md).

Python 3 standard library only. Start it on a free port and read the address from the
first line it prints:

    $ python3 Emulator/rest_server.py --port 0
    dray-rest-server listening on http://127.0.0.1:40123/

It plays the REST client sample's test server: images kept in an SQLite table, created
with POST (JSON or form body; a missing title is a 422 whose body lists the errors), read
with GET, replaced with PATCH or PUT, removed with DELETE (after which GET is a 404). And
it serves one list of items paginated every way the step follows:

    GET /items?page=N&per_page=M         {"data": [...], "links": {"next": "/items?page=2&per_page=M" | null}}
    GET /link/items?page=N&per_page=M    [...] with  Link: <http://.../link/items?page=2&per_page=M>; rel="next"
    GET /offset/items?offset=K&limit=M   {"items": [...], "total": T}
    GET /cursor/items?cursor=C&limit=M   {"results": [...], "meta": {"next_cursor": "..." | null}}
    GET /catalog.xml?page=N&per_page=M   <catalog><item id="1">...</item>...<next>/catalog.xml?page=2...</next></catalog>

Item i (1-based) is {"id": i, "name": "item-i", "price": ..., "code": ..., "active": ...,
"note": ..., "tags": [...]}: prices mix integers and decimals, codes mix numbers and text,
notes are mostly null, so that column inference has something to do.

With --token, every call outside /admin/ needs `Authorization: Bearer <token>`; with
--user NAME:PASSWORD, HTTP basic credentials are accepted too. Otherwise a 401.

And a resource that changes between runs, for incremental loads: orders whose records
have ids and an `updated_at` that only grows (a logical clock: 2024-01-01T00:00:00Z plus one
second a change), filtered by "changed since" and paged by page number:

    GET /orders?updated_since=T&page=N&per_page=M
        {"data": [...], "has_more": true|false, "links": {"next": "/orders?updated_since=T&page=N+1&per_page=M" | null}}

holds the orders changed after T (exclusive; all without it), oldest change first (then by
id). The live orders also page by the last id seen, as Stripe's lists do:

    GET /stripe/orders?starting_after=ID&limit=M    {"data": [...], "has_more": true|false}

(a starting_after sent twice counts by its first value), and through a GraphQL-style POST whose cursor travels in the JSON body:

    POST /graphql  {"query": "...", "variables": {"first": M, "after": CURSOR | null}}
        {"data": {"orders": {"nodes": [...], "pageInfo": {"hasNextPage": true|false, "endCursor": "..." | null}}}}
 Deleted orders stay as {"id": ..., "deleted": true, "updated_at": ...}.
updated_since compares as an instant (RFC 3339, at full precision); POST /admin/orders/mode
{"boundary": "inclusive"} makes it >= (exclusive, >, by default), {"nanos": true} ticks the
clock by one nanosecond and writes nine fraction digits, {"reset": true} empties the orders
and restarts the clock, {"before_page": {"page": 2, "change": {...}}} applies a change once,
just before the next request for that page is answered (a record changed while a pull is
between its pages). A change with "burst": true gives all it inserts, updates and deletes
one updated_at; an inserted order's own "updated_at" is kept (a record arriving late at a
value already given). GET /admin/orders/all lists every order, deleted ones too. Each logged
request of /orders also lists the ids it answered ("records"). --orders N starts with N.

And a parent/child pair for fan-outs (docs/partitions.md): --repos N repositories (24 by
default), each with --issues K issues (6 by default), paged by page number:

    GET /repos?page=N&per_page=M              {"data": [{"id": 1, "name": "repo-1"}, ...], "links": {"next": ... | null}}
    GET /repos/ID/issues?page=N&per_page=M    {"data": [{"id": ID*1000+k, "repo": ID, "title": "..."}, ...], "links": {"next": ... | null}}

(an unknown repository is a 404), and an echo for placeholders: any method on /echo/...
answers {"data": [{"path": ..., "query": {...}, "tag": X-Tag header, "body": ...}]}, the
path percent-decoded. --answer-delay SECONDS delays every answer outside /admin/ (a slow
API, for the fan-out benchmark). --rate-limit K answers 429 (Retry-After: 1) to a request
outside /admin/ when K requests were answered otherwise in the second before it (a sliding
window of 1 s; a refused request does not count), for the request budget (docs/http.md);
with --rate-limit-headers each answer says so: X-RateLimit-Limit: K, X-RateLimit-Remaining
(what is left after it) and X-RateLimit-Reset (whole seconds until the whole K is left again);
with --rate-limit-policy current|old each answer states only its policy, in the IETF draft's
RateLimit-Policy field: "default";q=K;w=1 (the current draft) or K;w=1 (older drafts).

Test helpers under /admin/ (no credentials):
    GET  /admin/orders     the live orders (not deleted), by id
    POST /admin/orders     changes them, each change a tick of the clock, in this order:
                           {"insert": 3} or {"insert": [{"customer": "x", ...}]},
                           {"update": [2, 5], "set": {"status": "paid", "coupon": "X"}},
                           {"delete": [1]} (the order becomes a tombstone {"id", "deleted": true,
                           "updated_at"}, plus the fields of "tombstone": {"deleted_at": "..."})
    GET  /admin/requests   the requests received (method, path with query, headers, body), oldest first
    POST /admin/reset      clears that log
    POST /admin/rules      replaces the rules with a JSON list of rule objects ([{...}, ...];
                           anything else is a 400 and leaves the rules as they were); each rule matches a path and
                           optionally query parameters, and either delays the answer or
                           answers a status a number of times:
                           {"path": "/items", "query": {"page": "3"}, "delay": 30}
                           {"path": "/items", "status": 503, "times": 1, "headers": {"Retry-After": "0"}, "body": "busy"}
                           A status rule may echo what it was sent, the way careless servers
                           do, each form after the body: "echo": ["json_ascii", "json_php",
                           "quote_plus", "quote_lower", "authorization", "authorization_json"]
                           (the request's fields as Python's json.dumps, PHP's json_encode,
                           Python's urlencode with upper- or lower-case escapes; the
                           Authorization header as decoded as Latin-1, as is or json.dumps'd);
                           "each_" and an encoding of faults.ENCODINGS ("each_html",
                           "each_base64", ...) writes each field's value and the bearer token
                           in that encoding, and "basic" base64(user:password) of the fields.
                           "big_header": N adds a header X-Big of N bytes (libcurl refuses
                           one over 100 KB).
                           {"path": "/items", "query": {"page": "2"}, "hang": true} reads the
                           request and never answers (until the client goes away).
                           {"path": "/items", "close_delimited": true, "cut_after": 40, "times": 1}
                           answers without Content-Length, ended only by closing the
                           connection (HTTP/1.0 style), after `cut_after` body bytes when given.
                           {"path": "/items", "validators": true} gives each 200 answer to a GET
                           an ETag (of its body) and a Last-Modified (when the items last
                           changed), and answers 304 Not Modified, without a body, to an
                           If-None-Match naming that ETag or, without one, to an
                           If-Modified-Since at or after Last-Modified (RFC 9110 §13.1).
                           {"path": "/items", "ranges": true} gives each 200 answer to a GET a
                           strong ETag (of its uncompressed body) and answers a Range of
                           bytes=N- whose If-Range names it (or that has none) with 206 and
                           the rest of the body (RFC 9110 §14.2, §13.1.5).
                           {"path": "/items", "rate": 12000000} sends the body at that many
                           bytes a second, in pieces of about 1/20 s (a slow network).
                           {"path": "/items", "close_after": 9000, "times": 1} announces the
                           whole body's Content-Length and closes the connection after that
                           many body bytes (a connection broken mid-answer). These three
                           combine in one rule.
                           {"path": "/items", "hold": true, "times": 1} holds the request
                           (logged) until POST /admin/release, then answers it by the
                           rule's other settings: a test changes something while a client
                           waits for its answer, with no clock involved.
    GET  /admin/held       waits (up to 60 s) until a request is held (?at_least=N: N requests), answers {"held": N}
    POST /admin/release    lets every held request go on
    POST /admin/items      {"count": N} changes the number of items (and Last-Modified)

Compression is not a rule: an answer with a body goes out gzip-compressed (Content-Encoding:
gzip, its Content-Length the compressed size, Vary: Accept-Encoding) when the request's
Accept-Encoding names gzip. Each logged request records the status, "content_encoding" and
the body bytes sent ("response_bytes").
"""

import argparse
import math
import base64
import datetime
import email.utils
import gzip
import hashlib
import json
import os
import re
import select
import signal
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from faults import encoded


def item(i):
    return {
        "id": i,
        "name": f"item-{i}",
        "price": i * 2 if i % 2 == 0 else i + 0.5,
        "code": i if i % 3 == 0 else f"C-{i}",
        "active": i % 4 != 0,
        "note": f"note {i}" if i % 5 == 0 else None,
        "tags": ["even" if i % 2 == 0 else "odd"],
    }


class State:
    def __init__(self, items, token, users):
        self.items = items
        self.token = token
        self.users = users
        self.lock = threading.Lock()
        self.requests = []
        # Requests held by a "hold" rule: numbered as they arrive; those up to `released`
        # go on.
        self.hold = threading.Condition()
        self.held = 0
        self.released = 0
        self.rules = []
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE TABLE images(id INTEGER PRIMARY KEY, title TEXT NOT NULL, url TEXT, width INTEGER)")

        self.clock = 0
        self.orders = {}
        # POST /admin/orders/mode: what updated_since means (exclusive: >, inclusive: >=),
        # nanosecond timestamps, a change made before a page is answered; a burst's one value.
        self.boundary, self.nanos, self.before_page, self.burst_value = "exclusive", False, None, None
        self.repos, self.issues, self.answer_delay = 24, 6, 0
        # --rate-limit: at most this many requests a second (None: no limit), and when
        # those let through came (time.monotonic()).
        self.rate_limit, self.let_through, self.rate_limit_headers = None, [], False
        self.rate_limit_policy = None
        # When the items last changed, for Last-Modified (whole seconds, RFC 9110 §8.8.2).
        self.items_modified = int(time.time()) - 60

    def tick(self):
        if self.burst_value is not None:
            return self.burst_value
        self.clock += 1
        if self.nanos:
            # Nanosecond ticks from 2024-01-01T00:00:00Z, always nine fraction digits.
            seconds, nanos = divmod(self.clock, 1_000_000_000)
            t = time.gmtime(1704067200 + seconds)
            return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{nanos:09d}Z"
        t = time.gmtime(1704067200 + self.clock)
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)

    def change_orders(self, change):
        """Applies one change of POST /admin/orders (the lock held)."""
        self.burst_value = self.tick() if change.get("burst") else None
        inserts = change.get("insert", 0)
        for fields in ([{}] * inserts if isinstance(inserts, int) else inserts):
            self.insert_order(fields)
        for oid in change.get("update", []):
            self.orders[oid].update(change.get("set", {}))
            self.orders[oid]["updated_at"] = self.tick()
        for oid in change.get("delete", []):
            self.orders[oid] = {"id": oid, "deleted": True, "updated_at": self.tick()} | change.get("tombstone", {})
        self.burst_value = None

    def insert_order(self, fields=None):
        oid = max(self.orders, default=0) + 1
        record = {"id": oid, "customer": f"customer-{oid}", "total": oid * 10 + 0.5, "status": "new"}
        record.update(fields or {})
        if "updated_at" not in (fields or {}):
            record["updated_at"] = self.tick()
        self.orders[oid] = record

    def page(self, offset, limit):
        return [item(i) for i in range(offset + 1, min(offset + limit, self.items) + 1)]


def instant(text):
    """(seconds since the epoch, nanoseconds) of an RFC 3339 date-time in UTC or with an
    offset; None for other text. Compares at full precision, never through a float."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)", text or "")
    if not m:
        return None
    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or "")[:9].ljust(9, "0")
    offset = 0 if m.group(8) in ("Z", "z") else (int(m.group(8)[1:3]) * 60 + int(m.group(8)[4:6])) * 60 * (1 if m.group(8)[0] == "+" else -1)
    days = (datetime.date(y, mo, d) - datetime.date(1970, 1, 1)).days
    return (days * 86400 + h * 3600 + mi * 60 + sec - offset, int(fraction))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY on each connection, as production servers set it: the handler writes an
    # answer's head and its body separately, and with Nagle's algorithm the body waited for
    # the client's delayed ACK of the head, 40 ms an answer on Linux.
    disable_nagle_algorithm = True
    state = None

    def log_message(self, fmt, *args):
        pass

    # MARK: plumbing

    framing = None  # the matching rule, when it sets close_delimited

    validators = False  # the matching rule sets validators

    shaping = None  # the matching rule, for ranges, rate and close_after

    def send(self, status, body=b"", content_type="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        headers.update(getattr(self, "limit_headers", None) or {})
        if self.validators and status == 200 and self.command == "GET":
            headers["ETag"] = '"%s"' % hashlib.sha256(body).hexdigest()[:32]
            modified = self.state.items_modified
            headers["Last-Modified"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(modified))
            if self.not_modified(headers["ETag"], modified):
                status, body = 304, b""
        shaping = self.shaping or {}
        if shaping.get("ranges") and status == 200 and self.command == "GET" and body:
            etag = '"r%s"' % hashlib.sha256(body).hexdigest()[:32]
            headers["ETag"] = etag
            headers["Accept-Ranges"] = "bytes"
            wanted = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if wanted and self.headers.get("If-Range", etag) == etag and int(wanted.group(1)) < len(body):
                start = int(wanted.group(1))
                headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
                status, body = 206, body[start:]
        entry = getattr(self, "entry", None)
        if entry is not None:
            entry["status"] = status
        if body and "gzip" in (self.headers.get("Accept-Encoding") or "").lower():
            body = gzip.compress(body, 6)
            headers["Content-Encoding"] = "gzip"
            headers["Vary"] = "Accept-Encoding"
            if entry is not None:
                entry["content_encoding"] = "gzip"
        if entry is not None:
            entry["response_bytes"] = len(body)
        self.send_response(status)
        if body:
            self.send_header("Content-Type", content_type)
        if self.framing is not None:
            self.send_header("Connection", "close")
            self.close_connection = True
            if self.framing.get("cut_after") is not None:
                body = body[:int(self.framing["cut_after"])]
        else:
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if shaping.get("close_after") is not None:
            body = body[:int(shaping["close_after"])]
            self.close_connection = True
        if not shaping.get("rate"):
            self.wfile.write(body)
            return
        # Pieces of about 1/20 s (512 bytes to 64 KiB), each sent once its time has come.
        started, rate = time.monotonic(), float(shaping["rate"])
        piece = max(512, min(65536, int(rate / 20)))
        for at in range(0, len(body), piece):
            ahead = started + at / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            self.wfile.write(body[at:at + piece])

    def not_modified(self, etag, modified):
        """Whether the request's preconditions say the client holds this answer (RFC 9110
        §13.2.2: If-None-Match decides when present, else If-Modified-Since)."""
        match = self.headers.get("If-None-Match")
        if match is not None:
            tags = [t.strip() for t in match.split(",")]
            return "*" in tags or etag in tags or ("W/" + etag) in tags
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                return email.utils.parsedate_to_datetime(since).timestamp() >= modified
            except (TypeError, ValueError):
                return False
        return False

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def fields(self, raw):
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if kind == "application/x-www-form-urlencoded":
            return {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode(), keep_blank_values=True).items()}
        try:
            value = json.loads(raw or b"{}")
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def authorized(self):
        st = self.state
        if st.token is None and not st.users:
            return True
        given = self.headers.get("Authorization") or ""
        if st.token is not None and given == f"Bearer {st.token}":
            return True
        if given.startswith("Basic "):
            try:
                name, _, password = base64.b64decode(given[6:]).decode().partition(":")
            except ValueError:
                return False
            return st.users.get(name) == password and name in st.users
        return False

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        raw = self.body()
        st = self.state
        self.framing = None
        self.validators = False
        self.shaping = None
        self.entry = None
        self.limit_headers = None
        if url.path.startswith("/admin/"):
            return self.admin(url.path, raw)
        with st.lock:
            self.entry = {
                "method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                "body": raw.decode("utf-8", "replace"), "time": time.time(),
            }
            st.requests.append(self.entry)
            rule = self.matching_rule(url.path, query)
            refused = False
            if st.rate_limit is not None:
                now = time.monotonic()
                st.let_through = [t for t in st.let_through if t > now - 1.0]
                refused = len(st.let_through) >= st.rate_limit
                if not refused:
                    st.let_through.append(now)
                if st.rate_limit_headers:
                    left = st.rate_limit - len(st.let_through)
                    # Whole seconds until every request of the window has left it: the
                    # quota is whole again.
                    reset = math.ceil(st.let_through[-1] + 1.0 - now) if st.let_through else 0
                    self.limit_headers = {"X-RateLimit-Limit": str(st.rate_limit), "X-RateLimit-Remaining": str(left),
                                          "X-RateLimit-Reset": str(reset)}
                if st.rate_limit_policy:
                    policy = f'"default";q={st.rate_limit};w=1' if st.rate_limit_policy == "current" else f"{st.rate_limit};w=1"
                    self.limit_headers = dict(self.limit_headers or {}, **{"RateLimit-Policy": policy})
        if refused:
            return self.send(429, {"error": "too many requests"}, headers={"Retry-After": "1"})
        if st.answer_delay:
            time.sleep(st.answer_delay)
        if rule is not None:
            if rule.get("hang"):
                return self.hang()
            if rule.get("hold"):
                with st.hold:
                    st.held += 1
                    ticket = st.held
                    st.hold.notify_all()
                    st.hold.wait_for(lambda: st.released >= ticket, timeout=60)
            if rule.get("close_delimited"):
                self.framing = rule
            self.validators = bool(rule.get("validators"))
            self.shaping = rule
            if rule.get("delay"):
                time.sleep(rule["delay"])
            if rule.get("status"):
                body = rule.get("body", "") + "".join("; " + self.echo(form, raw) for form in rule.get("echo", []))
                headers = dict(rule.get("headers") or {})
                if rule.get("big_header"):
                    headers["X-Big"] = "b" * int(rule["big_header"])
                return self.send(rule["status"], body, "text/plain", headers)
        if not self.authorized():
            return self.send(401, {"error": "unauthorized"}, headers={"WWW-Authenticate": 'Bearer realm="dray"'})
        route = getattr(self, "route_" + url.path.strip("/").replace("/", "_").replace(".", "_"), None)
        if url.path.startswith("/images"):
            return self.images(url.path, raw)
        if url.path.startswith("/echo"):
            return self.echo_request(url, query, raw)
        if url.path.startswith("/repos/") and url.path.endswith("/issues") and self.command == "GET":
            return self.repo_issues(url.path.split("/")[2], query)
        if url.path == "/graphql" and self.command == "POST":
            return self.graphql(raw)
        if route is None or self.command != "GET":
            return self.send(404, {"error": f"no route {self.command} {url.path}"})
        return route(query)

    def hang(self):
        """Answers nothing until the client closes the connection (or 10 minutes pass)."""
        self.close_connection = True
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.connection], [], [], 0.2)
            if ready:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return
                except OSError:
                    return
                time.sleep(0.2)

    def echo(self, form, raw):
        """The request in one of the forms servers echo secrets in (see the docstring)."""
        fields = self.fields(raw) or {}
        # http.server decodes header values as Latin-1, whatever bytes were sent.
        authorization = self.headers.get("Authorization") or ""
        if form == "json_ascii":
            return json.dumps(fields)
        if form == "json_php":
            return json.dumps(fields).replace("/", "\\/")
        if form == "quote_plus":
            return urllib.parse.urlencode(fields)
        if form == "quote_lower":
            return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.urlencode(fields))
        if form == "authorization":
            return "you sent " + authorization
        if form == "authorization_json":
            return json.dumps({"authorization": authorization})
        if form == "basic":
            return encoded("base64", "%s:%s" % (fields.get("user", ""), fields.get("password", "")))
        if form.startswith("each_"):
            values = [v for v in fields.values() if isinstance(v, str)]
            values += [authorization[7:]] if authorization.startswith("Bearer ") else []
            return "; ".join(encoded(form[len("each_"):], v) for v in values)
        return "no echo form " + form

    def matching_rule(self, path, query):
        for rule in self.state.rules:
            if rule.get("path") != path:
                continue
            if any(query.get(k) != str(v) for k, v in (rule.get("query") or {}).items()):
                continue
            if "times" in rule:
                if rule["times"] <= 0:
                    continue
                rule["times"] -= 1
            return rule
        return None

    def admin(self, path, raw):
        st = self.state
        if path == "/admin/requests" and self.command == "GET":
            with st.lock:
                return self.send(200, list(st.requests))
        if path == "/admin/reset" and self.command == "POST":
            with st.lock:
                st.requests.clear()
            return self.send(204)
        if path == "/admin/items" and self.command == "POST":
            with st.lock:
                st.items = int(json.loads(raw)["count"])
                st.items_modified = int(time.time())
            return self.send(204)
        if path == "/admin/orders" and self.command == "GET":
            with st.lock:
                return self.send(200, [o for _, o in sorted(st.orders.items()) if not o.get("deleted")])
        if path == "/admin/orders" and self.command == "POST":
            change = json.loads(raw or b"{}")
            with st.lock:
                st.change_orders(change)
            return self.send(204)
        if path == "/admin/orders/all" and self.command == "GET":
            with st.lock:
                return self.send(200, [o for _, o in sorted(st.orders.items())])
        if path == "/admin/orders/mode" and self.command == "POST":
            mode = json.loads(raw or b"{}")
            with st.lock:
                if mode.get("reset"):
                    st.orders, st.clock = {}, 0
                st.boundary = mode.get("boundary", st.boundary)
                st.nanos = mode.get("nanos", st.nanos)
                st.before_page = mode.get("before_page")
            return self.send(204)
        if path == "/admin/held" and self.command == "GET":
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            least = int(query.get("at_least", ["1"])[0])
            with st.hold:
                st.hold.wait_for(lambda: st.held - st.released >= least, timeout=60)
                return self.send(200, {"held": st.held - st.released})
        if path == "/admin/release" and self.command == "POST":
            with st.hold:
                st.released = st.held
                st.hold.notify_all()
            return self.send(204)
        if path == "/admin/rules" and self.command == "POST":
            # A list of rule objects, nothing else: a lone object would be iterated as its keys
            # and break every later request.
            try:
                rules = json.loads(raw or b"[]")
            except ValueError as error:
                return self.send(400, {"error": f"/admin/rules takes a JSON list of rules: the body is not JSON ({error})"})
            if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
                kinds = {dict: "an object (put it in a list: [{...}])", list: "a list holding something other than objects",
                         str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}
                got = kinds.get(type(rules), type(rules).__name__)
                return self.send(400, {
                    "error": f"/admin/rules takes a JSON list of rule objects, e.g. [{{\"path\": \"/items\", \"delay\": 3}}]; "
                    f"got {got}, so the rules are unchanged"})
            with st.lock:
                st.rules = rules
            return self.send(204)
        return self.send(404, {"error": "no such admin call"})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    # MARK: paginated lists

    def ints(self, query, name, default):
        try:
            return max(0, int(query.get(name, default)))
        except ValueError:
            return default

    def route_items(self, query):
        page, per = max(1, self.ints(query, "page", 1)), max(1, self.ints(query, "per_page", 10))
        data = self.state.page((page - 1) * per, per)
        more = page * per < self.state.items
        nxt = f"/items?page={page + 1}&per_page={per}" if more else None
        return self.send(200, {"data": data, "links": {"next": nxt}, "meta": {"page": page, "total": self.state.items}})

    def paged(self, path, records, query):
        page, per = max(1, self.ints(query, "page", 1)), max(1, self.ints(query, "per_page", 10))
        data = records[(page - 1) * per:page * per]
        nxt = f"{path}?page={page + 1}&per_page={per}" if page * per < len(records) else None
        return self.send(200, {"data": data, "links": {"next": nxt}})

    def route_repos(self, query):
        repos = [{"id": i, "name": f"repo-{i}"} for i in range(1, self.state.repos + 1)]
        return self.paged("/repos", repos, query)

    def repo_issues(self, rid, query):
        if not rid.isdigit() or not 1 <= int(rid) <= self.state.repos:
            return self.send(404, {"error": f"no repository {rid}"})
        r = int(rid)
        issues = [{"id": r * 1000 + k, "repo": r, "title": f"issue {k} of repo-{r}"} for k in range(1, self.state.issues + 1)]
        return self.paged(f"/repos/{r}/issues", issues, query)

    def echo_request(self, url, query, raw):
        record = {
            "path": urllib.parse.unquote(url.path), "query": query, "tag": self.headers.get("X-Tag"),
            "body": raw.decode("utf-8", "replace"),
        }
        return self.send(200, {"data": [record]})

    def route_link_items(self, query):
        page, per = max(1, self.ints(query, "page", 1)), max(1, self.ints(query, "per_page", 10))
        data = self.state.page((page - 1) * per, per)
        host = self.headers.get("Host")
        links = [f'<http://{host}/link/items?page=1&per_page={per}>; rel="first"']
        if page * per < self.state.items:
            links.insert(0, f'<http://{host}/link/items?page={page + 1}&per_page={per}>; rel="next"')
        return self.send(200, data, headers={"Link": ", ".join(links)})

    def route_offset_items(self, query):
        offset, limit = self.ints(query, "offset", 0), max(1, self.ints(query, "limit", 10))
        return self.send(200, {"items": self.state.page(offset, limit), "total": self.state.items})

    def route_cursor_items(self, query):
        limit = max(1, self.ints(query, "limit", 10))
        cursor = query.get("cursor")
        offset = int(base64.urlsafe_b64decode(cursor.encode()).decode().split(":")[1]) if cursor else 0
        data = self.state.page(offset, limit)
        end = offset + len(data)
        nxt = base64.urlsafe_b64encode(f"after:{end}".encode()).decode() if end < self.state.items else None
        return self.send(200, {"results": data, "meta": {"next_cursor": nxt}})

    def route_orders(self, query):
        page, per = max(1, self.ints(query, "page", 1)), max(1, self.ints(query, "per_page", 10))
        since = query.get("updated_since")
        with self.state.lock:
            st = self.state
            if st.before_page and st.before_page.get("page") == page:
                st.change_orders(st.before_page.get("change", {}))
                st.before_page = None
            # Instants compare as instants; other text (a test's odd value) as text.
            order = lambda text: instant(text) or (0, 0, text)
            low = order(since) if since is not None else None
            if st.boundary == "inclusive":
                keep = lambda o: low is None or order(o["updated_at"]) >= low
            else:
                keep = lambda o: low is None or order(o["updated_at"]) > low
            changed = sorted(
                (dict(o) for o in st.orders.values() if keep(o)),
                key=lambda o: (order(o["updated_at"]), o["id"]))
            data = changed[(page - 1) * per:page * per]
            self.entry["records"] = [o["id"] for o in data]
        more = page * per < len(changed)
        params = ({"updated_since": since} if since is not None else {}) | {"page": page + 1, "per_page": per}
        nxt = "/orders?" + urllib.parse.urlencode(params) if more else None
        return self.send(200, {"data": data, "has_more": more, "links": {"next": nxt}})

    def route_stripe_orders(self, query):
        limit = max(1, self.ints(query, "limit", 10))
        # A repeated parameter counts by its first value, as Go's url.Values.Get reads one:
        # a client that sends starting_after twice gets the page of the first.
        first = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("starting_after", ["0"])[0]
        after = self.ints({"starting_after": first}, "starting_after", 0)
        with self.state.lock:
            live = [dict(o) for _, o in sorted(self.state.orders.items()) if not o.get("deleted") and o["id"] > after]
        return self.send(200, {"data": live[:limit], "has_more": len(live) > limit})

    def graphql(self, raw):
        variables = (self.fields(raw) or {}).get("variables") or {}
        first = max(1, int(variables.get("first") or 10))
        after = int(base64.urlsafe_b64decode(variables["after"].encode()).decode()) if variables.get("after") else 0
        with self.state.lock:
            live = [dict(o) for _, o in sorted(self.state.orders.items()) if not o.get("deleted") and o["id"] > after]
        nodes = live[:first]
        end = base64.urlsafe_b64encode(str(nodes[-1]["id"]).encode()).decode() if nodes else None
        info = {"hasNextPage": len(live) > first, "endCursor": end}
        return self.send(200, {"data": {"orders": {"nodes": nodes, "pageInfo": info}}})

    def route_catalog_xml(self, query):
        page, per = max(1, self.ints(query, "page", 1)), max(1, self.ints(query, "per_page", 10))
        out = ['<?xml version="1.0" encoding="UTF-8"?>', f'<catalog xmlns="urn:dray:catalog" page="{page}">']
        for it in self.state.page((page - 1) * per, per):
            note = f"<note>{it['note']}</note>" if it["note"] else "<note/>"
            tags = "".join(f"<tag>{t}</tag>" for t in it["tags"])
            out.append(
                f'  <item id="{it["id"]}" active="{str(it["active"]).lower()}">'
                f'<name>{it["name"]} &amp; co</name><price>{it["price"]}</price><code>{it["code"]}</code>{note}'
                f"<tags>{tags}</tags></item>")
        if page * per < self.state.items:
            out.append(f"  <next>/catalog.xml?page={page + 1}&amp;per_page={per}</next>")
        out.append("</catalog>")
        return self.send(200, "\n".join(out) + "\n", "application/xml; charset=utf-8")

    # MARK: images, the object endpoint of the REST client sample

    def image(self, row):
        return {"id": row[0], "title": row[1], "url": row[2], "width": row[3]}

    def images(self, path, raw):
        st = self.state
        parts = path.strip("/").split("/")
        if len(parts) == 1:
            if self.command == "GET":
                with st.lock:
                    rows = st.db.execute("SELECT id, title, url, width FROM images ORDER BY id").fetchall()
                return self.send(200, {"images": [self.image(r) for r in rows]})
            if self.command == "POST":
                fields = self.fields(raw)
                if fields is None:
                    return self.send(400, {"error": "the body is not a JSON object"})
                if not fields.get("title"):
                    return self.send(422, {"errors": {"title": ["can't be blank"]}})
                with st.lock:
                    cursor = st.db.execute("INSERT INTO images(title, url, width) VALUES (?,?,?)",
                                           (fields["title"], fields.get("url"), fields.get("width")))
                    row = st.db.execute("SELECT id, title, url, width FROM images WHERE id = ?", (cursor.lastrowid,)).fetchone()
                return self.send(201, self.image(row), headers={"Location": f"/images/{row[0]}"})
            return self.send(405, {"error": "method not allowed"})
        try:
            ident = int(parts[1])
        except ValueError:
            return self.send(404, {"error": f"no image {parts[1]}"})
        with st.lock:
            row = st.db.execute("SELECT id, title, url, width FROM images WHERE id = ?", (ident,)).fetchone()
        if row is None:
            return self.send(404, {"error": f"image {ident} not found"})
        if self.command == "GET":
            return self.send(200, self.image(row))
        if self.command == "DELETE":
            with st.lock:
                st.db.execute("DELETE FROM images WHERE id = ?", (ident,))
            return self.send(204)
        if self.command in ("PATCH", "PUT"):
            fields = self.fields(raw)
            if fields is None:
                return self.send(400, {"error": "the body is not a JSON object"})
            if "title" in fields and not fields["title"]:
                return self.send(422, {"errors": {"title": ["can't be blank"]}})
            current = self.image(row)
            current.update({k: v for k, v in fields.items() if k in ("title", "url", "width")})
            with st.lock:
                st.db.execute("UPDATE images SET title = ?, url = ?, width = ? WHERE id = ?",
                              (current["title"], current["url"], current["width"], ident))
            return self.send(200, current)
        return self.send(405, {"error": "method not allowed"})


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that went away (a killed test run) is not news


def main(argv=None):
    parser = argparse.ArgumentParser(description="A small REST API for dray's http step")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--items", type=int, default=25, help="items in the paginated lists")
    parser.add_argument("--orders", type=int, default=0, help="orders to start with (/orders)")
    parser.add_argument("--token", help="require Authorization: Bearer TOKEN")
    parser.add_argument("--user", action="append", default=[], help="NAME:PASSWORD accepted as basic credentials, may repeat")
    parser.add_argument("--rule", action="append", default=[], help="a rule as JSON (see /admin/rules), may repeat")
    parser.add_argument("--repos", type=int, default=24, help="repositories (/repos)")
    parser.add_argument("--issues", type=int, default=6, help="issues of each repository (/repos/ID/issues)")
    parser.add_argument("--answer-delay", type=float, default=0, help="seconds every answer outside /admin/ waits")
    parser.add_argument("--rate-limit", type=int, help="answer 429 above this many requests in any second")
    parser.add_argument("--rate-limit-headers", action="store_true", help="say the --rate-limit in X-RateLimit-* headers")
    parser.add_argument("--rate-limit-policy", choices=["current", "old"],
                        help="state the --rate-limit in a RateLimit-Policy field, in the current or an older draft's form")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes (tests hold it open)")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    users = dict(spec.partition(":")[::2] for spec in args.user)
    Handler.state = State(args.items, args.token, users)
    Handler.state.rules = [json.loads(r) for r in args.rule]
    Handler.state.rate_limit = args.rate_limit
    Handler.state.rate_limit_headers = args.rate_limit_headers
    Handler.state.rate_limit_policy = args.rate_limit_policy
    Handler.state.repos, Handler.state.issues, Handler.state.answer_delay = args.repos, args.issues, args.answer_delay
    for _ in range(args.orders):
        Handler.state.insert_order()
    server = QuietServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"dray-rest-server listening on http://{host}:{port}/", flush=True)
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
