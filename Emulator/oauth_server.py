#!/usr/bin/env python3
"""An OAuth 2.0 token endpoint and a protected API, for the tests of the `http` step's
`auth.oauth2` (docs/auth.md). Python 3 standard library only.

    $ python3 Emulator/oauth_server.py --port 0 --client app:s3cret --refresh-token RT0
    dray-oauth-server listening on http://127.0.0.1:40123/

POST /token (application/x-www-form-urlencoded, RFC 6749 §4.4.2 and §6):
    the client authenticates with HTTP Basic (RFC 6749 §2.3.1, id and secret form-encoded)
    or with client_id and client_secret in the body, as --client-auth allows (basic, body
    or any); a wrong one is a 401 invalid_client.
    grant_type=client_credentials: a new access token.
    grant_type=refresh_token: the refresh token must be the newest of its family; the answer
    carries a new access token and a new refresh token (rotated on every use, OAuth 2.0
    Security BCP §4.14.2). An older token of the family is refused with invalid_grant and
    revokes the whole family: its newest token is refused from then on too.
    Access tokens live --lifetime seconds (2 by default), by the server's clock.

GET /items?page=N: with a live access token (Authorization: Bearer), page N of --pages
    pages of --per-page items, each answer after --page-delay seconds:
    {"data": [{"id": ..., "page": N}], "next": "/items?page=N+1" | null}
    An expired or unknown token is a 401 with WWW-Authenticate. With --api-key KEY, the
    header `X-API-Key: KEY` or the query parameter `api_key=KEY` is accepted instead.

POST /login (application/json or application/x-www-form-urlencoded, with --user NAME:PASSWORD):
    a login flow that hands out a session token for a user and password:
    {"data": {"session": "st-...", "expires": LIFETIME}}. A wrong user or password is a 401
    {"error": "invalid_credentials", "message": ...} whose message echoes the password sent;
    a body without both fields a 400.
    Session tokens live --lifetime seconds too, and /items takes them as a bearer token or
    in the header X-Session (the bare token).

Test helpers under /admin/:
    GET  /admin/stats   {"token_requests": [...each grant and its outcome...],
                         "api_requests": n, "api_401": n, "revoked": bool,
                         "newest_refresh_token": "...", "access_tokens": [...]}
    POST /admin/mode    {"mode": "html" | "no_access_token" | "no_expires_in" |
                         "absurd_expires_in" | "invalid_client" | "normal" |
                         "numeric_access_token" | "numeric_token_type" (a number where
                         RFC 6749 has a string) | "huge_expires_in" (1e100, the login's too) |
                         "fractional_expires_in" (lifetime + 0.5) | "text_expires_in" (the token
                         endpoint's and the login's: "html", "no_access_token" (no session
                         token), "no_expires_in", "absurd_expires_in", and "bad_request": a
                         400 to every login),
                         "reject_next": n (the next n API requests answer 401 whatever the token);
                         "header_injection": the access and session tokens handed out end in
                         "\\r\\nX-Injected: 1", a tampered answer that must never reach the wire}
    POST /admin/mode    {"redirect": {"status": 307 | 308, "location": URL} | null}: /token and
                         /login answer that redirect, without reading the request (a 307 or
                         308 asks to send the same body to URL: another origin, such as a
                         second instance of this server, must never receive credentials).
                         Any other POST is recorded in "other_posts" ({"path", "body"}).
    POST /admin/family  {"refresh_token": "..."}: a person authorised again: a new family
                         whose newest token is this one.
"""

import argparse
import base64
import json
import os
import secrets
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.client_id, _, self.client_secret = args.client.partition(":")
        self.client_auth = args.client_auth
        self.lifetime = args.lifetime
        self.pages = args.pages
        self.per_page = args.per_page
        self.page_delay = args.page_delay
        self.token_delay = args.token_delay
        self.access = {}  # token -> expiry (monotonic)
        self.issued_access = []
        # Refresh-token families: token -> family id; family -> newest token.
        self.family_of = {}
        self.newest = {}
        self.revoked = set()
        self.token_requests = []
        self.api_requests = 0
        self.api_401 = 0
        self.mode = "normal"
        self.reject_next = 0
        self.api_key = args.api_key
        self.api_paths = []
        self.login_user = args.user
        self.login_requests = []
        self.redirect = None
        self.other_posts = []
        if args.refresh_token:
            self.new_family(args.refresh_token)

    def new_family(self, token):
        family = len(self.newest) + 1
        self.family_of[token] = family
        self.newest[family] = token


class Handler(BaseHTTPRequestHandler):
    state = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        body = self.body()
        if path in ("/token", "/login") and self.state.redirect:
            with self.state.lock:
                redirect = self.state.redirect
            return self.send(redirect["status"], {"moved": redirect["location"]}, headers={"Location": redirect["location"]})
        if path == "/token":
            return self.token(body)
        if path == "/login":
            return self.login(body)
        if path == "/admin/mode":
            spec = json.loads(body or b"{}")
            with self.state.lock:
                self.state.mode = spec.get("mode", self.state.mode)
                self.state.reject_next = spec.get("reject_next", self.state.reject_next)
                self.state.redirect = spec.get("redirect", self.state.redirect)
            return self.send(200, {"ok": True})
        if path == "/admin/family":
            spec = json.loads(body)
            with self.state.lock:
                self.state.new_family(spec["refresh_token"])
            return self.send(200, {"ok": True})
        with self.state.lock:
            self.state.other_posts.append({"path": path, "body": body.decode("utf-8", "replace")})
        self.send(404, {"error": "not found"})

    def error(self, status, code, description, record):
        record["outcome"] = code
        headers = {"WWW-Authenticate": 'Basic realm="token"'} if status == 401 else None
        self.send(status, {"error": code, "error_description": description}, headers=headers)

    def token(self, body):
        state = self.state
        form = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        record = {"grant_type": form.get("grant_type"), "client_auth": None, "at": time.time()}
        if state.token_delay:
            time.sleep(state.token_delay)
        with state.lock:
            state.token_requests.append(record)
            basic = self.headers.get("Authorization", "")
            if basic.startswith("Basic "):
                decoded = base64.b64decode(basic[6:]).decode()
                cid, _, secret = decoded.partition(":")
                cid, secret = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(secret)
                record["client_auth"] = "basic"
            else:
                cid, secret = form.get("client_id"), form.get("client_secret")
                record["client_auth"] = "body"
            if state.mode == "invalid_client" or cid != state.client_id or secret != state.client_secret or (
                state.client_auth != "any" and record["client_auth"] != state.client_auth
            ):
                return self.error(401, "invalid_client", "Client authentication failed.", record)
            if state.mode == "html":
                record["outcome"] = "html"
                return self.send(200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html")
            grant = form.get("grant_type")
            answer = {"token_type": "Bearer"}
            if grant == "refresh_token":
                presented = form.get("refresh_token", "")
                family = state.family_of.get(presented)
                record["presented"] = presented
                if family is None:
                    return self.error(400, "invalid_grant", "Unknown refresh token.", record)
                if family in state.revoked:
                    return self.error(400, "invalid_grant", "The refresh token was revoked.", record)
                if state.newest[family] != presented:
                    state.revoked.add(family)
                    return self.error(400, "invalid_grant", "The refresh token was already used; its family is revoked.", record)
                rotated = "rt-" + secrets.token_hex(12)
                state.family_of[rotated] = family
                state.newest[family] = rotated
                answer["refresh_token"] = rotated
            elif grant != "client_credentials":
                return self.error(400, "unsupported_grant_type", "Unknown grant.", record)
            access = "at-" + secrets.token_hex(12)
            state.access[access] = time.monotonic() + state.lifetime
            state.issued_access.append(access)
            if state.mode == "header_injection":
                answer["access_token"] = access + "\r\nX-Injected: 1"
            elif state.mode == "numeric_access_token":
                answer["access_token"] = 987654321012
            elif state.mode != "no_access_token":
                answer["access_token"] = access
            if state.mode == "numeric_token_type":
                answer["token_type"] = 1
            if state.mode == "absurd_expires_in":
                answer["expires_in"] = -5
            elif state.mode == "huge_expires_in":
                answer["expires_in"] = 1e100
            elif state.mode == "fractional_expires_in":
                answer["expires_in"] = state.lifetime + 0.5
            elif state.mode == "text_expires_in":
                answer["expires_in"] = "soon"
            elif state.mode != "no_expires_in":
                answer["expires_in"] = state.lifetime
            record["outcome"] = "ok"
            self.send(200, answer)

    def login(self, body):
        state = self.state
        content_type = self.headers.get("Content-Type", "")
        record = {"content_type": content_type, "at": time.time()}
        if state.token_delay:
            time.sleep(state.token_delay)
        try:
            if content_type.startswith("application/json"):
                fields = json.loads(body or b"{}")
            else:
                fields = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        except ValueError:
            fields = {}
        with state.lock:
            state.login_requests.append(record)
            if state.mode == "bad_request" or not fields.get("username") or not fields.get("password"):
                record["outcome"] = "bad_request"
                return self.send(400, {"error": "bad_request", "message": "username and password are required."})
            name, _, password = (state.login_user or ":").partition(":")
            if fields.get("username") != name or fields.get("password") != password:
                record["outcome"] = "invalid_credentials"
                # Echoes the password, as careless servers do: dray must mask it.
                message = f"Wrong user name or password (you sent {fields.get('password')})."
                return self.send(401, {"error": "invalid_credentials", "message": message})
            if state.mode == "html":
                record["outcome"] = "html"
                return self.send(200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html")
            session = "st-" + secrets.token_hex(12)
            state.access[session] = time.monotonic() + state.lifetime
            state.issued_access.append(session)
            data = {"user": name}
            if state.mode == "header_injection":
                data["session"] = session + "\r\nX-Injected: 1"
            elif state.mode != "no_access_token":
                data["session"] = session
            if state.mode == "absurd_expires_in":
                data["expires"] = -5
            elif state.mode == "huge_expires_in":
                data["expires"] = 1e100
            elif state.mode != "no_expires_in":
                data["expires"] = state.lifetime
            record["outcome"] = "ok"
            self.send(200, {"data": data})

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        state = self.state
        if parts.path == "/admin/stats":
            with state.lock:
                family = max(state.newest) if state.newest else None
                return self.send(200, {
                    "token_requests": state.token_requests,
                    "api_requests": state.api_requests,
                    "api_401": state.api_401,
                    "revoked": bool(state.revoked),
                    "newest_refresh_token": state.newest.get(family) if family else None,
                    "access_tokens": state.issued_access,
                    "api_paths": state.api_paths,
                    "login_requests": state.login_requests,
                    "other_posts": state.other_posts,
                })
        if parts.path != "/items":
            return self.send(404, {"error": "not found"})
        token = self.headers.get("X-Session") or self.headers.get("Authorization", "")[len("Bearer "):]
        query = urllib.parse.parse_qs(parts.query)
        with state.lock:
            state.api_requests += 1
            state.api_paths.append(self.path)
            expiry = state.access.get(token)
            live = expiry is not None and time.monotonic() < expiry
            if state.api_key and (self.headers.get("X-API-Key") == state.api_key or query.get("api_key") == [state.api_key]):
                live = True
            if state.reject_next > 0:
                state.reject_next -= 1
                live = False
            if not live:
                state.api_401 += 1
        if not live:
            return self.send(401, {"error": "invalid_token", "message": "The access token expired or is unknown."},
                             headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        page = int(urllib.parse.parse_qs(parts.query).get("page", ["1"])[0])
        if state.page_delay:
            time.sleep(state.page_delay)
        data = [{"id": (page - 1) * state.per_page + i + 1, "page": page} for i in range(state.per_page)]
        self.send(200, {"data": data, "next": f"/items?page={page + 1}" if page < state.pages else None})


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description="An OAuth 2.0 token endpoint and API for dray's tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--client", default="app:s3cret", help="ID:SECRET of the one client")
    parser.add_argument("--client-auth", choices=["basic", "body", "any"], default="any")
    parser.add_argument("--refresh-token", help="the first refresh token of a family")
    parser.add_argument("--lifetime", type=float, default=2, help="seconds an access token lives")
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--per-page", type=int, default=2)
    parser.add_argument("--page-delay", type=float, default=0)
    parser.add_argument("--token-delay", type=float, default=0, help="seconds each token answer waits")
    parser.add_argument("--api-key", help="a key /items accepts in X-API-Key or api_key")
    parser.add_argument("--user", help="NAME:PASSWORD that /login takes")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes (tests hold it open)")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    Handler.state = State(args)
    server = QuietServer(("127.0.0.1", args.port), Handler)
    print(f"dray-oauth-server listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
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
