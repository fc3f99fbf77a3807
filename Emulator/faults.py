"""Fault injection for the platform emulator: rules set by flags or by POST /admin/faults.

A rule applies to requests whose path starts with `path` (all paths when absent), to the
next `times` of them (every one when absent), and may:

    status        answer with this HTTP status and a platform error body
    retry_after   send this Retry-After value (seconds or an HTTP-date) with `status`
    description   the error body's description (default "injected fault")
    echo_authorization  add the request's Authorization header to the description, as a
                  careless server would (to test that dray never shows it)
    echo_headers  likewise for each header named in this list
    echo_body     likewise for the request's body
    delay         wait this many seconds before answering
    close_after   send only this many bytes of the body, then close the connection
    trickle       send the body at this many bytes per second
    ignore_range  ignore X-Range / Range and answer 200 with the whole body
    change_etag   answer with a new ETag each time (so If-Match fails with 412)
    answer_416    answer 416 Range Not Satisfiable to ranged requests

Example: the next two calls of FRUITS fail with 503 and ask to wait 1 s:

    {"path": "/api/v1/rpc/FRUITS/", "times": 2, "status": 503, "retry_after": "1"}
"""

import threading

KNOWN = {"path", "times", "status", "retry_after", "delay", "close_after", "trickle",
         "ignore_range", "change_etag", "answer_416", "description", "echo_authorization", "echo_headers", "echo_body"}


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def set(self, rules):
        for rule in rules:
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


def description(rule, headers, body):
    """The error body's description for a `status` rule, with what it echoes."""
    text = rule.get("description", "injected fault")
    names = (["Authorization"] if rule.get("echo_authorization") else []) + list(rule.get("echo_headers", []))
    for name in names:
        text += "; you sent %s: %s" % (name, headers.get(name) or "(none)")
    if rule.get("echo_body"):
        text += "; you sent: " + body.decode("utf-8", "replace")
    return text
