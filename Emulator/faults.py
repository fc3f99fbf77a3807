"""Fault injection for the platform emulator: rules set by flags or by POST /admin/faults.

A rule applies to requests whose path starts with `path` (all paths when absent), to the
next `times` of them (every one when absent); the first rule that applies is used. Keys:

  before the answer
    delay         wait this many seconds before answering
    reset         read the request, then close the connection without answering
    hang          read the request, then never answer (until the client goes away), as a
                  server whose worker died would
    status        answer with this HTTP status and a platform error body
    retry_after   send this Retry-After value (seconds or an HTTP-date) with `status`
    description   the error body's description (default "injected fault")
    echo_authorization  add the request's Authorization header to the description, as a
                  careless server would (to test that dray never shows it)
    echo_headers  likewise for each header named in this list
    echo_body     likewise for the request's body
    echo_forms    likewise for the sign-in form's password and the bearer token, in each
                  encoding of this list (see `ENCODINGS`), and "basic" for
                  base64(username:password) as in HTTP Basic credentials
    redirect      answer `redirect_status` (default 307) with this Location (absolute, or a
                  path on this server)
    body          answer 200 with this text as the whole body, as JSON (`""` or `" \\n"`:
                  a server that answers a call with nothing)
    body_base64   likewise with these bytes, base64-encoded: a body no text is (gzip bytes,
                  a PNG, UTF-16)

  in the answer (table data; any answer for the body keys)
    delay_answer  run the call (a write is applied, a transaction's answer kept), then wait
                  this many seconds before sending the answer's head
    close_after   send only this many body bytes, then close the connection
    trickle       send the body at this many bytes per second
    stall_after   after this many body bytes, send nothing for `stall_for` seconds
    chunked       send the body with Transfer-Encoding: chunked (no Content-Length)
    close_delimited  send the body without Content-Length or chunks, ended only by closing
                  the connection (HTTP/1.0 style); with `close_after`, a cut is
                  indistinguishable from the end
    overstate_length  send a Content-Length this many bytes above the body's length, send
                  the whole body, then close the connection: the body is whole, and the
                  answer still fails its length check
    ignore_range  ignore X-Range / Range and answer 200 with the whole body
    change_etag   answer with a new ETag (so If-Match fails with 412)
    weak_etag     answer with a weak ETag (W/"..."), which must never be used to resume
    answer_416    answer 416 Range Not Satisfiable to ranged requests
    garble        send an answer from byte 0 with its first byte replaced by `X`, as a
                  damaged disk or a broken proxy would
    gzip_unasked  send the answer gzip-compressed (Content-Encoding: gzip) whatever the
                  request's Accept-Encoding, as a misconfigured proxy would
    content_type  send this Content-Type instead of the answer's own (`text/html`: an
                  error page in place of the data)

  Compression is not a fault: a 200 or 206 answer goes out gzip-compressed (chunked, with
  `Vary: Accept-Encoding`) when the request's Accept-Encoding accepts gzip, and X-Range
  counts the bytes before compression (platform-api.md §3). The request log marks such an
  answer with "content_encoding": "gzip" and the uncompressed "offset" it started at;
  "response_bytes" counts the compressed bytes sent.

Example: the next two calls of FRUITS fail with 503 and ask to wait 1 s:

    {"path": "/api/v1/rpc/FRUITS/", "times": 2, "status": 503, "retry_after": "1"}

Token expiry is a setting, not a rule: `--token-lifetime`, or POST /admin/config with
`token_lifetime` (seconds; applies to tokens already issued), `token_exp_claim` (false: the
tokens carry no `exp`, so clients learn of the expiry from a 401) and `revoke_tokens`
(true: every token issued so far stops working, as after a server restart).
"""

import base64
import quopri
import html.entities
import json
import re
import select
import socket
import threading
import time
import urllib.parse
import uuid

KNOWN = {"path", "times", "status", "retry_after", "delay", "close_after", "trickle",
         "ignore_range", "change_etag", "answer_416", "description", "reset", "echo_authorization",
         "echo_headers", "echo_body", "redirect", "redirect_status", "stall_after", "stall_for", "chunked",
         "weak_etag", "garble", "body", "body_base64", "echo_forms", "hang", "close_delimited", "gzip_unasked", "content_type",
         "overstate_length", "delay_answer"}


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def set(self, rules):
        for rule in rules:
            if not isinstance(rule, dict):
                raise ValueError("a fault rule is a JSON object")
            unknown = set(rule) - KNOWN
            if unknown:
                raise ValueError(f"unknown fault keys: {', '.join(sorted(unknown))}")
        with self.lock:
            self.rules = [dict(r) for r in rules]

    def add(self, rule):
        self.set(self.rules + [rule])

    def clear(self):
        with self.lock:
            self.rules = []

    def take(self, path):
        """The first rule that applies to `path`, using up one of its `times`."""
        with self.lock:
            for rule in self.rules:
                if not path.startswith(rule.get("path", "")):
                    continue
                times = rule.get("times")
                if times is not None:
                    if times <= 0:
                        continue
                    rule["times"] = times - 1
                return dict(rule)
        return None


def answer_early(handler, fault, body=b""):
    """Applies the rule's `delay`, `reset`, `redirect` and `status` to a request whose body
    was `body`; True when the request was answered (or dropped) here."""
    if fault.get("delay"):
        time.sleep(float(fault["delay"]))
    if fault.get("hang"):
        hang(handler)
        return True
    if fault.get("reset"):
        handler.close_connection = True
        handler.connection.shutdown(2)
        return True
    if fault.get("redirect"):
        location = urllib.parse.urljoin(handler.self_url(), fault["redirect"])
        handler.send(int(fault.get("redirect_status", 307)), b"", {"Location": location})
        return True
    if "body" in fault:
        handler.send(200, fault["body"].encode())
        return True
    if "body_base64" in fault:
        handler.send(200, base64.b64decode(fault["body_base64"]))
        return True
    if fault.get("status"):
        status = int(fault["status"])
        extra = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
        text = description(fault, handler.headers, body)
        answer = json.dumps({"code": status, "description": text, "original_descriptions": []}).encode()
        handler.send(status, answer, extra)
        return True
    return False


def hang(handler):
    """Answers nothing until the client closes the connection (or 10 minutes pass)."""
    handler.close_connection = True
    connection = handler.connection
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([connection], [], [], 0.2)
        if ready:
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return
            time.sleep(0.2)


def answer_headers(headers, fault):
    """The answer's headers with the rule's ETag changes applied."""
    if fault.get("change_etag"):
        headers = dict(headers, ETag='"%s"' % uuid.uuid4().hex)
    if fault.get("weak_etag"):
        headers = dict(headers, ETag="W/" + headers.get("ETag", '"%s"' % uuid.uuid4().hex))
    return headers


def write_body(handler, pieces, fault):
    """Writes the body `pieces` (an iterable of bytes) under the rule's `close_after`,
    `trickle`, `stall_after`/`stall_for` and `chunked`. Each piece written is counted in the
    request log (`handler.count_sent`); a client that goes away ends the answer quietly."""
    limit = fault.get("close_after")
    rate = fault.get("trickle")
    stall_after = fault.get("stall_after")
    chunked = fault.get("chunked")
    if fault.get("garble"):
        pieces = garbled(pieces)
    out = handler.wfile
    sent = 0
    try:
        for piece in pieces:
            while piece:
                take = len(piece)
                if rate:
                    take = min(take, max(1, int(rate) // 10))
                if stall_after is not None:
                    take = min(take, stall_after - sent)
                if limit is not None:
                    take = min(take, max(0, limit - sent))
                data, piece = piece[:take], piece[take:]
                if data:
                    out.write(b"%x\r\n" % len(data) + data + b"\r\n" if chunked else data)
                    sent += len(data)
                    handler.count_sent(len(data))
                if limit is not None and sent >= limit:
                    handler.close_connection = True
                    handler.connection.shutdown(2)
                    return
                if stall_after is not None and sent >= stall_after:
                    time.sleep(float(fault.get("stall_for", 0)))
                    stall_after = None
                if rate:
                    time.sleep(len(data) / rate)
        if chunked:
            out.write(b"0\r\n\r\n")
        if fault.get("close_delimited"):
            handler.close_connection = True
    except (BrokenPipeError, ConnectionResetError):
        # The client went away (a timeout, a kill): nothing more to answer.
        handler.close_connection = True


def garbled(pieces):
    """The pieces with the first byte of the first one replaced by `X`."""
    first = True
    for piece in pieces:
        if first and piece:
            piece = b"X" + piece[1:]
            first = False
        yield piece


def description(rule, headers, body):
    """The error body's description for a `status` rule, with what it echoes."""
    text = rule.get("description", "injected fault")
    names = (["Authorization"] if rule.get("echo_authorization") else []) + list(rule.get("echo_headers", []))
    for name in names:
        text += "; you sent %s: %s" % (name, headers.get(name) or "(none)")
    if rule.get("echo_body"):
        text += "; you sent: " + body.decode("utf-8", "replace")
    fields = {}
    if (headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
        fields = {k: v[-1] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()}
    authorization = headers.get("Authorization") or ""
    secrets = [fields["password"]] if "password" in fields else []
    secrets += [authorization[7:]] if authorization.startswith("Bearer ") else []
    for form in rule.get("echo_forms", []):
        if form == "basic" and "username" in fields:
            text += "; you sent " + encoded("base64", fields["username"] + ":" + fields.get("password", ""))
        for secret in secrets if form != "basic" else []:
            text += "; you sent " + encoded(form, secret)
    return text


def _html(text, reference):
    """`text` with `&<>"'` and every non-ASCII character replaced by `reference(c)`, or kept
    where it returns None."""
    return "".join((reference(c) or c) if (c in "&<>\"'" or ord(c) > 127) else c for c in text)


# The encodings careless servers echo a secret in, each a function of the secret.
ENCODINGS = {
    "json": json.dumps,  # Python: non-ASCII as \u00e4 (a surrogate pair beyond U+FFFF)
    "json_upper": lambda s: re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m.group(0)[2:].upper(), json.dumps(s)),
    "json_php": lambda s: json.dumps(s).replace("/", "\\/"),  # PHP's json_encode escapes `/`
    "json_utf8": lambda s: json.dumps(s, ensure_ascii=False),
    "quote": lambda s: urllib.parse.quote(s, safe=""),
    "quote_lower": lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(s, safe="")),
    "quote_plus": lambda s: urllib.parse.quote_plus(s, safe=""),
    # Python's html.escape, then non-ASCII as decimal references (xmlcharrefreplace).
    "html": lambda s: _html(s, lambda c: {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}.get(c, "&#%d;" % ord(c))),
    # PHP's htmlentities: HTML 4's names where there is one, other characters kept.
    "html_named": lambda s: _html(s, lambda c: "&#39;" if c == "'" else (
        "&%s;" % html.entities.codepoint2name[ord(c)] if ord(c) <= 0xFF and ord(c) in html.entities.codepoint2name else None)),
    "html_hex": lambda s: _html(s, lambda c: "&#x%x;" % ord(c)),
    "html_hex_upper": lambda s: _html(s, lambda c: "&#x%X;" % ord(c)),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64_url": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    # Every character as a reference, ASCII letters too: decimal, decimal with leading zeros,
    # hexadecimal in lower case with leading zeros, hexadecimal in capitals after `&#X`.
    "html_all_decimal": lambda s: "".join("&#%d;" % ord(c) for c in s),
    "html_all_decimal_zeros": lambda s: "".join("&#%07d;" % ord(c) for c in s),
    "html_all_hex": lambda s: "".join("&#x%04x;" % ord(c) for c in s),
    "html_all_hex_upper": lambda s: "".join("&#X%X;" % ord(c) for c in s),
    # JavaScript's encodeURI: reserved characters and `#` kept, the rest percent-encoded.
    "encode_uri": lambda s: urllib.parse.quote(s, safe=";,/?:@&=+$-_.!~*'()#"),
    # Applied twice, as a server quoting an echo it escaped already does.
    "json_twice": lambda s: json.dumps(json.dumps(s)),
    "json_utf8_twice": lambda s: json.dumps(json.dumps(s, ensure_ascii=False), ensure_ascii=False),
    "quote_twice": lambda s: urllib.parse.quote(urllib.parse.quote(s, safe=""), safe=""),
    "encode_uri_twice": lambda s: urllib.parse.quote(urllib.parse.quote(s, safe=";,/?:@&=+$-_.!~*'()#"), safe=";,/?:@&=+$-_.!~*'()#"),
    "html_twice": lambda s: html.escape(html.escape(s)),
    "html_all_hex_twice": lambda s: html.escape("".join("&#x%x;" % ord(c) for c in s)),
    # One encoding inside another: a JSON echo percent-encoded into a URL, a form value in JSON.
    "quote_of_json": lambda s: urllib.parse.quote(json.dumps(s), safe=""),
    "json_of_quote_plus": lambda s: json.dumps(urllib.parse.quote_plus(s, safe="")),
    "html_of_json": lambda s: html.escape(json.dumps(s)),
    # Debug dumps and mail encodings: hexadecimal of the UTF-8 bytes, base32 (RFC 4648 §6)
    # with and without padding, quoted-printable (RFC 2045; Python's quopri), and the value
    # lower-cased then percent-encoded with lower-case escapes (a server folding case).
    "hex": lambda s: s.encode().hex(),
    "hex_upper": lambda s: s.encode().hex().upper(),
    "base32": lambda s: base64.b32encode(s.encode()).decode(),
    "base32_unpadded": lambda s: base64.b32encode(s.encode()).decode().rstrip("="),
    "quoted_printable": lambda s: quopri.encodestring(s.encode()).decode(),
    "quote_folded": lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote_plus(s.lower(), safe="")),
}


def encoded(form, secret):
    """`secret` in the encoding `form` names (`ENCODINGS`)."""
    encode = ENCODINGS.get(form)
    return encode(secret) if encode else "no echo form " + form
