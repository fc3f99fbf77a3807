"""Generated resources for load tests and benchmarks: N rows of 8 mixed-type columns.

The answer is rendered once to a file (cached across runs under the cache folder, keyed by
the row count) and served from disk, so the emulator is never the bottleneck.
"""

import hashlib
import json
import os
import random

COLUMNS = [
    ("id", "BIGINT", "int8"),
    ("code", "TEXT", "varchar"),
    ("name", "TEXT", "varchar"),
    ("amount", "DOUBLE", "numeric"),
    ("quantity", "BIGINT", "int4"),
    ("active", "BIGINT", "boolean"),
    ("created", "TEXT", "date"),
    ("note", "TEXT", "text"),
]

WORDS = ["alpha", "beta", "gamma", "дельта", "epsilon", "ζήτα", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def row(i, rng):
    return [
        i,
        "C%07d" % i,
        "%s %s" % (WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]),
        round(rng.uniform(-1e6, 1e6), 4),
        rng.randint(0, 100000),
        i % 2,
        "20%02d-%02d-%02d" % (i % 30, 1 + i % 12, 1 + i % 28),
        None if i % 5 == 0 else "note \"%d\" with, comma" % i,
    ]


def render(path, rows, seed=7):
    """Writes the full answer for `rows` rows to `path` (atomically)."""
    rng = random.Random(seed)
    tmp = "%s.tmp-%d" % (path, os.getpid())  # emulators started together may render at once
    with open(tmp, "w", encoding="utf-8") as f:
        f.write('[{"name":"output_table","data":[')
        for i in range(1, rows + 1):
            if i > 1:
                f.write(",")
            f.write(json.dumps(row(i, rng), ensure_ascii=False, separators=(",", ":")))
        f.write("]}]")
    os.replace(tmp, path)


def answer_file(cache_dir, rows):
    """The path of the rendered answer for `rows` rows, rendering it when missing."""
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, "generated-%d-v1.json" % rows)
    if not os.path.exists(path):
        render(path, rows)
    return path


def etag(path):
    st = os.stat(path)
    return '"%s"' % hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:32]
