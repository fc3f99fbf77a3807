import DrayTestSupport
import Foundation
import Glibc
import Testing

/// `report.openlineage` and `report.otlp` (docs/report.md): what real receivers get, decoded
/// and validated with the OpenLineage and OpenTelemetry Python packages
/// (`scripts/check-telemetry.py`), and runs whose receivers are down.
@Suite struct TelemetryExportTests {
  static let apiKey = "ak-Telemetry-7731"
  static let collectorSecret = "otlp-Sentinel-4242"
  static let tenantSecret = "tenant-Sentinel-5151"

  /// A job against the emulator: schemes, FRUITS and LANGUAGES loaded, an SQL step; with an
  /// `http` step against `api` (its key in the query) when given.
  static func manifest(_ emulator: Emulator, api: OAuthServer? = nil, report: String) -> String {
    var text =
      JobText.header(
        job: "nightly", emulator: emulator, database: "data/db.sqlite", retry: "{ count: 1, interval: 50ms, backoff: fixed, jitter: false }"
      )
        + """
        steps:
          - id: schemes
            schemes: { resources: [FRUITS, LANGUAGES] }
          - id: fruits
            table_stream: { resource: FRUITS }
          - id: languages
            table_stream: { resource: LANGUAGES }

        """
    if let api {
      text += """
          - id: items
            http:
              base_url: "\(api.url)"
              path: items
              auth: { api_key: { query: api_key, value: "\(apiKey)" } }
              load: { table: items, records: /data }
              paginate: { next: /next }

        """
    }
    text += """
        - id: cheap
          sql: CREATE TABLE IF NOT EXISTS cheap(name TEXT); DELETE FROM cheap;
      report:
      \(report)

      """
    return text
  }

  static func report(_ stdout: String) throws -> [String: Any] {
    let line = try #require(stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
    return try ReportCheck.json(String(line.dropFirst("report: ".count)))
  }

  /// Rows per table the JSON report gives, over its steps.
  static func rows(_ report: [String: Any]) -> [String: Int] {
    var rows: [String: Int] = [:]
    for step in report["steps"] as? [[String: Any]] ?? [] {
      for (table, count) in step["rows"] as? [String: Int] ?? [:] { rows[table] = count }
    }
    return rows
  }

  static func events(_ checked: Any) -> [[String: Any]] { checked as? [[String: Any]] ?? [] }

  @Test func lineageEventsOfASucceededAFailedAnInterruptedAndAResumedRun() throws {
    let folder = TemporaryDirectory("dray-lineage")
    let emulator = try Emulator()
    let manifest = try folder.write(
      "job.yaml", Self.manifest(emulator, report: "  openlineage: { path: lineage/events.jsonl, namespace: etl-prod }"))
    let events = folder.path + "/lineage/events.jsonl"
    let database = folder.path + "/data/db.sqlite"

    let good = try Command.dray(["run", manifest])
    #expect(good.status == 0, "\(good.output)")
    var checked = try TelemetryCheck.check("openlineage", events)
    #expect(checked.problems == "")
    var list = Self.events(checked.json)
    try #require(list.map { $0["eventType"] as? String } == ["START", "COMPLETE"])
    let runID = try #require(Self.report(good.stdout)["run_id"] as? String)
    #expect(Set(list.map { $0["runId"] as? String }).count == 1)
    #expect(list.allSatisfy { ($0["job"] as? [String: Any])?["namespace"] as? String == "etl-prod" })
    #expect(list.allSatisfy { ($0["job"] as? [String: Any])?["name"] as? String == "nightly" })
    let origin = String(emulator.url.dropLast())
    #expect(
      list[0]["inputs"] as? [String] == ["FRUITS", "LANGUAGES"].map { "\(origin) DocumentationExampleEnv/DocumentationExampleProj/\($0)" })
    #expect((list[0]["outputs"] as? [Any])?.isEmpty == true)
    let rows = Self.rows(try Self.report(good.stdout))
    let outputs = try #require(list[1]["outputs"] as? [[String: Any]])
    #expect(outputs.count == rows.count && !outputs.isEmpty)
    for output in outputs {
      let name = try #require(output["name"] as? String)
      #expect(output["namespace"] as? String == "sqlite://" + realPath(database))
      #expect(output["rowCount"] as? Int == rows[name], "\(name)")
      #expect((output["fields"] as? [String])?.isEmpty == false, "\(name)")
    }
    #expect(outputs.contains { $0["name"] as? String == "FRUITS__output_table" && $0["rowCount"] as? Int == 5 })
    #expect(!runID.isEmpty)

    // Failed: LANGUAGES answers 500 until the retry policy gives up.
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/LANGUAGES/", "status": 500, "times": 5}]"#)
    let failed = try Command.dray(["run", manifest, "--fresh"])
    #expect(failed.status == 69, "\(failed.output)")
    checked = try TelemetryCheck.check("openlineage", events)
    #expect(checked.problems == "")
    list = Self.events(checked.json)
    try #require(list.map { $0["eventType"] as? String } == ["START", "COMPLETE", "START", "FAIL"])
    #expect(list[2]["runId"] as? String == list[3]["runId"] as? String && list[2]["runId"] as? String != list[0]["runId"] as? String)
    let failedOutputs = try #require(list[3]["outputs"] as? [[String: Any]])
    // The schemes step made both tables again; FRUITS got its rows, LANGUAGES none.
    #expect(failedOutputs.map { $0["name"] as? String } == ["FRUITS__output_table", "LANGUAGES__output_table"])
    #expect(failedOutputs.map { $0["rowCount"] as? Int } == [5, 0])
    try emulator.admin("POST", "faults", json: "[]")

    // Interrupted during LANGUAGES, then resumed: ABORT, and the resumed run names it.
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/LANGUAGES/", "trickle": 40000}]"#)
    let downloads = folder.path + "/.dray/downloads/nightly"
    let dray = try BackgroundDray(["run", manifest, "--fresh"], logPrefix: folder.path + "/run")
    try dray.wait(for: "a partial download of LANGUAGES") {
      (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.contains { $0.hasPrefix("languages-") && $0.hasSuffix(".part") }
        == true
    }
    dray.send(SIGINT)
    let interrupted = try dray.finish()
    #expect(interrupted.status == 130, "\(interrupted.output)")
    try emulator.admin("POST", "faults", json: "[]")
    let resumed = try Command.dray(["run", manifest])
    #expect(resumed.status == 0, "\(resumed.output)")
    checked = try TelemetryCheck.check("openlineage", events)
    #expect(checked.problems == "")
    list = Self.events(checked.json)
    try #require(list.map { $0["eventType"] as? String } == ["START", "COMPLETE", "START", "FAIL", "START", "ABORT", "START", "COMPLETE"])
    let interruptedRun = try #require(Self.report(interrupted.stdout)["run_id"] as? String)
    let resumes = try #require((list[6]["runFacets"] as? [String: Any])?["dray_resumes"] as? [String: Any])
    #expect(resumes["runId"] as? String == list[5]["runId"] as? String)
    #expect(resumes["drayRunId"] as? String == interruptedRun)
    // The resumed run wrote LANGUAGES; FRUITS finished in the run it resumes.
    let resumedOutputs = try #require(list[7]["outputs"] as? [[String: Any]])
    #expect(resumedOutputs.map { $0["name"] as? String }.contains("LANGUAGES__output_table"))
    #expect(!resumedOutputs.map { $0["name"] as? String }.contains("FRUITS__output_table"))

    let text = try String(contentsOfFile: events, encoding: .utf8)
    #expect(!text.contains(DemoUser.password))
  }

  @Test func aTraceAndLineageReachTheirReceiversWithTheRightParentsAndNoSecret() throws {
    let folder = TemporaryDirectory("dray-otlp")
    let emulator = try Emulator()
    let api = try OAuthServer(["--api-key", Self.apiKey, "--pages", "3"])
    let receiver = try TelemetryReceiver()
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator, api: api,
        report: """
            openlineage: { url: "\(receiver.url)api/v1/lineage" }
            otlp: { headers: { Authorization: "Bearer \(Self.collectorSecret)" } }
          """))
    // The environment gives the endpoint and one more header; report.otlp turned export on.
    let environment = [
      "OTEL_EXPORTER_OTLP_ENDPOINT": String(receiver.url.dropLast()),
      "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=\(Self.tenantSecret),authorization=ignored",
    ]
    let result = try Command.dray(["run", manifest, "--verbose"], environment: environment)
    #expect(result.status == 0, "\(result.output)")
    let received = try receiver.received()
    #expect(received.map { $0["path"] as? String } == ["/api/v1/lineage", "/api/v1/lineage", "/v1/traces"])
    let traceHeaders = try #require(received.last?["headers"] as? [String: String])
    #expect(traceHeaders["Authorization"] == "Bearer \(Self.collectorSecret)")
    #expect(traceHeaders["x-tenant"] == Self.tenantSecret)

    let file = try folder.write("received.json", try receiver.receivedText())
    let lineage = try TelemetryCheck.check("openlineage", file)
    #expect(lineage.problems == "")
    let events = Self.events(lineage.json)
    #expect(events.map { $0["eventType"] as? String } == ["START", "COMPLETE"])
    #expect((events.first?["job"] as? [String: Any])?["namespace"] as? String == "dray")
    #expect((events.first?["inputs"] as? [String])?.last == "\(String(api.url.dropLast())) /items")

    let otlp = try TelemetryCheck.check("otlp", file)
    #expect(otlp.problems == "")
    let spans = try #require(otlp.json as? [[String: Any]])
    let roots = spans.filter { ($0["parentSpanId"] as? String)?.isEmpty == true }
    #expect(roots.count == 1)
    let root = try #require(roots.first)
    #expect(root["name"] as? String == "dray run nightly")
    #expect(Set(spans.map { $0["traceId"] as? String }).count == 1)
    #expect((events.first?["runId"] as? String)?.replacing("-", with: "") == root["traceId"] as? String)
    let steps = spans.filter {
      $0["parentSpanId"] as? String == root["spanId"] as? String && ($0["name"] as? String)?.hasPrefix("step ") == true
    }
    #expect(steps.map { $0["name"] as? String } == ["step schemes", "step fruits", "step languages", "step items", "step cheap"])
    let stepIDs = Dictionary(
      uniqueKeysWithValues: steps.map { (($0["name"] as? String ?? "").dropFirst(5).description, $0["spanId"] as? String ?? "") })
    let requests = spans.filter { ($0["attributes"] as? [String: Any])?["http.request.method"] != nil }
    // One span per request each server saw, under the step that made it.
    #expect(requests.count == (try emulator.requests().count) + (try api.stats().apiPaths.count), "\(requests.count)")
    let items = requests.filter { ($0["attributes"] as? [String: Any])?["dray.step.id"] as? String == "items" }
    #expect(items.count == 3)
    for span in requests {
      let attributes = try #require(span["attributes"] as? [String: Any])
      let step = try #require(attributes["dray.step.id"] as? String)
      #expect(span["parentSpanId"] as? String == stepIDs[step], "\(attributes)")
      #expect(attributes["http.response.status_code"] as? Int == 200)
      #expect(attributes["server.address"] as? String == "127.0.0.1")
      #expect(span["statusCode"] as? Int == 1)
    }
    #expect(items.allSatisfy { (($0["attributes"] as? [String: Any])?["url.full"] as? String)?.contains("api_key=REDACTED") == true })
    let commits = spans.filter { ($0["attributes"] as? [String: Any])?["db.system"] as? String == "sqlite" }
    #expect(!commits.isEmpty)
    #expect(
      commits.allSatisfy { span in
        stepIDs.values.contains(span["parentSpanId"] as? String ?? "") || span["parentSpanId"] as? String == root["spanId"] as? String
      })
    // The load's commit, made on its own thread while FRUITS downloaded, is the step's.
    #expect(commits.contains { $0["parentSpanId"] as? String == stepIDs["fruits"] })
    let fruits = try #require(steps.first { $0["name"] as? String == "step fruits" })
    #expect((fruits["attributes"] as? [String: Any])?["dray.rows"] as? Int == 5)

    let everything = try receiver.receivedText().replacing(Self.collectorSecret, with: "").replacing(Self.tenantSecret, with: "")
    let bodies = (received.map { $0["body"] as? String ?? "" }).joined()
    for secret in [Self.apiKey, DemoUser.password, Self.collectorSecret, Self.tenantSecret] {
      #expect(!bodies.contains(secret), "\(secret) in an export")
      #expect(!result.output.contains(secret), "\(secret) printed")
    }
    #expect(!everything.contains(Self.apiKey))
  }

  @Test func aFailedRunsTraceHasErrorStatusesOnTheStepAndTheRun() throws {
    let folder = TemporaryDirectory("dray-otlp-failed")
    let emulator = try Emulator()
    let receiver = try TelemetryReceiver()
    let manifest = try folder.write(
      "job.yaml", Self.manifest(emulator, report: "  otlp: { endpoint: \"\(receiver.url)\" }"))
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/LANGUAGES/", "status": 500, "times": 5}]"#)
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 69, "\(result.output)")
    let file = try folder.write("received.json", try receiver.receivedText())
    let otlp = try TelemetryCheck.check("otlp", file)
    #expect(otlp.problems == "")
    let spans = try #require(otlp.json as? [[String: Any]])
    let root = try #require(spans.first { ($0["parentSpanId"] as? String)?.isEmpty == true })
    #expect(root["statusCode"] as? Int == 2)
    let languages = try #require(spans.first { $0["name"] as? String == "step languages" })
    #expect(languages["statusCode"] as? Int == 2)
    #expect((languages["statusMessage"] as? String)?.hasPrefix("http_500") == true)
    #expect((languages["attributes"] as? [String: Any])?["dray.retries"] as? Int == 1)
    let failedRequests = spans.filter {
      $0["parentSpanId"] as? String == languages["spanId"] as? String
        && ($0["attributes"] as? [String: Any])?["http.response.status_code"] as? Int == 500
    }
    #expect(failedRequests.count == 2)
    #expect(failedRequests.allSatisfy { $0["statusCode"] as? Int == 2 })
    #expect(failedRequests.contains { ($0["attributes"] as? [String: Any])?["http.request.resend_count"] as? Int == 1 })
    #expect(spans.first { $0["name"] as? String == "step fruits" }?["statusCode"] as? Int == 1)
  }

  @Test func partitionsAndGroupMembersAreSpansUnderTheirStep() throws {
    let folder = TemporaryDirectory("dray-otlp-members")
    let api = try OAuthServer(["--api-key", Self.apiKey, "--pages", "2"])
    let receiver = try TelemetryReceiver()
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: members
      database: { path: data/db.sqlite }
      steps:
        - id: items
          partitions: { list: [{ part: a }, { part: b }] }
          http:
            base_url: "\(api.url)"
            path: items
            query: { part: "{part}" }
            auth: { api_key: { query: api_key, value: "\(Self.apiKey)" } }
            load: { table: items, records: /data }
            paginate: { next: /next }
        - id: group
          parallel:
            steps:
              - { id: one, sql: "CREATE TABLE IF NOT EXISTS one(x)" }
              - { id: two, sql: "CREATE TABLE IF NOT EXISTS two(x)" }
      report:
        otlp: { endpoint: "\(receiver.url)" }

      """)
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let otlp = try TelemetryCheck.check("otlp", try folder.write("received.json", try receiver.receivedText()))
    #expect(otlp.problems == "")
    let spans = try #require(otlp.json as? [[String: Any]])
    func span(_ name: String) throws -> [String: Any] { try #require(spans.first { $0["name"] as? String == name }) }
    let items = try span("step items")
    let group = try span("step group")
    let partitions = spans.filter {
      $0["parentSpanId"] as? String == items["spanId"] as? String && ($0["name"] as? String)?.hasPrefix("step ") == true
    }
    #expect(partitions.map { $0["name"] as? String } == ["step items[part=a]", "step items[part=b]"])
    #expect(partitions.map { ($0["attributes"] as? [String: Any])?["dray.partition.part"] as? String } == ["a", "b"])
    #expect(try span("step one")["parentSpanId"] as? String == group["spanId"] as? String)
    #expect(try span("step two")["parentSpanId"] as? String == group["spanId"] as? String)
    // Each partition's two pages are its own requests.
    for partition in partitions {
      let requests = spans.filter {
        $0["parentSpanId"] as? String == partition["spanId"] as? String
          && ($0["attributes"] as? [String: Any])?["http.request.method"] != nil
      }
      #expect(requests.count == 2, "\(partition["name"] ?? "")")
    }
    #expect(try api.stats().apiPaths.count == 4)
  }

  @Test func postgresOutputsAreNamedAsTheNamingSpecSays() throws {
    let folder = TemporaryDirectory("dray-lineage-pg")
    let emulator = try Emulator()
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("lineage")
    try server.connect(database: database).execute("CREATE SCHEMA lineage")
    let receiver = try TelemetryReceiver()
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: pg-lineage
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      database: { url: "\(server.urlText(database: database))", schema: lineage }
      steps:
        - schemes: { resources: [FRUITS] }
        - id: fruits
          table_stream: { resource: FRUITS }
      report:
        openlineage: { path: events.jsonl }
        otlp: { endpoint: "\(receiver.url)" }

      """)
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let checked = try TelemetryCheck.check("openlineage", folder.path + "/events.jsonl")
    #expect(checked.problems == "")
    let events = Self.events(checked.json)
    try #require(events.map { $0["eventType"] as? String } == ["START", "COMPLETE"])
    let outputs = try #require(events[1]["outputs"] as? [[String: Any]])
    let fruits = try #require(outputs.first { ($0["name"] as? String)?.hasSuffix(".FRUITS__output_table") == true })
    #expect(fruits["namespace"] as? String == "postgres://127.0.0.1:\(server.port)")
    #expect(fruits["name"] as? String == "\(database).lineage.FRUITS__output_table")
    #expect(fruits["rowCount"] as? Int == 5)
    #expect(fruits["fields"] as? [String] == ["hhive_id", "id", "name", "price", "in_season"])
    let otlp = try TelemetryCheck.check("otlp", try folder.write("received.json", try receiver.receivedText()))
    #expect(otlp.problems == "")
    let spans = try #require(otlp.json as? [[String: Any]])
    let fruitsStep = try #require(spans.first { $0["name"] as? String == "step fruits" })
    #expect(
      spans.contains {
        ($0["attributes"] as? [String: Any])?["db.system"] as? String == "postgresql"
          && $0["parentSpanId"] as? String == fruitsStep["spanId"] as? String
      })
    let everything = try String(contentsOfFile: folder.path + "/events.jsonl", encoding: .utf8) + (try receiver.receivedText())
    #expect(!everything.contains(PostgresServer.password))
  }

  @Test func receiversThatAreDownCostOneWarningEachAndNeverTheRun() throws {
    let folder = TemporaryDirectory("dray-otlp-down")
    let emulator = try Emulator()
    // A port nothing listens on, and a receiver that answers 503 to everything.
    let closed = try TelemetryReceiver().url
    let refusing = try TelemetryReceiver(status: 503)
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { url: "\(closed)api/v1/lineage" }
            otlp: { endpoint: "\(refusing.url)" }
          """))
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let warnings = result.stderr.split(separator: "\n").filter { $0.contains("warning:") }
    #expect(warnings.count == 2, "\(result.stderr)")
    #expect(warnings.contains { $0.contains("the OpenLineage event was not delivered to \(closed)api/v1/lineage after 3 tries") })
    #expect(warnings.contains { $0.contains("the trace was not delivered to \(refusing.url)v1/traces after 3 tries within 5s: HTTP 503") })
    #expect(try refusing.received().count == 3)
    #expect(try Self.report(result.stdout)["status"] as? String == "succeeded")
  }

  @Test func anEventsFileNeverLandsOnAFileDrayKeeps() throws {
    let folder = TemporaryDirectory("dray-lineage-kept")
    let emulator = try Emulator()
    // By its name: refused by validation, with its place.
    let named = try folder.write("named.yaml", Self.manifest(emulator, report: "  openlineage: { path: data/db.sqlite }"))
    let refused = try Command.dray(["validate", named])
    #expect(refused.status == 2, "\(refused.output)")
    #expect(refused.stderr.contains("named.yaml:"), "\(refused.stderr)")
    #expect(
      refused.stderr.contains(
        "'report.openlineage.path': 'data/db.sqlite' is the job's database"), "\(refused.stderr)")
    // Through a symbolic link: one warning at run time.
    let manifest = try folder.write("job.yaml", Self.manifest(emulator, report: "  openlineage: { path: events.jsonl }"))
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/events.jsonl", withDestinationPath: "data/db.sqlite")
    let result = try Command.dray(["run", manifest])
    #expect(result.status == 0, "\(result.output)")
    let warnings = result.stderr.split(separator: "\n").filter { $0.contains("warning:") }
    #expect(warnings.count == 1, "\(result.stderr)")
    #expect(
      warnings.allSatisfy { $0.contains("the OpenLineage event was not written to") && $0.contains("refused: it is the job's database") },
      "\(warnings)")
    // The database is whole: the next run reads its journal and skips nothing it should not.
    let again = try Command.dray(["run", manifest])
    #expect(again.status == 0, "\(again.output)")
  }

  @Test func theEnvironmentAloneTurnsNoExportOn() throws {
    let folder = TemporaryDirectory("dray-otlp-env")
    let emulator = try Emulator()
    let receiver = try TelemetryReceiver()
    let manifest = try folder.write("job.yaml", Self.manifest(emulator, report: "  formats: [json]"))
    let result = try Command.dray(["run", manifest], environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url])
    #expect(result.status == 0, "\(result.output)")
    #expect(try receiver.received().isEmpty)
    let plan = try Command.dray(["plan", manifest], environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url])
    #expect(!plan.stdout.contains("\n  otlp ") && !plan.stdout.contains("\n  openlineage "), "\(plan.stdout)")

    // report.otlp present but no endpoint anywhere: a warning, nothing sent, the run fine.
    let empty = try folder.write("empty.yaml", Self.manifest(emulator, report: "  otlp: {}"))
    let warned = try Command.dray(["run", empty])
    #expect(warned.status == 0, "\(warned.output)")
    #expect(
      warned.stderr.contains(
        "warning: report.otlp is set without an endpoint and OTEL_EXPORTER_OTLP_ENDPOINT is not set: no trace is sent; give report.otlp.endpoint"
      ), "\(warned.stderr)")
    #expect(try receiver.received().isEmpty)
  }

  @Test func thePlanShowsBothWithTheHeadersMasked() throws {
    let folder = TemporaryDirectory("dray-otlp-plan")
    let emulator = try Emulator()
    let manifest = try folder.write(
      "job.yaml",
      Self.manifest(
        emulator,
        report: """
            openlineage: { path: lineage.jsonl, namespace: etl }
            otlp: { headers: { X-Honeycomb-Team: \(Self.collectorSecret) } }
          """))
    let plan = try Command.dray(["plan", manifest], environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(
      plan.stdout.contains("openlineage  events appended to \(realPath(folder.path))/lineage.jsonl, job namespace etl"), "\(plan.stdout)")
    #expect(
      plan.stdout.contains("otlp         trace POSTed to http://collector:4318/v1/traces with X-Honeycomb-Team: ***"), "\(plan.stdout)")
    let json = try Command.dray(["plan", manifest, "--json"])
    #expect(json.status == 0, "\(json.output)")
    let report = try #require(
      (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["report"] as? [String: Any])
    #expect(report["openlineage"] as? [String: String] == ["path": realPath(folder.path) + "/lineage.jsonl", "namespace": "etl"])
    let otlp = try #require(report["otlp"] as? [String: Any])
    #expect(otlp["endpoint"] is NSNull)
    #expect(otlp["headers"] as? [String: String] == ["X-Honeycomb-Team": "***"])
    for text in [plan.output, json.output] { #expect(!text.contains(Self.collectorSecret)) }
    let text = try Command.dray(["plan", manifest])
    #expect(text.stdout.contains("otlp         no endpoint: give report.otlp.endpoint or set OTEL_EXPORTER_OTLP_ENDPOINT; nothing is sent"))
  }

  @Test func badExportSettingsAreRefusedWithTheirPlace() throws {
    let folder = TemporaryDirectory("dray-otlp-bad")
    let emulator = try Emulator()
    let both = try folder.write(
      "both.yaml", Self.manifest(emulator, report: "  openlineage: { url: \"http://marquez:5000/api/v1/lineage\", path: l.jsonl }"))
    var result = try Command.dray(["validate", both])
    #expect(result.status == 2)
    #expect(result.stderr.contains("'report.openlineage' takes 'url' (a lineage server) or 'path' (a file), not both"), "\(result.stderr)")
    let neither = try folder.write("neither.yaml", Self.manifest(emulator, report: "  openlineage: { namespace: x }"))
    result = try Command.dray(["validate", neither])
    #expect(result.status == 2)
    #expect(
      result.stderr.contains("missing required key 'url' (a lineage server) or 'path' (a file) in report.openlineage"), "\(result.stderr)")
    let badURL = try folder.write("bad.yaml", Self.manifest(emulator, report: "  otlp: { endpoint: collector:4318 }"))
    result = try Command.dray(["validate", badURL])
    #expect(result.status == 2)
    #expect(
      result.stderr.contains("'report.otlp.endpoint' must be an http:// or https:// address such as http://collector:4318"),
      "\(result.stderr)")
    let empty = try folder.write("empty.yaml", Self.manifest(emulator, report: "  otlp: {}"))
    #expect(try Command.dray(["validate", empty]).status == 0)
  }
}
