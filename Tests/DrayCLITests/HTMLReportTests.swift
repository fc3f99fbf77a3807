import DrayTestSupport
import Foundation
import Testing

/// `dray report` and `report.formats: [html]` on real runs against the emulator: a run that
/// succeeds, one that fails, one interrupted and resumed, one with a parallel group. Each
/// page holds every step, status and figure of its JSON report, no secret, is well-formed
/// (`scripts/check-report.py`) and opens in headless Chromium with networking off without a
/// console message (`scripts/check-page-in-browser.sh`).
@Suite struct HTMLReportTests {
  /// A job in its own folder; `steps` is the manifest's `steps:` block.
  struct Job {
    let folder = TemporaryDirectory("dray-html")
    let emulator: Emulator
    var manifest: String { folder.path + "/job.yaml" }

    init(_ emulatorArguments: [String] = [], steps: String, formats: String = "[json]") throws {
      emulator = try Emulator(emulatorArguments)
      try folder.write(
        "job.yaml",
        JobText.header(
          job: "nightly", emulator: emulator, database: "data/db.sqlite", retry: "{ count: 1, interval: 50ms, backoff: fixed }")
          + steps + """
            report:
              path: "reports/{job}-{run_id}.json"
              formats: \(formats)

            """)
    }

    func run() throws -> Command.Result { try Command.dray(["run", manifest]) }

    /// `dray report` with `arguments`; the page's path and text.
    func page(_ arguments: [String] = []) throws -> (path: String, html: String) {
      let result = try Command.dray(["report", manifest] + arguments)
      #expect(result.status == 0, "\(result.output)")
      let printed = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
      let path = printed.hasPrefix("/") ? printed : FileManager.default.currentDirectoryPath + "/" + printed
      return (path, try String(contentsOfFile: path, encoding: .utf8))
    }

    /// The JSON report of the run whose summary is `stdout`.
    func report(_ stdout: String) throws -> [String: Any] {
      let line = try #require(stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
      return try ReportCheck.json(String(line.dropFirst("report: ".count)))
    }
  }

  static let steps = """
    steps:
      - id: schemes
        schemes: { resources: [FRUITS, LANGUAGES] }
      - id: fruits-csv
        table: { resource: FRUITS, output: out/fruits.csv, format: csv }
      - id: languages
        table_stream: { resource: LANGUAGES }
      - id: cheap
        sql: CREATE TABLE IF NOT EXISTS cheap(name TEXT); DELETE FROM cheap;

    """

  /// Text as the page escapes it.
  static func escaped(_ text: String) -> String {
    text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
      .replacing("'", with: "&#39;")
  }

  /// A table name as the page writes it: escaped, wrapped where its parts meet (`__<wbr/>`).
  static func wrapped(_ table: String) -> String {
    table.components(separatedBy: "__").map(escaped).joined(separator: "__<wbr/>")
  }

  /// `1,234`.
  static func count(_ n: Int) -> String {
    let digits = String(n)
    return digits.enumerated().map { ($0 > 0 && (digits.count - $0) % 3 == 0 ? "," : "") + String($1) }.joined()
  }

  /// Every step and member of `report` with its status, kind, rows, bytes, tables, HTTP
  /// statuses, error and skip reason is on `page`.
  static func expectEverything(of report: [String: Any], on page: String) {
    #expect(page.contains(">\(escaped(report["status"] as? String ?? "?"))</span> in "))
    #expect(page.contains("<dd>\(escaped(report["run_id"] as? String ?? "?"))</dd>"))
    for (name, value) in report["totals"] as? [String: Int] ?? [:] {
      #expect(page.contains("<dt>\(name)</dt><dd>\(count(value))</dd>"), "total \(name)")
    }
    func check(_ step: [String: Any]) {
      let id = escaped(step["id"] as? String ?? "?")
      #expect(page.contains("<th scope=\"row\">\(id)</th><td>\(escaped(step["kind"] as? String ?? ""))</td>"), "step \(id)")
      let status = step["status"] as? String ?? "?"
      #expect(page.contains("<th scope=\"row\">\(id)</th><td>\(escaped(step["kind"] as? String ?? ""))</td><td class=\"status "), "\(id)")
      #expect(page.contains(">\(status)</td>"), "\(id) \(status)")
      for (table, rows) in step["rows"] as? [String: Int] ?? [:] {
        #expect(page.contains("\(wrapped(table)): \(count(rows))"), "\(id) rows of \(table)")
      }
      // Bytes on the wire show under the bytes when answers came compressed.
      let bytes = step["bytes"] as? Int ?? -1
      let wire = step["wire_bytes"] as? Int ?? bytes
      let onTheWire = wire == bytes ? "" : "<br/>\(count(wire)) on the wire"
      #expect(page.contains("<td class=\"number\">\(count(bytes))\(onTheWire)</td>"), "\(id) bytes")
      for table in step["tables"] as? [String] ?? [] { #expect(page.contains(wrapped(table)), "\(id) table \(table)") }
      for (code, n) in step["http_statuses"] as? [String: Int] ?? [:] { #expect(page.contains("\(code): \(n)"), "\(id) HTTP \(code)") }
      if let error = step["error"] as? [String: String] {
        #expect(page.contains(escaped(error["message"] ?? "?")), "\(id) error")
        #expect(page.contains("error \(escaped(error["code"] ?? "?"))"), "\(id) error code")
      }
      if let reason = step["skip_reason"] as? String { #expect(page.contains(escaped(reason)), "\(id) skip reason") }
      for member in step["steps"] as? [[String: Any]] ?? [] { check(member) }
    }
    for step in report["steps"] as? [[String: Any]] ?? [] { check(step) }
  }

  /// Well-formed, nothing from elsewhere, and a clean open in Chromium; the screenshot is
  /// saved as `name`.png.
  static func expectSound(_ path: String, screenshot name: String, in folder: TemporaryDirectory) throws {
    #expect(try ReportCheck.problems([path]) == "")
    #expect(try ReportCheck.browserProblems(path, screenshot: folder.path + "/\(name).png") == "")
  }

  @Test func aSuccessfulRunsPageHoldsEveryStepAndFigure() throws {
    let job = try Job(steps: Self.steps)
    let run = try job.run()
    #expect(run.status == 0, "\(run.output)")
    let report = try job.report(run.stdout)
    let page = try job.page()
    #expect(page.path == job.folder.path + "/reports/nightly-\(report["run_id"] as? String ?? "").html")
    Self.expectEverything(of: report, on: page.html)
    #expect(page.html.contains("<h2>The last 1 run</h2>"))
    #expect(!page.html.contains(DemoUser.password))
    try Self.expectSound(page.path, screenshot: "report-succeeded", in: job.folder)
  }

  @Test func aFailedRunsPageShowsTheErrorRetriesAndHistoryWithoutASecret() throws {
    let job = try Job(steps: Self.steps)
    #expect(try job.run().status == 0)
    // The server echoes the request's Authorization header (the bearer token) into its error.
    try job.emulator.admin(
      "POST", "faults", json: #"[{"path": "/api/v1/rpc/LANGUAGES/", "status": 500, "echo_authorization": true}]"#)
    let run = try job.run()
    #expect(run.status == 69)
    let report = try job.report(run.stdout)
    let page = try job.page()
    Self.expectEverything(of: report, on: page.html)
    #expect(page.html.contains("<td class=\"status failed\">http_500</td>"))
    let languages = (report["steps"] as? [[String: Any]])?.first { $0["id"] as? String == "languages" }
    let wait = try #require((languages?["attempts"] as? [[String: Any]])?.first?["wait_seconds"] as? Double)
    #expect(page.html.contains("<title>waited \(String(format: "%.3f", wait)) s before attempt 2</title>"))
    #expect(page.html.contains("<h2>The last 2 runs</h2>"))
    #expect(page.html.contains("class=\"mark failed\""))
    #expect(page.html.contains("Bearer ***"))
    #expect(!page.html.contains(DemoUser.password))
    #expect(page.html.firstRange(of: /Bearer [^*]/) == nil)
    try Self.expectSound(page.path, screenshot: "report-failed", in: job.folder)
  }

  @Test func anInterruptedRunAndTheRunResumingItEachHaveTheirPage() throws {
    let job = try Job(
      ["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000}"#],
      steps: """
        steps:
          - id: fruits
            table_stream: { resource: FRUITS }
          - id: countries
            table_stream: { resource: COUNTRIES }
          - id: tally
            sql: SELECT 1;

        """)
    let run = try ChildProcess.dray(["run", job.manifest], logPrefix: job.folder.path + "/interrupted")
    let part = job.folder.path + "/.dray/downloads/nightly"
    #expect(
      run.waitUntil {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: part)) ?? []
        return names.contains { name in
          name.hasSuffix(".part") && ((try? FileManager.default.attributesOfItem(atPath: part + "/" + name))?[.size] as? Int ?? 0) >= 2000
        }
      })
    run.send(SIGINT)
    #expect(run.wait() == .exited(130))
    let interrupted = try job.report(run.output)
    try job.emulator.admin("DELETE", "faults")
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    let resumed = try job.report(rerun.stdout)
    let firstID = try #require(interrupted["run_id"] as? String)

    let page = try job.page()
    Self.expectEverything(of: resumed, on: page.html)
    #expect(page.html.contains("<dt>resumes</dt><dd>\(firstID)</dd>"))
    #expect(page.html.contains(">skipped: finished in run \(firstID), unchanged</text>"))
    #expect(page.html.contains("class=\"resumed\""))
    #expect(page.html.contains("class=\"mark interrupted\""))
    try Self.expectSound(page.path, screenshot: "report-resumed", in: job.folder)

    let before = try job.page(["--run", firstID, "-o", job.folder.path + "/interrupted.html"])
    #expect(before.path == job.folder.path + "/interrupted.html")
    Self.expectEverything(of: interrupted, on: before.html)
    #expect(before.html.contains(">not_run: the run was interrupted</text>"))
    #expect(before.html.contains(#"<rect class="attempt interrupted""#))
    try Self.expectSound(before.path, screenshot: "report-interrupted", in: job.folder)
  }

  @Test func aParallelGroupHasALanePerMemberAndTheRunWritesItsPage() throws {
    let job = try Job(
      steps: """
        steps:
          - id: loads
            parallel:
              steps:
                - id: fruits
                  table_stream: { resource: FRUITS }
                - id: languages
                  table_stream: { resource: LANGUAGES }
                - id: countries
                  table: { resource: COUNTRIES, output: out/countries.csv, format: csv }
          - id: tally
            sql: SELECT 1;

        """, formats: "[json, html]")
    let run = try job.run()
    #expect(run.status == 0, "\(run.output)")
    let report = try job.report(run.stdout)
    let written = try #require(run.stdout.split(separator: "\n").last { $0.hasPrefix("report: ") }).dropFirst("report: ".count)
    let path = written.dropLast(".json".count) + ".html"
    let html = try String(contentsOfFile: String(path), encoding: .utf8)
    Self.expectEverything(of: report, on: html)
    for member in ["fruits", "languages", "countries"] {
      #expect(html.contains(">↳ \(member)<title>"), "lane of \(member)")
    }
    try Self.expectSound(String(path), screenshot: "report-parallel", in: job.folder)
  }

  @Test func aMissingOrDamagedReportIsNamedOnThePage() throws {
    let job = try Job(steps: Self.steps)
    var paths: [String] = []
    for _ in 0..<3 {
      let run = try job.run()
      #expect(run.status == 0, "\(run.output)")
      paths.append(String(try #require(run.stdout.split(separator: "\n").last { $0.hasPrefix("report: ") }).dropFirst("report: ".count)))
    }
    try FileManager.default.removeItem(atPath: paths[0])
    try "{\"format_version\": 1, \"steps\": [".write(toFile: paths[1], atomically: true, encoding: .utf8)
    let page = try job.page(["--runs", "5"])
    #expect(page.html.contains("report \(paths[0]): no such file (never written, or removed since)"))
    #expect(page.html.contains("report \(paths[1]): it is not JSON: "))
    #expect(page.html.contains("<h2>The last 3 runs</h2>"))
    #expect(try ReportCheck.problems([page.path]) == "")

    // The run drawn in full may be the one whose report is damaged.
    let runID = String((paths[1] as NSString).lastPathComponent.dropFirst("nightly-".count).dropLast(".json".count))
    let damaged = try job.page(["--run", runID, "-o", job.folder.path + "/damaged.html"])
    #expect(damaged.html.contains("<p class=\"problem\">The report \(paths[1]) could not be read: it is not JSON: "))
    #expect(try ReportCheck.problems([damaged.path]) == "")
    // A run id mistyped: neither a recent run nor a report.
    let typo = try Command.dray(["report", job.manifest, "--run", runID + "0"])
    #expect(typo.status == 2)
    #expect(
      typo.stderr.contains("has no run '\(runID)0' among its last 30 runs, and no report of that name; its newest: "), "\(typo.stderr)")
    #expect(typo.stderr.contains(runID), "\(typo.stderr)")
  }

  @Test func theCommandLineIsChecked() throws {
    let job = try Job(steps: Self.steps)
    let none = try Command.dray(["report", job.manifest])
    #expect(none.status == 1)
    #expect(
      none.stderr
        == "dray: job nightly has no run yet, so there is no report to put the page beside; run it first, or name the page with -o FILE.html\n"
    )
    let unknown = try Command.dray(["report", job.manifest, "--run", "20991231T000000.000Z-abcdef"])
    #expect(unknown.status == 2)
    #expect(
      unknown.stderr
        == "dray: job nightly has no run '20991231T000000.000Z-abcdef' among its last 30 runs, and no report of that name; it has no run yet\n"
    )
    let zero = try Command.dray(["report", job.manifest, "--runs", "0"])
    #expect(zero.status == 2)
    #expect(zero.stderr.hasPrefix("dray: --runs takes a positive number, found '0'\n"))
    let folder = try Command.dray(["report", job.manifest, "-o", job.folder.path])
    #expect(folder.status == 1)
    #expect(folder.stderr.contains("dray: the page was not written to \(job.folder.path): "))
    // D-minor: a count past what the command takes is too large, not "not positive".
    for command in ["report", "status"] {
      let huge = try Command.dray([command, job.manifest, "--runs", "99999999999999999999"])
      #expect(huge.status == 2)
      #expect(
        huge.stderr.hasPrefix("dray: --runs 99999999999999999999 is too large: the largest it takes is 9223372036854775807\n"),
        "\(command): \(huge.stderr)")
    }
    let words = try Command.dray(["report", job.manifest, "--runs", "ten"])
    #expect(words.stderr.hasPrefix("dray: --runs takes a positive number, found 'ten'\n"), "\(words.stderr)")
  }
}
