import DrayManifest
import DrayModel
import Foundation
import Testing

@testable import DrayEngine

/// The pure parts of `report.openlineage` and `report.otlp`: the run's UUID, the environment
/// filling in `report.otlp`, and `url.full` without secrets (the exports themselves are
/// tested against real receivers in TelemetryExportTests).
@Suite struct ExportsTests {
  @Test func theRunUUIDIsVersion8FromSHA256AndStable() throws {
    let id = LineageEvents.runUUID(job: "nightly", runID: "20261130T120311.201Z-78795a")
    #expect(id == LineageEvents.runUUID(job: "nightly", runID: "20261130T120311.201Z-78795a"))
    #expect(id != LineageEvents.runUUID(job: "nightly", runID: "20261130T120311.201Z-78795b"))
    #expect(id != LineageEvents.runUUID(job: "other", runID: "20261130T120311.201Z-78795a"))
    let uuid = try #require(UUID(uuidString: id))
    #expect(uuid.uuidString.lowercased() == id)
    let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
    #expect(bytes[6] >> 4 == 8, "version 8")
    #expect(bytes[8] >> 6 == 0b10, "RFC 9562 variant")
    // The rest is SHA-256 of dray-run:<job>:<run id>.
    let digest = SHA256.digest(Array("dray-run:nightly:20261130T120311.201Z-78795a".utf8))
    #expect(bytes[0..<6] == digest[0..<6] && bytes[9..<16] == digest[9..<16])
    #expect(bytes[6] & 0x0f == digest[6] & 0x0f && bytes[8] & 0x3f == digest[8] & 0x3f)
  }

  @Test func theEnvironmentFillsInWhatReportOTLPLeavesOut() {
    let environment = [
      "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env-collector:4318/",
      "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=a%20b, authorization=from-env ,broken,=x",
    ]
    let fromEnvironment = OTLPTarget.resolve(OTLPSettings(), environment: environment)
    #expect(fromEnvironment.endpoint == "http://env-collector:4318")
    #expect(fromEnvironment.tracesURL == "http://env-collector:4318/v1/traces")
    #expect(fromEnvironment.headers.map { "\($0.name)=\($0.value)" } == ["x-tenant=a b", "authorization=from-env"])
    #expect(fromEnvironment.headers.allSatisfy { $0.holdsSecret })
    // The malformed entries are named by their place, never by what they hold.
    #expect(
      fromEnvironment.problems == [
        "OTEL_EXPORTER_OTLP_HEADERS: entries 3, 4 (counting from 1, comma-separated) are not name=value and are left out; write each as name=value (value percent-encoded)"
      ])

    let given = OTLPTarget.resolve(
      OTLPSettings(endpoint: "https://manifest:4318", headers: [HTTPHeader("Authorization", "Bearer m", secret: true)]),
      environment: environment)
    #expect(given.endpoint == "https://manifest:4318")
    // The manifest's Authorization wins; the environment adds the field it does not name.
    #expect(given.headers.map { "\($0.name)=\($0.value)" } == ["Authorization=Bearer m", "x-tenant=a b"])

    #expect(OTLPTarget.resolve(OTLPSettings(), environment: [:]).endpoint == "")
    #expect(OTLPTarget.resolve(OTLPSettings(), environment: [:]).problems.isEmpty)
  }

  @Test func anEndpointEndingInTheTracesPathIsUsedAsItIs() {
    for endpoint in ["http://x:4318/v1/traces", "http://x:4318/v1/traces/"] {
      #expect(OTLPTarget.resolve(OTLPSettings(endpoint: endpoint), environment: [:]).tracesURL == "http://x:4318/v1/traces")
      let fromEnvironment = OTLPTarget.resolve(OTLPSettings(), environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": endpoint])
      #expect(fromEnvironment.tracesURL == "http://x:4318/v1/traces")
    }
    #expect(OTLPTarget.resolve(OTLPSettings(endpoint: "http://x:4318/otlp"), environment: [:]).tracesURL == "http://x:4318/otlp/v1/traces")
  }

  @Test func anEnvironmentEndpointThatIsNoAddressIsOneProblemAndNoEndpoint() {
    let target = OTLPTarget.resolve(
      OTLPSettings(), environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "not a url", "OTEL_EXPORTER_OTLP_HEADERS": "x-api=k-1,bad"])
    #expect(target.endpoint == "")
    #expect(target.endpointRefused)
    #expect(target.problems.count == 2, "\(target.problems)")
    #expect(target.problems[0].hasPrefix("OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// address"))
    #expect(target.problems[1].hasPrefix("OTEL_EXPORTER_OTLP_HEADERS: entry 2 "))
    #expect(target.problems.allSatisfy { !$0.contains("not a url") && !$0.contains("k-1") && !$0.contains("bad") })
    // The manifest's endpoint is not the variable's: the variable is not read.
    let given = OTLPTarget.resolve(OTLPSettings(endpoint: "http://c:4318"), environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"])
    #expect(given.problems.isEmpty && given.endpoint == "http://c:4318")
  }

  @Test func urlFullKeepsNoCredentialQueryValue() {
    #expect(
      OTLPTrace.safeURL("http://h/items?page=2&api_key=ak-1&Token=t&x=1") == "http://h/items?page=2&api_key=REDACTED&Token=REDACTED&x=1")
    #expect(OTLPTrace.safeURL("http://h/items") == "http://h/items")
    #expect(OTLPTrace.safeURL("http://h/?access-token=z&flag") == "http://h/?access-token=REDACTED&flag")
  }

  @Test func aRunKeepsAtMostLimitSpansAndCountsTheRest() throws {
    // Other tests of this process may record meanwhile: they only add to what is dropped.
    Tracing.start()
    let now = Date()
    for _ in 0..<(Tracing.limit + 5) {
      Tracing.record(Tracing.Span(kind: .commit(system: "sqlite"), step: "s", start: now, end: now, error: nil))
    }
    let recorded = Tracing.stop()
    #expect(recorded.spans.count == Tracing.limit)
    #expect(recorded.dropped >= 5)
    #expect(!Tracing.isOn)
    Tracing.record(Tracing.Span(kind: .commit(system: "sqlite"), step: "s", start: now, end: now, error: nil))
    #expect(Tracing.stop().spans.isEmpty, "nothing is recorded while off")

    let report = RunReport(
      job: "j", runID: "20261130T120311.201Z-78795a", manifestPath: "j.yaml", manifestFingerprint: "f", host: "h", startedAt: now,
      endedAt: now, status: .succeeded, exitCode: 0, steps: [])
    let json = OTLPTrace(report: report, spans: [], dropped: 7, redactor: Redactor()).json
    #expect(json.contains(#"{"key":"dray.spans_dropped","value":{"intValue":"7"}}"#), "\(json)")
  }

  @Test func inputsAreEveryResourceFileAndAddressReadOnce() throws {
    let manifest = try ManifestLoader(environment: [:]).load(
      text: """
        version: 1
        job: reads
        platform: { host: "http://fmp.example:8765/", environment: Env, project: Proj }
        auth: { username: u, password: p }
        database: { path: db.sqlite }
        steps:
          - schemes: { resources: [FRUITS] }
          - table_stream: { resource: FRUITS }
          - files: { action: get, connection: nfs4, path: docs/readme.txt, local: out/readme.txt }
          - files: { action: put, connection: nfs4, path: docs/up.txt, local: out/readme.txt }
          - id: api
            http: { base_url: "https://api.example.com/v1/", path: "repos/{repo}/issues", query: { state: all }, load: { table: issues } }
            partitions: { list: [{ repo: a }] }
        """, path: "/jobs/reads.yaml", directory: "/jobs")
    let events = LineageEvents(settings: LineageSettings(destination: .path("l.jsonl")), manifest: manifest, job: "reads", runID: "r")
    let inputs = events.inputs.map { value -> String in
      guard case .object(let fields) = value else { return "" }
      return fields.compactMap { if case .string(let text) = $0.value { text } else { nil } }.joined(separator: " ")
    }
    #expect(
      inputs == [
        "http://fmp.example:8765 Env/Proj/FRUITS", "http://fmp.example:8765 Env/Proj/file/nfs4/docs/readme.txt",
        "https://api.example.com /v1/repos/{repo}/issues",
      ])
    #expect(events.database?.namespace == "sqlite:///jobs/db.sqlite")
  }

  @Test func originsLeaveCredentialsOut() {
    #expect(LineageEvents.origin("HTTPS://user:pw@api.example.com:8443/v1/?a=1") == "https://api.example.com:8443")
    #expect(LineageEvents.origin("http://127.0.0.1:8765/") == "http://127.0.0.1:8765")
  }
}
