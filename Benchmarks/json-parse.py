#!/usr/bin/env python3
"""Times dray's JSON reading before and after a change, the two builds alternated:

    Benchmarks/json-parse.py [--old REV] [--rounds 9] [--document-mb 50] [--tokens 100000] [--rows 500000]

`dray-bench-json` (Benchmarks/JSONParse/main.swift) is built in release mode from this tree
and from REV (default 66211ce, the last commit whose whole documents yajl read), exported with
`git archive` under --work with the benchmark's target added to its Package.swift; both are
built under --work (default $TMPDIR/dray-json-bench). Each round
runs both builds on each case, in alternating order, each run a fresh process:

    document   one scheme-like document of about N MB into JSONValue (JSONValue(parsing:))
    tokens     N small token answers into JSONValue, one by one
    answer     a table answer of N rows x 8 columns through TableAnswerScanner (1 MiB chunks),
               every value touched: the load's per-value path without the database

Prints, per case, the median seconds of each build and the median of the per-round ratios
new / old (below 1: the new build is faster).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET = """
package.targets.append(
  .executableTarget(name: "dray-bench-json", dependencies: ["DrayModel", "DrayJSON"], path: "Benchmarks/JSONParse"))
"""


def export(rev, folder):
    """The tree of `rev` in `folder`, with the benchmark's source and target added."""
    if not os.path.exists(os.path.join(folder, "Package.swift")):
        os.makedirs(folder, exist_ok=True)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        os.makedirs(os.path.join(folder, "Benchmarks", "JSONParse"), exist_ok=True)
        with open(os.path.join(HERE, "JSONParse", "main.swift")) as source:
            text = source.read()
        with open(os.path.join(folder, "Benchmarks", "JSONParse", "main.swift"), "w") as copy:
            copy.write(text)
        with open(os.path.join(folder, "Package.swift"), "a") as package:
            package.write(TARGET)
    return folder


def build(tree, scratch):
    """Builds the benchmark of `tree` into `scratch` (apart from the tree's own .build, which a
    running `swift test` may hold)."""
    where = ["--package-path", tree, "--scratch-path", scratch]
    subprocess.run(["swift", "build", "-c", "release", "--product", "dray-bench-json"] + where, check=True)
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"] + where,
                         check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(out, "dray-bench-json")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", default="66211ce")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--document-mb", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=100000)
    parser.add_argument("--rows", type=int, default=500000)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "dray-json-bench"))
    args = parser.parse_args()

    old_tree = export(args.old, os.path.join(args.work, "old-" + args.old))
    old = build(old_tree, os.path.join(old_tree, ".build"))
    new = build(ROOT, os.path.join(args.work, "new-build"))
    cases = [("document", args.document_mb), ("tokens", args.tokens), ("answer", args.rows)]
    times = {(case, build): [] for case, _ in cases for build in ("old", "new")}
    for round in range(args.rounds):
        for case, size in cases:
            order = [("old", old), ("new", new)] if round % 2 == 0 else [("new", new), ("old", old)]
            for name, binary in order:
                seconds = float(subprocess.run([binary, case, str(size)], check=True, capture_output=True, text=True).stdout)
                times[(case, name)].append(seconds)
        print(f"round {round + 1}: " + ", ".join(f"{c} {times[(c, 'old')][-1]:.3f}/{times[(c, 'new')][-1]:.3f}" for c, _ in cases),
              file=sys.stderr)
    print("| case | size | old (median) | new (median) | new / old (median of the rounds' ratios) |")
    print("|---|---|---|---|---|")
    for case, size in cases:
        ratios = [n / o for o, n in zip(times[(case, "old")], times[(case, "new")])]
        print(f"| {case} | {size} | {statistics.median(times[(case, 'old')]):.3f} s | "
              f"{statistics.median(times[(case, 'new')]):.3f} s | {statistics.median(ratios):.3f} |")


if __name__ == "__main__":
    main()
