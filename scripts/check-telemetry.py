#!/usr/bin/env python3
"""Decodes and validates what dray exported, for the tests (docs/report.md).

    check-telemetry.py otlp RECEIVED.json       # the receiver's /_received list
    check-telemetry.py openlineage EVENTS.jsonl # one event per line (or RECEIVED.json)

Runs in the virtualenv the tests make (scripts/telemetry-requirements.txt):

- otlp: every POST body is parsed with protobuf's `json_format.Parse` into
  `opentelemetry-proto`'s `ExportTraceServiceRequest`, refusing unknown fields. OTLP/JSON
  writes trace and span ids as hex where proto3's JSON mapping has base64 (OTLP
  specification, "JSON Protobuf Encoding"), so each id is checked to be lowercase hex of
  the right length and turned into base64 first. Prints the spans as JSON.
- openlineage: each event is built with openlineage-python's classes generated from the
  spec (`openlineage.client.generated`: `RunEvent`, `Run`, `Job`, `InputDataset`,
  `OutputDataset`, the schema, output statistics and parent facets), which check required
  fields, the eventType enum, the run id's UUID and the event time, and turned back into a
  dict that must equal the event: a field dropped, renamed or misplaced shows as a
  difference. Custom facets need `_producer` and `_schemaURL`. Prints a summary as JSON.

Exits 1 with the problems on standard error when anything is wrong.
"""

import base64
import json
import re
import sys
import uuid
from urllib.parse import urlparse

PROBLEMS = []


def problem(message):
    PROBLEMS.append(message)


def hex_to_base64(value, length, where):
    if not isinstance(value, str) or not re.fullmatch("[0-9a-f]{%d}" % (2 * length), value):
        problem(f"{where}: {value!r} is not {length} bytes of lowercase hex")
        return ""
    return base64.b64encode(bytes.fromhex(value)).decode()


def check_otlp(received):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans = []
    for index, item in enumerate(received):
        if item["path"] != "/v1/traces":
            continue  # an OpenLineage event
        content_type = {k.lower(): v for k, v in item["headers"].items()}.get("content-type")
        if content_type != "application/json":
            problem(f"POST {index}: Content-Type {content_type!r}")
        body = json.loads(item["body"])
        for rs in body.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    where = f"span {span.get('name')!r}"
                    span["traceId"] = hex_to_base64(span.get("traceId"), 16, where + " traceId")
                    span["spanId"] = hex_to_base64(span.get("spanId"), 8, where + " spanId")
                    if "parentSpanId" in span:
                        span["parentSpanId"] = hex_to_base64(span["parentSpanId"], 8, where + " parentSpanId")
        message = ExportTraceServiceRequest()
        try:
            json_format.Parse(json.dumps(body), message, ignore_unknown_fields=False)
        except json_format.ParseError as error:
            problem(f"POST {index} is not an ExportTraceServiceRequest: {error}")
            continue
        for rs in message.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    if span.end_time_unix_nano < span.start_time_unix_nano:
                        problem(f"span {span.name!r} ends before it starts")
                    if span.start_time_unix_nano < 1_000_000_000 * 1_000_000_000:
                        problem(f"span {span.name!r} starts at {span.start_time_unix_nano}, not Unix nanoseconds")
                    spans.append({
                        "resource": resource,
                        "scope": ss.scope.name,
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "statusCode": span.status.code,
                        "statusMessage": span.status.message,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                    })
    return spans


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def check_uri(value, where):
    parsed = urlparse(value) if isinstance(value, str) else None
    if not parsed or not parsed.scheme or not (parsed.netloc or parsed.path):
        problem(f"{where}: {value!r} is not a URI")


def prune(built, sent):
    """`built` without the empty lists and objects the classes add by default where `sent`
    has no such key (a schema field's `fields: []`): absent and empty mean the same there."""
    if isinstance(built, dict) and isinstance(sent, dict):
        return {k: prune(v, sent.get(k)) for k, v in built.items() if k in sent or v not in ([], {})}
    if isinstance(built, list) and isinstance(sent, list) and len(built) == len(sent):
        return [prune(b, s) for b, s in zip(built, sent)]
    return built


def check_openlineage(events):
    from openlineage.client.generated import base, output_statistics_output_dataset as stats
    from openlineage.client.generated import schema_dataset, parent_run
    from openlineage.client.serde import Serde

    known_dataset_facets = {"schema"}
    known_output_facets = {"outputStatistics"}

    def facet_base(facet, where):
        if not isinstance(facet, dict):
            problem(f"{where} is not an object")
            return False
        for key in ("_producer", "_schemaURL"):
            if key not in facet:
                problem(f"{where} lacks {key}")
                return False
            check_uri(facet[key], f"{where}.{key}")
        return True

    def build_schema(facet, where):
        facet_base(facet, where)
        extra = set(facet) - {"_producer", "_schemaURL", "fields"}
        if extra:
            problem(f"{where} has unknown keys {sorted(extra)}")
        fields = [schema_dataset.SchemaDatasetFacetFields(**f) for f in facet.get("fields", [])]
        return schema_dataset.SchemaDatasetFacet(fields=fields, producer=facet.get("_producer", ""))

    def build_stats(facet, where):
        facet_base(facet, where)
        extra = set(facet) - {"_producer", "_schemaURL", "rowCount", "size", "fileCount"}
        if extra:
            problem(f"{where} has unknown keys {sorted(extra)}")
        return stats.OutputStatisticsOutputDatasetFacet(
            rowCount=facet.get("rowCount"), size=facet.get("size"), fileCount=facet.get("fileCount"),
            producer=facet.get("_producer", ""))

    summary = []
    for index, event in enumerate(events):
        where = f"event {index} ({event.get('eventType')})"
        try:
            run_facets = {}
            custom = {}
            for name, facet in event["run"].get("facets", {}).items():
                if name == "parent":
                    facet_base(facet, f"{where} run facet parent")
                    run_facets[name] = parent_run.ParentRunFacet(
                        run=parent_run.Run(**facet["run"]), job=parent_run.Job(**facet["job"]), producer=facet["_producer"])
                else:
                    if facet_base(facet, f"{where} run facet {name}"):
                        custom[name] = facet
            inputs = [base.InputDataset(namespace=d["namespace"], name=d["name"], facets={}, inputFacets={})
                      for d in event.get("inputs", [])]
            for d in event.get("inputs", []):
                if set(d) - {"namespace", "name", "facets", "inputFacets"} or d.get("facets") or d.get("inputFacets"):
                    problem(f"{where}: input {d.get('name')} has unexpected keys or facets")
            outputs = []
            for d in event.get("outputs", []):
                owhere = f"{where} output {d.get('namespace')}/{d.get('name')}"
                extra = set(d) - {"namespace", "name", "facets", "outputFacets"}
                if extra:
                    problem(f"{owhere} has unknown keys {sorted(extra)}")
                facets = {}
                for name, facet in d.get("facets", {}).items():
                    if name not in known_dataset_facets:
                        problem(f"{owhere}: unexpected dataset facet {name}")
                    facets[name] = build_schema(facet, f"{owhere} facet {name}")
                output_facets = {}
                for name, facet in d.get("outputFacets", {}).items():
                    if name not in known_output_facets:
                        problem(f"{owhere}: unexpected output facet {name}")
                    output_facets[name] = build_stats(facet, f"{owhere} outputFacet {name}")
                outputs.append(base.OutputDataset(
                    namespace=d["namespace"], name=d["name"], facets=facets, outputFacets=output_facets))
            built = base.RunEvent(
                eventType=base.EventType(event["eventType"]),
                eventTime=event["eventTime"],
                run=base.Run(runId=event["run"]["runId"], facets=run_facets),
                job=base.Job(namespace=event["job"]["namespace"], name=event["job"]["name"], facets={}),
                inputs=inputs,
                outputs=outputs,
                producer=event["producer"],
            )
            uuid.UUID(event["run"]["runId"])
            check_uri(event["producer"], f"{where}.producer")
            again = prune(Serde.to_dict(built), event)
            original = json.loads(json.dumps(event))
            for name in custom:
                original["run"]["facets"].pop(name)
            if again != original:
                problem(f"{where} differs from the spec's RunEvent:\n  sent:  {json.dumps(original, sort_keys=True)}\n"
                        f"  built: {json.dumps(again, sort_keys=True)}")
        except (KeyError, TypeError, ValueError) as error:
            problem(f"{where} is not a valid RunEvent: {type(error).__name__}: {error}")
            continue
        summary.append({
            "eventType": event["eventType"],
            "runId": event["run"]["runId"],
            "job": event["job"],
            "runFacets": event["run"].get("facets", {}),
            "inputs": [f"{d['namespace']} {d['name']}" for d in event.get("inputs", [])],
            "outputs": [{
                "namespace": d["namespace"], "name": d["name"],
                "rowCount": d.get("outputFacets", {}).get("outputStatistics", {}).get("rowCount"),
                "fields": [f["name"] for f in d.get("facets", {}).get("schema", {}).get("fields", [])],
            } for d in event.get("outputs", [])],
        })
    return summary


def main():
    mode, path = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    if mode == "otlp":
        result = check_otlp(json.loads(text))
    elif mode == "openlineage":
        if path.endswith(".jsonl"):
            events = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            events = [json.loads(item["body"]) for item in json.loads(text) if item["path"] != "/v1/traces"]
        result = check_openlineage(events)
    else:
        sys.exit(f"unknown mode {mode}")
    if PROBLEMS:
        sys.stderr.write("\n".join(PROBLEMS) + "\n")
        sys.exit(1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
