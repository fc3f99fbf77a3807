import DrayTestSupport
import Foundation
import Glibc
import Testing

/// The report files of runs that succeed, fail and are interrupted, each checked against the
/// schema (`scripts/check-report.py`) and read for what they must say.
@Suite struct ReportFilesTests {
  /// A job in its own folder writing every report format.
  struct Job {
    let folder = TemporaryDirectory("dray-reports")
    let emulator: Emulator
    var manifest: String { folder.path + "/job.yaml" }
    var reports: String { folder.path + "/reports" }

    init(_ emulatorArguments: [String] = [], retry: String = "{ count: 1, interval: 50ms, backoff: fixed, jitter: false }") throws {
      emulator = try Emulator(emulatorArguments)
      try folder.write(
        "job.yaml",
        JobText.header(job: "nightly", emulator: emulator, database: "data/db.sqlite", retry: retry) + """
          steps:
            - id: schemes
              schemes: { resources: [FRUITS, LANGUAGES] }
            - id: fruits-csv
              table: { resource: FRUITS, output: out/fruits.csv, format: csv }
            - id: languages
              table_stream: { resource: LANGUAGES }
            - id: cheap
              sql: CREATE TABLE IF NOT EXISTS cheap(name TEXT); DELETE FROM cheap;
          report:
            path: "reports/{job}-{run_id}.json"
            formats: [json, junit, prometheus]

          """)
    }

    func run(_ arguments: [String] = []) throws -> Command.Result {
      try Command.dray(["run", manifest] + arguments)
    }

    /// The files of the run whose summary is `stdout`: JSON, JUnit and the textfile.
    func files(_ stdout: String) throws -> (json: String, junit: String, prometheus: String) {
      let line = try #require(stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
      let json = String(line.dropFirst("report: ".count))
      return (json, String(json.dropLast(5)) + ".junit.xml", reports + "/nightly.prom")
    }

    func faults(_ json: String) throws { try emulator.admin("POST", "faults", json: json) }
  }

  static func steps(_ report: [String: Any]) -> [[String: Any]] { report["steps"] as? [[String: Any]] ?? [] }

  static func step(_ report: [String: Any], _ id: String) -> [String: Any] {
    steps(report).first { $0["id"] as? String == id } ?? [:]
  }

  /// `name value` lines of the textfile for `metric`, labels and all.
  static func samples(_ text: String, _ metric: String) -> [String] {
    text.split(separator: "\n").filter { $0.hasPrefix(metric + "{") }.map(String.init)
  }

  @Test func aSuccessfulRunWritesEveryFormatAndEachChecksOut() throws {
    let job = try Job()
    let first = try job.run()
    #expect(first.status == 0, "\(first.output)")
    let files = try job.files(first.stdout)
    #expect(try ReportCheck.problems([files.json, files.junit, files.prometheus]) == "")
    #expect(first.stdout.contains("\njunit: \(files.junit)\nprometheus: \(files.prometheus)\nreport: \(files.json)\n"))

    let report = try ReportCheck.json(files.json)
    let runID = try #require(report["run_id"] as? String)
    #expect(report["status"] as? String == "succeeded")
    #expect(report["exit_code"] as? Int == 0)
    #expect(Self.steps(report).map { $0["status"] as? String } == ["succeeded", "succeeded", "succeeded", "succeeded"])
    let csv = Self.step(report, "fruits-csv")
    #expect((csv["attempts"] as? [[String: Any]])?.map { $0["call"] as? String } == ["schema", nil])
    #expect(csv["http_statuses"] as? [String: Int] == ["200": 2])
    #expect(csv["rows"] as? [String: Int] == ["FRUITS.output_table": 5])
    let languages = Self.step(report, "languages")
    let checkpoint = try #require(languages["checkpoint"] as? [String: Any])
    #expect(checkpoint["before"] is NSNull)
    #expect((checkpoint["after"] as? [String: Any])?["run_id"] as? String == runID)
    #expect((checkpoint["after"] as? [String: Any])?["status"] as? String == "succeeded")
    let statements = try #require(Self.step(report, "cheap")["statements"] as? [[String: Any]])
    #expect(statements.map { $0["sql"] as? String } == ["CREATE TABLE IF NOT EXISTS cheap(name TEXT);", "DELETE FROM cheap;"])
    let totals = try #require(report["totals"] as? [String: Int])
    #expect(totals["rows"] == 5 + (try isoCount("iso_639-3.json", "639-3")) && totals["retries"] == 0)

    let junit = try String(contentsOfFile: files.junit, encoding: .utf8)
    #expect(junit.contains(#"<testsuite name="nightly" id="0" package="dray" hostname=""#))
    #expect(junit.contains(#"tests="4" failures="0" errors="0" skipped="0""#))
    #expect(junit.contains(#"<property name="run_id" value="\#(runID)"/>"#))
    #expect(junit.contains(#"<testcase classname="nightly" name="fruits-csv" time=""#))
    #expect(junit.contains("<system-out>table, 5 rows, 138 bytes\nwrote out/fruits.csv</system-out>"))

    let prometheus = try String(contentsOfFile: files.prometheus, encoding: .utf8)
    #expect(prometheus.hasPrefix("# HELP dray_job_last_success_timestamp_seconds Unix time when the job last succeeded.\n"))
    #expect(
      Self.samples(prometheus, "dray_job_status") == [
        #"dray_job_status{dray_job="nightly",status="succeeded"} 1"#, #"dray_job_status{dray_job="nightly",status="failed"} 0"#,
        #"dray_job_status{dray_job="nightly",status="interrupted"} 0"#,
      ])
    #expect(Self.samples(prometheus, "dray_job_rows") == [#"dray_job_rows{dray_job="nightly"} \#(totals["rows"] ?? 0)"#])

    // A second run starts afresh; each step's checkpoint before it is the first run's.
    let second = try job.run()
    #expect(second.status == 0, "\(second.output)")
    let again = try ReportCheck.json(try job.files(second.stdout).json)
    let before = (Self.step(again, "languages")["checkpoint"] as? [String: Any])?["before"] as? [String: Any]
    #expect(before?["run_id"] as? String == runID)
    #expect(before?["fingerprint"] as? String == (checkpoint["after"] as? [String: Any])?["fingerprint"] as? String)
  }

  @Test func aFailedRunReportsTheFailureInEveryFormatAndKeepsTheLastSuccess() throws {
    let job = try Job()
    let good = try job.run()
    #expect(good.status == 0, "\(good.output)")
    let lastSuccess = try #require(
      Self.samples(try String(contentsOfFile: job.reports + "/nightly.prom", encoding: .utf8), "dray_job_last_success_timestamp_seconds")
        .first)
    try job.faults(#"[{"path": "/api/v1/rpc/LANGUAGES/", "status": 500}]"#)
    let bad = try job.run()
    #expect(bad.status == 69)  // 500 until the retries ran out: unavailable
    let url = job.emulator.url + "api/v1/rpc/LANGUAGES/"
    #expect(
      bad.stdout.contains(
        "\n  languages   table_stream  failed     2 attempts; HTTP 500 Internal Server Error from \(url): injected fault; "
          + "gave up after 2 attempts (retry.count: 1)\n"))
    #expect(bad.stdout.contains("\n  cheap       sql           not_run    an earlier step failed\ntotal: 5 rows; 138 bytes; 1 retry\n"))
    let files = try job.files(bad.stdout)
    #expect(try ReportCheck.problems([files.json, files.junit, files.prometheus]) == "")

    let report = try ReportCheck.json(files.json)
    #expect(report["status"] as? String == "failed" && report["exit_code"] as? Int == 69)
    let languages = Self.step(report, "languages")
    #expect(languages["status"] as? String == "failed")
    #expect((languages["error"] as? [String: String])?["code"] == "http_500")
    #expect(languages["http_statuses"] as? [String: Int] == ["500": 2])
    let attempts = try #require(languages["attempts"] as? [[String: Any]])
    #expect(attempts.map { $0["outcome"] as? String } == ["http_500", "http_500"])
    #expect(attempts.map { $0["wait_seconds"] as? Double } == [0.05, nil])
    let checkpoint = try #require(languages["checkpoint"] as? [String: Any])
    #expect((checkpoint["before"] as? [String: Any])?["status"] as? String == "succeeded")
    #expect((checkpoint["after"] as? [String: Any])?["status"] as? String == "failed")
    let cheap = Self.step(report, "cheap")
    #expect(cheap["status"] as? String == "not_run")
    // Not run: its checkpoint is the good run's, before and after.
    let cheapCheckpoint = try #require(cheap["checkpoint"] as? [String: Any])
    #expect((cheapCheckpoint["before"] as? [String: Any])?["status"] as? String == "succeeded")
    #expect(
      (cheapCheckpoint["after"] as? [String: Any])?["run_id"] as? String == (cheapCheckpoint["before"] as? [String: Any])?["run_id"]
        as? String)

    let junit = try String(contentsOfFile: files.junit, encoding: .utf8)
    #expect(junit.contains(#"tests="4" failures="1" errors="0" skipped="1""#))
    #expect(
      junit.contains(
        #"<failure type="http_500" message="HTTP 500 Internal Server Error from \#(url): injected fault; gave up after 2 attempts "#
          + #"(retry.count: 1)">table_stream, 1 retry"#
          + "\nattempt 1: http_500: HTTP 500 Internal Server Error from \(url): injected fault; waited 0.050s"
          + "\nattempt 2: http_500: HTTP 500 Internal Server Error from \(url): injected fault</failure>"))
    #expect(junit.contains(#"<skipped message="an earlier step failed"/>"#))

    let prometheus = try String(contentsOfFile: files.prometheus, encoding: .utf8)
    #expect(Self.samples(prometheus, "dray_job_last_success_timestamp_seconds") == [lastSuccess])
    #expect(Self.samples(prometheus, "dray_job_status").contains(#"dray_job_status{dray_job="nightly",status="failed"} 1"#))
    #expect(Self.samples(prometheus, "dray_job_exit_code") == [#"dray_job_exit_code{dray_job="nightly"} 69"#])
    #expect(Self.samples(prometheus, "dray_job_steps").contains(#"dray_job_steps{dray_job="nightly",status="not_run"} 1"#))
  }

  @Test func anInterruptedRunReportsTheInterruptInEveryFormat() throws {
    // LANGUAGES (about 400 KB) trickles at 40 KB/s: SIGINT arrives during its download.
    let job = try Job()
    try job.faults(#"[{"path": "/api/v1/rpc/LANGUAGES/", "trickle": 40000}]"#)
    let downloads = job.folder.path + "/.dray/downloads/nightly"
    let dray = try BackgroundDray(["run", job.manifest], logPrefix: job.folder.path + "/run")
    try dray.wait(for: "a partial download of LANGUAGES") {
      (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.contains { $0.hasPrefix("languages-") && $0.hasSuffix(".part") }
        == true
    }
    dray.send(SIGINT)
    let result = try dray.finish()
    #expect(result.status == 130, "\(result.output)")
    #expect(result.stdout.hasPrefix("job nightly: interrupted in "))
    #expect(result.stdout.contains("\n  languages   table_stream  interrupted  interrupted by SIGINT\n"))
    let files = try job.files(result.stdout)
    #expect(try ReportCheck.problems([files.json, files.junit, files.prometheus]) == "")

    let report = try ReportCheck.json(files.json)
    #expect(report["status"] as? String == "interrupted" && report["exit_code"] as? Int == 130)
    #expect(Self.steps(report).map { $0["status"] as? String } == ["succeeded", "succeeded", "interrupted", "not_run"])
    #expect(
      (Self.step(report, "languages")["error"] as? [String: String]) == ["code": "interrupted", "message": "interrupted by SIGINT"])
    #expect(Self.step(report, "cheap")["skip_reason"] as? String == "the run was interrupted")

    let junit = try String(contentsOfFile: files.junit, encoding: .utf8)
    #expect(junit.contains(#"tests="4" failures="0" errors="1" skipped="1""#))
    #expect(junit.contains(#"<error type="interrupted" message="interrupted by SIGINT"/>"#))
    let prometheus = try String(contentsOfFile: files.prometheus, encoding: .utf8)
    #expect(Self.samples(prometheus, "dray_job_status").contains(#"dray_job_status{dray_job="nightly",status="interrupted"} 1"#))
    #expect(Self.samples(prometheus, "dray_job_last_success_timestamp_seconds").isEmpty)
  }
}

/// Row counts of the ISO lists the emulator serves, read from Debian's files.
func isoCount(_ file: String, _ key: String) throws -> Int {
  let data = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/iso-codes/json/\(file)"))
  let object = try JSONSerialization.jsonObject(with: data) as? [String: [Any]]
  return object?[key]?.count ?? -1
}
