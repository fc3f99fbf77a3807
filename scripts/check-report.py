#!/usr/bin/python3
"""Checks dray's report files: JSON reports against docs/report.schema.json (JSON Schema
2020-12), JUnit XML for well-formedness and its counters, Prometheus textfiles with the
exposition-format parser of prometheus_client, HTML pages for well-formedness (as XML, and
every element closed in order as html.parser reads it) and for anything that would reach
outside the page.

    /usr/bin/python3 scripts/check-report.py FILE...

Each FILE is checked by its name: *.json, *.junit.xml, *.prom or *.html. Prints one line per
problem and exits 1 when there is any. Needs Debian's python3-jsonschema and
python3-prometheus-client (scripts/install-deps.sh), hence /usr/bin/python3.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

try:
    from jsonschema import Draft202012Validator
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as error:
    print(
        f"scripts/check-report.py: {error} under {sys.executable}; it needs Debian's python3-jsonschema and "
        "python3-prometheus-client (sudo apt-get install python3-jsonschema python3-prometheus-client, or "
        "scripts/install-deps.sh) and runs as /usr/bin/python3 (call the script itself, not another python3)",
        file=sys.stderr)
    sys.exit(2)

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "report.schema.json")


def check_json(path, validator):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    return [f"{path}: /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(report)]


def check_junit(path):
    problems = []
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        return [f"{path}: the root is <{root.tag}>, not <testsuites>"]
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counted = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        for name, n in counted.items():
            if suite.get(name) != str(n):
                problems.append(f"{path}: testsuite {name}={suite.get(name)}, but it holds {n}")
        for attribute in ("name", "timestamp", "hostname", "time"):
            if suite.get(attribute) is None:
                problems.append(f"{path}: testsuite has no {attribute}")
    return problems


def check_prometheus(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    families = list(text_string_to_metric_families(text))
    problems = []
    for family in families:
        if family.type != "gauge":
            problems.append(f"{path}: {family.name} is a {family.type}")
        for sample in family.samples:
            if "dray_job" not in sample.labels:
                problems.append(f"{path}: {sample.name} has no dray_job label")
    if not families:
        problems.append(f"{path}: no metric")
    return problems


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Nesting(HTMLParser):
    """Every element closed, in order; what a page must not hold (script, external URLs)."""

    def __init__(self, path):
        super().__init__(convert_charrefs=True)
        self.path, self.open, self.problems = path, [], []

    def where(self):
        line, column = self.getpos()
        return f"{self.path}:{line}:{column + 1}"

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "img", "link", "base"):
            self.problems.append(f"{self.where()}: <{tag}> in a page that must need nothing else")
        for name, value in attrs:
            if name.startswith("on") or (name in ("src", "href", "action") and value and not value.startswith("#")):
                self.problems.append(f"{self.where()}: <{tag} {name}=\"{value}\"> reaches outside the page")
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.open.pop()

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"{self.where()}: </{tag}> closes <{self.open[-1] if self.open else 'nothing'}>")
        else:
            self.open.pop()


def check_html(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    problems = []
    if not text.startswith("<!DOCTYPE html>\n"):
        problems.append(f"{path}: does not start with <!DOCTYPE html>")
    try:
        ET.fromstring(text[len("<!DOCTYPE html>"):])
    except ET.ParseError as e:
        problems.append(f"{path}: not well-formed: {e}")
    parser = Nesting(path)
    parser.feed(text)
    parser.close()
    problems += parser.problems
    if parser.open:
        problems.append(f"{path}: elements left open: {', '.join(parser.open)}")
    for style in re.findall(r"<style>(.*?)</style>", text, re.S):
        for found in re.findall(r"@import|url\((?!#)[^)]*\)", style):
            problems.append(f"{path}: the style sheet reaches outside the page: {found}")
    return problems


def main(paths):
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    problems = []
    for path in paths:
        try:
            if path.endswith(".junit.xml"):
                problems += check_junit(path)
            elif path.endswith(".json"):
                problems += check_json(path, validator)
            elif path.endswith(".prom"):
                problems += check_prometheus(path)
            elif path.endswith(".html"):
                problems += check_html(path)
            else:
                problems.append(f"{path}: not a report file name")
        except Exception as e:  # a file that does not even parse
            problems.append(f"{path}: {type(e).__name__}: {e}")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
