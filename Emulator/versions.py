"""Versioned cached resources for the emulator: stable row ids, versions and deltas
(platform-api.md §3).

Every cached resource (one with a `lifetime`) starts at version 1, its rows numbered 1..n
by row id (`hhive_id`). A version is a snapshot of every output table as (row id, row)
pairs; the latest one is what a full answer serves, with `Content-Version: v<latest>`.

A request with `X-Delta: v<n>-v<m>` or `v<n>-last` gets the change between the two
snapshots, per table: `delete_ids` holds the row ids that are gone or changed, and
`insert_rows` the rows that are new or changed (an update is a delete and an insert of
the same id); the answer's `Content-Version` is `"delta v<n>-v<m>"`, and its
`Cache-Hash-Value` the hash of each table at v<m>, as a full answer of v<m> gives it. `v0` is the empty
table, so `v0-last` holds every row. A range that does not parse, runs backwards or names
a version the server never had answers 400.

Admin calls (no token), for tests and the benchmark:

    GET  /admin/versions/<NAME>   {"version": 3, "tables": {"output_table": [[id, ...], ...]}}
    POST /admin/versions/<NAME>   makes the next version from
         {"table": "output_table",           (optional: the first output table)
          "delete": [3, 7],                  row ids to drop
          "update": [[2, "pear", 0.6, 0]],   rows replaced, keeping their id
          "insert": [["kiwi", 0.9, 1]]}      new rows (without id), numbered after the largest id
         → {"version": 4, "inserted_ids": [6]}
    POST /admin/deltas            {"enabled": false} answers full data even to X-Delta;
                                  {"key_order": ["insert_rows", "delete_ids", "name"]} sets
                                  the order of each table object's keys in a delta;
                                  {"wrong_range": "v9-v12"} makes every delta answer claim
                                  that range in its Content-Version (a server that computed
                                  the delta from another base); {"delta_for_full": "v1-last"}
                                  answers requests without X-Delta with that delta; null
                                  turns either off

Rows changed behind this module's back (another emulator module editing a resource's
`rows` in place) become a new version when next served: rows equal to ones of the
latest version keep their ids, the others get new ones.
"""

import json
import re
import threading

DELTA = re.compile(r"^v(\d+)-(?:v(\d+)|last)$")


class BadDelta(ValueError):
    """An X-Delta range the server refuses with 400."""


def key(row):
    return json.dumps(row, sort_keys=True, separators=(",", ":"))


class Versions:
    def __init__(self):
        self.lock = threading.RLock()
        # resource name -> list of snapshots (index 0 is version 1);
        # a snapshot maps table name -> list of [id, row]
        self.history = {}
        self.next_id = {}
        self.deltas_enabled = True
        self.key_order = ["name", "insert_rows", "delete_ids"]
        # Faults for tests: the range a delta answer claims, and a delta sent unasked.
        self.wrong_range = None
        self.delta_for_full = None

    def register(self, resource):
        """Version 1 of a cached resource: its rows numbered from 1."""
        snapshot = {}
        largest = 0
        for table in resource["outputs"]:
            pairs = [[i + 1, list(r)] for i, r in enumerate(table["rows"])]
            snapshot[table["name"]] = pairs
            largest = max(largest, len(pairs))
        self.history[resource["name"]] = [snapshot]
        self.next_id[resource["name"]] = largest + 1

    def latest(self, resource):
        """The latest version number, after taking in rows edited in place."""
        with self.lock:
            self.sync(resource)
            return len(self.history[resource["name"]])

    def rows(self, resource, table, version=None):
        """The rows of `table` at `version` (the latest by default), each with its row id first."""
        with self.lock:
            self.sync(resource)
            history = self.history[resource["name"]]
            snapshot = history[-1] if version is None else history[version - 1]
            return [[i] + list(r) for i, r in snapshot[table["name"]]]

    def sync(self, resource):
        """Makes a new version when a table's rows no longer match the latest snapshot."""
        name = resource["name"]
        latest = self.history[name][-1]
        if all([r for _, r in latest[t["name"]]] == t["rows"] for t in resource["outputs"]):
            return
        snapshot = {}
        for table in resource["outputs"]:
            free = {}
            for i, row in latest[table["name"]]:
                free.setdefault(key(row), []).append(i)
            pairs = []
            for row in table["rows"]:
                ids = free.get(key(row))
                if ids:
                    pairs.append([ids.pop(0), list(row)])
                else:
                    pairs.append([self.next_id[name], list(row)])
                    self.next_id[name] += 1
            snapshot[table["name"]] = pairs
        self.history[name].append(snapshot)

    def change(self, resource, body):
        """Makes the next version from an admin call's deletes, updates and inserts."""
        name = resource["name"]
        with self.lock:
            self.sync(resource)
            tables = {t["name"]: t for t in resource["outputs"]}
            table_name = body.get("table", resource["outputs"][0]["name"])
            if table_name not in tables:
                raise ValueError(f"{name} has no output table {table_name}")
            width = len(tables[table_name]["columns"])
            snapshot = {t: [list(p) for p in pairs] for t, pairs in self.history[name][-1].items()}
            pairs = snapshot[table_name]
            drop = set(body.get("delete", []))
            updates = {u[0]: list(u[1:]) for u in body.get("update", [])}
            for row in list(updates.values()) + body.get("insert", []):
                if len(row) != width:
                    raise ValueError(f"rows of {table_name} have {width} values (without the row id)")
            known = {i for i, _ in pairs}
            missing = (drop | set(updates)) - known
            if missing:
                raise ValueError(f"no rows with ids {sorted(missing)}")
            pairs = [[i, updates.get(i, r)] for i, r in pairs if i not in drop]
            inserted = []
            for row in body.get("insert", []):
                pairs.append([self.next_id[name], list(row)])
                inserted.append(self.next_id[name])
                self.next_id[name] += 1
            snapshot[table_name] = pairs
            self.history[name].append(snapshot)
            tables[table_name]["rows"][:] = [r for _, r in pairs]
            return {"version": len(self.history[name]), "inserted_ids": inserted}

    def delta(self, resource, header, select):
        """The delta body's tables and the version range for an X-Delta header.

        `select(table, rows)` keeps the rows the request's parameters ask for.
        """
        name = resource["name"]
        with self.lock:
            self.sync(resource)
            history = self.history[name]
            match = DELTA.match(header.strip())
            if not match:
                raise BadDelta(f"X-Delta must read v<n>-v<m> or v<n>-last, not {header!r}")
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) is not None else len(history)
            if match.group(2) is not None and start >= end:
                raise BadDelta(f"X-Delta {header}: the first version must be older than the second")
            if start > len(history) or end > len(history):
                raise BadDelta(f"X-Delta {header}: the latest version is v{len(history)}")
            tables = []
            for table in resource["outputs"]:
                before = {} if start == 0 else dict((i, r) for i, r in select(table, history[start - 1][table["name"]]))
                after = dict((i, r) for i, r in select(table, history[end - 1][table["name"]]))
                deleted = sorted(i for i, r in before.items() if after.get(i) != r)
                inserted = [[i] + r for i, r in sorted(after.items()) if before.get(i) != r]
                entry = {"name": table["name"], "insert_rows": inserted, "delete_ids": deleted}
                tables.append({k: entry[k] for k in self.key_order})
            return tables, start, end

    def admin(self, handler, platform, method, path, body):
        """Serves /admin/versions/<NAME> and /admin/deltas."""
        if path == "/admin/deltas" and method == "POST":
            try:
                config = json.loads(body or b"{}")
                order = config.get("key_order", self.key_order)
                if sorted(order) != ["delete_ids", "insert_rows", "name"]:
                    raise ValueError("key_order lists name, insert_rows and delete_ids")
                for name in ("wrong_range", "delta_for_full"):
                    if config.get(name) is not None and not DELTA.match(str(config[name])):
                        raise ValueError(f"{name} reads v<n>-v<m> or v<n>-last")
            except ValueError as e:
                return handler.error(400, "Bad Request", [str(e)])
            with self.lock:
                self.deltas_enabled = bool(config.get("enabled", self.deltas_enabled))
                self.key_order = list(order)
                if "wrong_range" in config:
                    self.wrong_range = config["wrong_range"]
                if "delta_for_full" in config:
                    self.delta_for_full = config["delta_for_full"]
            return handler.send(204)
        name = path[len("/admin/versions/"):]
        resource = platform.resources.get(name)
        if resource is None or name not in self.history:
            return handler.error(404, "Not Found", [f"{name} is not a cached resource"])
        if method == "GET":
            with self.lock:
                self.sync(resource)
                latest = self.history[name][-1]
                tables = {t: [[i] + r for i, r in pairs] for t, pairs in latest.items()}
                return handler.send_json(200, {"version": len(self.history[name]), "tables": tables})
        if method == "POST":
            try:
                result = self.change(resource, json.loads(body or b"{}"))
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                return handler.error(400, "Bad Request", [str(e)])
            return handler.send_json(200, result)
        return handler.error(404, "Not Found")
