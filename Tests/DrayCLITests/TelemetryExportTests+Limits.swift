import DrayTestSupport
import Foundation
import Glibc
import Testing

/// The limits of the exports (docs/report.md, "OpenLineage" and "OpenTelemetry traces"):
/// receivers that never answer or refuse, a signal during an export, and the end event of a
/// run that was killed.
extension TelemetryExportTests {
  static func warnings(_ stderr: String) -> [Substring] {
    stderr.split(separator: "\n").filter { $0.contains("warning:") }
  }

  /// A receiver that takes the requests and never answers holds up no step: `START` goes out
  /// on its own thread, each send keeps to 5 s, and a destination that failed gets nothing more.
  @Test(.timeLimit(.minutes(10)))
  func aReceiverThatNeverAnswersHoldsUpNoStep() throws {
    let folder = TemporaryDirectory("dray-export-hang")
    let emulator = try Emulator()
    let hanging = try TelemetryReceiver(status: 0)
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { url: "\(hanging.url)api/v1/lineage" }
            otlp: { endpoint: "\(hanging.url)" }
          """))
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let report = try Self.report(result.stdout)
    #expect(report["status"] as? String == "succeeded")
    // The steps took what they take without the receiver: less than one send's 5 s, which a
    // step that waited for START would hold at least.
    for step in report["steps"] as? [[String: Any]] ?? [] {
      let duration = (step["duration_ms"] as? Int) ?? 0
      #expect(duration < 5000, "\(step)")
    }
    let warnings = Self.warnings(result.stderr)
    #expect(warnings.count == 2, "\(result.stderr)")
    #expect(
      warnings.contains {
        $0.contains(
          "the OpenLineage event was not delivered to \(hanging.url)api/v1/lineage after 1 try within 5s: no answer within the export's fixed limit (5s a send"
        )
      }, "\(warnings)")
    #expect(
      warnings.contains { $0.contains("the trace was not delivered to \(hanging.url)v1/traces after 1 try within 5s") }, "\(warnings)")
    #expect(!result.stderr.contains("raise timeouts.request"))
    // START, then the trace: the lineage destination that failed gets no end event.
    #expect(try hanging.received().map { $0["path"] as? String } == ["/api/v1/lineage", "/v1/traces"])
  }

  /// A signal cuts a send that waits on a receiver short at once: the run ends within a
  /// second or two, far inside Kubernetes' 30 s grace period.
  @Test(.timeLimit(.minutes(10)))
  func aSignalCutsAnExportShortAtOnce() throws {
    let folder = TemporaryDirectory("dray-export-signal")
    let emulator = try Emulator()
    let hanging = try TelemetryReceiver(status: 0)
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { url: "\(hanging.url)api/v1/lineage" }
            otlp: { endpoint: "\(hanging.url)" }
          """))
    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    #expect(run.waitUntil(timeout: 30) { ((try? hanging.received()) ?? []).count >= 1 }, "\(run.errors)")
    let signalled = Date()
    run.send(SIGTERM)
    let ended = run.wait(timeout: 20)
    let took = Date().timeIntervalSince(signalled)
    #expect(ended == .exited(0) || ended == .exited(130), "\(String(describing: ended)) \(run.errors)")
    // Far less than the 30 s a send used to hold a signalled run (and Kubernetes' grace).
    #expect(took < 10, "took \(took)s: \(run.errors)")
    #expect(run.errors.contains("cut short by signal \(SIGTERM)"), "\(run.errors)")
  }

  /// A `4xx` is not tried again: the warning counts the one try and gives the receiver's answer.
  @Test func aRefusalIsOneTryAndItsAnswerIsShown() throws {
    let folder = TemporaryDirectory("dray-export-400")
    let emulator = try Emulator()
    let refusing = try TelemetryReceiver(status: 400)
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { url: "\(refusing.url)api/v1/lineage" }
            otlp: { endpoint: "\(refusing.url)" }
          """))
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let warnings = Self.warnings(result.stderr)
    #expect(warnings.count == 2, "\(result.stderr)")
    #expect(
      warnings.contains {
        $0.contains(
          #"the OpenLineage event was not delivered to \#(refusing.url)api/v1/lineage after 1 try within 5s: HTTP 400: {"error": "injected"}"#
        )
      }, "\(warnings)")
    #expect(
      warnings.contains {
        $0.contains(#"the trace was not delivered to \#(refusing.url)v1/traces after 1 try within 5s: HTTP 400: {"error": "injected"}"#)
      },
      "\(warnings)")
    #expect(try refusing.received().count == 2)
  }

  /// D-secret-2 and D-otlp-url: an export takes no `auth`, so a key goes in its URL's query;
  /// the values of parameters named as credentials (`CredentialName`) are masked in `plan`,
  /// `plan --json` and the run's warnings, as the userinfo password is, and `/v1/traces` is
  /// joined to the endpoint's path, before its query.
  @Test func credentialsInAnExportURLsQueryAreMaskedAndTheTracesPathGoesBeforeIt() throws {
    let folder = TemporaryDirectory("dray-export-query")
    let emulator = try Emulator()
    let refusing = try TelemetryReceiver(status: 400)
    let lineage = refusing.url.replacing("http://", with: "http://user:LineagePw99@") + "lineage?api_key=LineageKey77&plain=p1"
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { url: "\(lineage)" }
            otlp: { endpoint: "\(refusing.url)e500?X-Amz-Signature=OtlpSig5&private_token=Otlp%2FTok6" }
          """))
    let plan = try Command.dray(["plan", manifest])
    let json = try Command.dray(["plan", "--json", manifest])
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    for output in [plan.output, json.output, result.output] {
      for secret in ["LineagePw99", "LineageKey77", "OtlpSig5", "Otlp%2FTok6", "Otlp/Tok6"] {
        #expect(!output.contains(secret), "\(secret) in \(output)")
      }
    }
    #expect(plan.output.contains("lineage?api_key=***&plain=p1"), "\(plan.output)")
    #expect(plan.output.contains("e500/v1/traces?X-Amz-Signature=***&private_token=***"), "\(plan.output)")
    let warnings = Self.warnings(result.stderr)
    #expect(warnings.contains { $0.contains("lineage?api_key=***&plain=p1 after 1 try") }, "\(warnings)")
    #expect(warnings.contains { $0.contains("e500/v1/traces?X-Amz-Signature=***&private_token=*** after 1 try") }, "\(warnings)")
    // The wire has the keys as written, and the trace's path before the query.
    let paths = try refusing.received().compactMap { $0["path"] as? String }
    #expect(Set(paths) == ["/lineage?api_key=LineageKey77&plain=p1", "/e500/v1/traces?X-Amz-Signature=OtlpSig5&private_token=Otlp%2FTok6"])
    // The same key in OTEL_EXPORTER_OTLP_ENDPOINT, which validation never sees.
    let bare = try folder.write("bare.yaml", Self.manifest(emulator, report: "  otlp: {}"))
    let environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "\(refusing.url)e?api_key=EnvKey-Sentinel-8"]
    let envPlan = try Command.dray(["plan", bare], environment: environment)
    #expect(envPlan.output.contains("e/v1/traces?api_key=***") && !envPlan.output.contains("Sentinel"), "\(envPlan.output)")
  }

  /// A run killed before its end gets its `ABORT` from the next run, which finds it
  /// abandoned: `eventTime` is when it was found, and the `dray_abandoned` facet says so.
  @Test func aKilledRunGetsItsAbortFromTheNextRun() throws {
    let folder = TemporaryDirectory("dray-lineage-killed")
    let emulator = try Emulator()
    let manifest = try folder.write("job.yaml", Self.manifest(emulator, report: "  openlineage: { path: events.jsonl }"))
    let events = folder.path + "/events.jsonl"
    let killed = try Command.dray(["run", manifest], environment: ["DRAY_TEST_CRASH_AT": "before-commit:fruits"])
    #expect(killed.status != 0, "\(killed.output)")
    var lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
    try #require(lines.count == 1, "\(lines)")
    let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
    let firstRun = try #require((first["run"] as? [String: Any])?["runId"] as? String)

    let next = try Command.dray(["run", manifest])
    #expect(next.status == 0, "\(next.output)")
    let checked = try TelemetryCheck.check("openlineage", events)
    #expect(checked.problems == "")
    let list = Self.events(checked.json)
    #expect(list.map { $0["eventType"] as? String } == ["START", "ABORT", "START", "COMPLETE"])
    lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
    let abort = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
    let run = try #require(abort["run"] as? [String: Any])
    #expect(run["runId"] as? String == firstRun)
    let facet = try #require((run["facets"] as? [String: Any])?["dray_abandoned"] as? [String: Any])
    #expect((facet["note"] as? String)?.contains("marked it abandoned") == true, "\(facet)")
    #expect(abort["eventTime"] as? String == facet["foundAt"] as? String)
    #expect((abort["eventTime"] as? String ?? "") > (first["eventTime"] as? String ?? ""))
    let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as? [String: Any])
    #expect((second["run"] as? [String: Any])?["runId"] as? String != firstRun)
  }

  /// An `OTEL_EXPORTER_OTLP_ENDPOINT` that is no address is one warning and no try; a
  /// malformed entry of `OTEL_EXPORTER_OTLP_HEADERS` is one warning naming its place.
  @Test func badOTLPVariablesAreWarnedOfWithoutTheirValues() throws {
    let folder = TemporaryDirectory("dray-otlp-badenv")
    let emulator = try Emulator()
    let manifest = try folder.write("job.yaml", Self.manifest(emulator, report: "  otlp: {}"))
    let result = try Command.dray(
      ["run", manifest],
      environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "not a url", "OTEL_EXPORTER_OTLP_HEADERS": "x-api=sekrit-77,bad"])
    #expect(result.status == 0, "\(result.output)")
    let warnings = Self.warnings(result.stderr)
    #expect(warnings.count == 2, "\(result.stderr)")
    #expect(warnings.contains { $0.contains("OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// address") }, "\(warnings)")
    #expect(warnings.contains { $0.contains("OTEL_EXPORTER_OTLP_HEADERS: entry 2 ") }, "\(warnings)")
    #expect(!result.output.contains("sekrit-77") && !result.output.contains("not a url"))
  }

  /// A per-signal endpoint (ending in `/v1/traces`) is used as it is, in the plan too.
  @Test func anEndpointEndingInTheTracesPathIsNotDoubled() throws {
    let folder = TemporaryDirectory("dray-otlp-signal")
    let emulator = try Emulator()
    let manifest = try folder.write("job.yaml", Self.manifest(emulator, report: "  otlp: { endpoint: \"http://x:4318/v1/traces\" }"))
    let plan = try Command.dray(["plan", manifest])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(plan.stdout.contains("trace POSTed to http://x:4318/v1/traces"), "\(plan.stdout)")
    #expect(!plan.stdout.contains("/v1/traces/v1/traces"), "\(plan.stdout)")
  }
}
