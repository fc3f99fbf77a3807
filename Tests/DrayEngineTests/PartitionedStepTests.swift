import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Partitioned `http` steps (`partitions:`, docs/partitions.md) against the REST test server
/// (`Emulator/rest_server.py`) on loopback, on both databases: each source, placeholders in
/// every place, a parent/child pull, a partition that fails for good and the run that
/// resumes it, and a `replace` load that never shows a reader a part of its partitions.
@Suite struct PartitionedStepTests {
  let folder = TemporaryDirectory()

  /// Loads a job of `steps` (YAML list items; `${API}` is the server's address) and gives
  /// step `partitioned` the partitions `partitions`.
  func manifest(_ steps: String, server: RestServer, target: TargetDatabase, partitioned: String, _ partitions: Partitions) throws
    -> Manifest
  {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: fan
      \(target.manifestBlock)retry: { count: 2, interval: 10ms }
      steps:
      \(steps)
      """)
    var manifest = try ManifestLoader(environment: ["API": server.url]).load(path: path)
    let index = try #require(manifest.steps.firstIndex { $0.id == partitioned })
    manifest.steps[index].partitions = partitions
    return manifest
  }

  func run(_ manifest: Manifest, _ options: RunFlags = RunFlags()) -> RunReport {
    Runner(manifest: manifest, options: options, console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  static func list(_ values: [[(String, String)]], concurrency: Int = 1) -> Partitions {
    Partitions(
      source: .list(values.map { Partition($0.map { (name: $0.0, value: $0.1) }) }), concurrency: concurrency,
      location: SourceLocation(file: "job.yaml", line: 1, column: 1))
  }

  static let children = """
      - id: repos
        http: { base_url: '${API}', path: repos, query: { per_page: 10 }, load: { table: repos, records: /data }, paginate: { next: /links/next } }
      - id: issues
        http: { base_url: '${API}', path: 'repos/{repo}/issues', query: { per_page: 2 }, load: { table: issues, records: /data, write: WRITE }, paginate: { next: /links/next } }
    """

  @Test(arguments: TargetDatabase.Kind.allCases)
  func placeholdersFillPathQueryHeadersAndBodyOfEachPartition(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let steps = """
        - id: echo
          http:
            base_url: '${API}'
            method: POST
            path: 'echo/{region}/x'
            query: { r: '{region}', literal: '{{a}}' }
            headers: { X-Tag: 'tag-{region}' }
            body: { json: { region: '{region}', nested: ['{day}'] } }
            load: { table: echoes, records: /data, write: append }
      """
    let manifest = try manifest(
      steps, server: server, target: target, partitioned: "echo",
      PartitionedStepTests.list([[("region", "eu"), ("day", "mon")], [("region", "us/west"), ("day", "tue")]], concurrency: 2))
    let report = run(manifest)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let rows = try target.rows("SELECT path, tag, body FROM echoes ORDER BY tag")
    #expect(rows.count == 2)
    #expect(rows.first?[0] == "/echo/eu/x" && rows.first?[1] == "tag-eu")
    #expect(rows.last?[0] == "/echo/us/west/x" && rows.last?[1] == "tag-us/west")
    let bodies = rows.compactMap { $0[2] }.map { $0.replacingOccurrences(of: " ", with: "") }
    #expect(bodies.contains(#"{"region":"eu","nested":["mon"]}"#))
    #expect(bodies.contains(#"{"region":"us/west","nested":["tue"]}"#))
    // The value lands in the path as one segment, its '/' percent-encoded; {{ }} are braces.
    let paths = try server.requests().map(\.path).sorted()
    #expect(paths.count == 2)
    #expect(paths.contains { $0.hasPrefix("/echo/us%2Fwest/x?") })
    #expect(paths.allSatisfy { $0.contains("literal=%7Ba%7D") || $0.contains("literal={a}") })
    // The report: one entry per partition, with its values, pages and rows.
    let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
    let step = try #require((json["steps"] as? [[String: Any]])?.first)
    let entries = try #require(step["partitions"] as? [[String: Any]])
    #expect(
      entries.map { $0["partition"] as? [String: String] } == [["region": "eu", "day": "mon"], ["region": "us/west", "day": "tue"]])
    #expect(entries.map { $0["status"] as? String } == ["succeeded", "succeeded"])
    #expect(entries.map { $0["pages"] as? Int } == [1, 1])
    #expect(entries.map { ($0["rows"] as? [String: Int])?["echoes"] } == [1, 1])
    #expect(entries.allSatisfy { ($0["attempts"] as? [Any])?.count == 1 })
    #expect((step["rows"] as? [String: Int])?["echoes"] == 2)
    #expect(try ReportCheck.problems([try folder.write("report.json", report.json())]) == "")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func childrenFanOutOverTheRowsOfTheirParentsTable(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "7", "--issues", "5"])
    let rows = Partitions(
      source: .rows("SELECT id AS repo FROM repos ORDER BY id"), concurrency: 4,
      location: SourceLocation(file: "job.yaml", line: 1, column: 1))
    let manifest = try manifest(
      PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "append"), server: server, target: target,
      partitioned: "issues", rows)
    let report = run(manifest)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), count(DISTINCT repo) FROM issues") == [["35", "35", "7"]])
    // Each child page once: 3 pages of 2, 2, 1 issues per repository.
    let issuePaths = try server.requests().map(\.path).filter { $0.contains("/issues") }
    #expect(issuePaths.count == 21)
    #expect(Set(issuePaths).count == 21)
    let partitions = report.steps[1].members
    #expect(partitions.map { $0.partition?["repo"] } == (1...7).map { String($0) })
    #expect(partitions.allSatisfy { $0.pages == 3 && $0.rows["issues"] == 5 })
    // No staging table is left behind.
    if kind == .sqlite {
      #expect(try target.rows("SELECT name FROM sqlite_master WHERE name LIKE '\\_dray\\_http\\_\\_%' ESCAPE '\\'") == [])
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aReplaceLoadReplacesTheTableOnceWithEveryPartition(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "3", "--issues", "3"])
    let manifest = try manifest(
      PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "replace"), server: server, target: target,
      partitioned: "issues", PartitionedStepTests.list([[("repo", "1")], [("repo", "2")], [("repo", "3")]]))
    #expect(run(manifest).exitCode == 0)
    #expect(try target.rows("SELECT count(*) FROM issues") == [["9"]])
    // A reader during the next run sees the whole old table until the whole new one.
    try server.setRules(#"[{"path": "/repos/3/issues", "hold": true, "times": 1}]"#)
    try target.execute("INSERT INTO issues (id, repo, title) VALUES (-1, 0, 'old')")
    let finished = RunResult()
    let thread = Thread { finished.set(self.run(manifest, RunFlags(fresh: true))) }
    thread.start()
    #expect(try server.waitForHeld() == 1)
    // Partitions 1 and 2 committed: the table still holds the old rows alone.
    #expect(try target.rows("SELECT count(*), min(id) FROM issues") == [["10", "-1"]])
    try server.release()
    let report = try #require(finished.wait())
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*), min(id) FROM issues") == [["9", "1001"]])
    let gathered =
      kind == .sqlite
      ? "SELECT name FROM sqlite_master WHERE name LIKE '\\_dray\\_parts%' ESCAPE '\\'"
      : "SELECT table_name FROM information_schema.tables WHERE table_name LIKE '\\_dray\\_parts%'"
    #expect(try target.rows(gathered) == [])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPartitionThatFailsForGoodStopsTheStepAndTheNextRunResumesTheRest(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "4", "--issues", "2"])
    let steps = PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "append")
    let failing = try manifest(
      steps, server: server, target: target, partitioned: "issues",
      PartitionedStepTests.list([[("repo", "1")], [("repo", "99")], [("repo", "2")], [("repo", "3")]]))
    let first = run(failing)
    // Repository 99 is a 404: trying again without a change will not help.
    #expect(first.exitCode == 1)
    #expect(first.failure?.failureClass == .permanent)
    let step = first.steps[1]
    #expect(step.errorCode == "partitions_failed")
    #expect(step.errorMessage?.contains("repo=99") == true)
    #expect(step.members.map(\.status) == [.succeeded, .failed, .notRun, .notRun])
    #expect(try target.rows("SELECT count(*) FROM issues") == [["2"]])
    #expect(try ReportCheck.problems([try folder.write("failed.json", first.json())]) == "")
    // The next run, its list mended, skips repo 1 and fetches the others once.
    try server.reset()
    let mended = try manifest(
      steps, server: server, target: target, partitioned: "issues",
      PartitionedStepTests.list([[("repo", "1")], [("repo", "2")], [("repo", "3")], [("repo", "4")]]))
    let second = run(mended)
    #expect(second.exitCode == 0, "\(second.steps.map { $0.errorMessage ?? "" })")
    #expect(second.steps[1].members.map(\.status) == [.skipped, .succeeded, .succeeded, .succeeded])
    #expect(try server.requests().map(\.path).filter { $0.hasPrefix("/repos/1/") } == [])
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM issues") == [["8", "8"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aReplaceResumedWithOtherPartitionsKeepsNoneOfTheOldOnes(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "4", "--issues", "2"])
    let steps = PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "replace")
    func run(_ repos: [String]) throws -> RunReport {
      self.run(
        try manifest(steps, server: server, target: target, partitioned: "issues", PartitionedStepTests.list(repos.map { [("repo", $0)] })))
    }
    // Repository 2 answers 503 three times: with 3 attempts it fails for good.
    try server.setRules(#"[{"path": "/repos/2/issues", "status": 503, "times": 3}]"#)
    let first = try run(["1", "2", "3"])
    #expect(first.steps[1].errorCode == "partitions_failed")
    // The failing partition was tried under the step's retry policy (count 2: 3 attempts).
    #expect(first.steps[1].members.map(\.attempts.count) == [1, 3, 0])
    #expect(first.steps[1].members.map(\.status) == [.succeeded, .failed, .notRun])
    // Nothing replaced yet: the table does not exist.
    #expect(try target.columnNames("issues") == [])
    // Resumed unchanged, the finished partition is kept, not fetched again.
    try server.reset()
    let resumed = try run(["1", "2", "3"])
    #expect(resumed.exitCode == 0, "\(resumed.steps.map { $0.errorMessage ?? "" })")
    #expect(resumed.steps[1].members.map(\.status) == [.skipped, .succeeded, .succeeded])
    #expect(try server.requests().map(\.path).filter { $0.hasPrefix("/repos/1/") } == [])
    #expect(try target.rows("SELECT DISTINCT repo FROM issues ORDER BY repo") == [["1"], ["2"], ["3"]])
    // A failed run, then one whose list dropped its finished partition: the step starts
    // over, and the dropped partition's rows are not in the table.
    try server.setRules(#"[{"path": "/repos/3/issues", "status": 503, "times": 3}]"#)
    let failed = try run(["1", "3"])
    #expect(failed.steps[1].errorCode == "partitions_failed")
    let other = try run(["4"])
    #expect(other.exitCode == 0, "\(other.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT DISTINCT repo FROM issues ORDER BY repo") == [["4"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func atMostConcurrencyPartitionsRunAtOnce(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "3", "--issues", "1"])
    try server.setRules(
      "[" + (1...3).map { #"{"path": "/repos/\#($0)/issues", "hold": true, "times": 1}"# }.joined(separator: ", ") + "]")
    let manifest = try manifest(
      PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "append"), server: server, target: target,
      partitioned: "issues", PartitionedStepTests.list([[("repo", "1")], [("repo", "2")], [("repo", "3")]], concurrency: 2))
    let finished = RunResult()
    let thread = Thread { finished.set(self.run(manifest)) }
    thread.start()
    // Two partitions wait for their answers; the third cannot start until one ends.
    #expect(try server.waitForHeld(atLeast: 2) == 2)
    #expect(try server.requests().map(\.path).filter { $0.contains("/issues") }.count == 2)
    try server.release()
    #expect(try server.waitForHeld() == 1)
    try server.release()
    let report = try #require(finished.wait())
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*) FROM issues") == [["3"]])
  }

  @Test func aStepThatSavesAnswersWritesOneFileAPagePerPartition() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--repos", "3", "--issues", "3"])
    let steps = """
        - id: pages
          http: { base_url: '${API}', path: 'repos/{repo}/issues', query: { per_page: 2 }, output: 'out/repo-{repo}-{page}.json', paginate: { next: /links/next } }
      """
    let report = run(
      try manifest(
        steps, server: server, target: target, partitioned: "pages", PartitionedStepTests.list([[("repo", "1")], [("repo", "3")]])))
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(report.steps[0].outputs.sorted() == ["out/repo-1-1.json", "out/repo-1-2.json", "out/repo-3-1.json", "out/repo-3-2.json"])
    let saved = try text(folder.path + "/out/repo-3-2.json")
    #expect(saved.contains("issue 3 of repo-3"))
    #expect(report.steps[0].members.map(\.pages) == [2, 2])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func windowsCoverTheRangeHalfOpenAndCutAtTheEnd(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let steps = """
        - id: days
          http: { base_url: '${API}', path: echo/w, query: { from: '{window_start}', to: '{window_end}' }, load: { table: windows, records: /data, write: append } }
      """
    let window = Partitions(
      source: .window(Partitions.Window(start: "2024-01-01", end: "2024-01-20", every: .days(7))),
      location: SourceLocation(file: "job.yaml", line: 1, column: 1))
    let report = run(try manifest(steps, server: server, target: target, partitioned: "days", window))
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(
      report.steps[0].members.map { [$0.partition?["window_start"], $0.partition?["window_end"]] } == [
        ["2024-01-01", "2024-01-08"], ["2024-01-08", "2024-01-15"], ["2024-01-15", "2024-01-20"],
      ])
    #expect(try target.rows("SELECT count(*) FROM windows") == [["3"]])
    let months = Partitions.Window(start: "2024-01-31T00:00:00Z", end: "2024-04-01T00:00:00Z", every: .months(1))
    let monthly = try run(
      manifest(steps, server: server, target: target, partitioned: "days", Partitions(source: .window(months), location: window.location)),
      RunFlags(fresh: true))
    #expect(
      monthly.steps[0].members.map { $0.partition?["window_end"] } == [
        "2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z", "2024-04-01T00:00:00Z",
      ])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRowsQueryThatFailsGivesNoColumnOrNoRowsSaysSo(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "2"])
    let steps = PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "append")
    func rows(_ sql: String) throws -> StepReport {
      let partitions = Partitions(source: .rows(sql), location: SourceLocation(file: "job.yaml", line: 1, column: 1))
      return run(try manifest(steps, server: server, target: target, partitioned: "issues", partitions), RunFlags(fresh: true)).steps[1]
    }
    let missing = try rows("SELECT id AS repo FROM no_such_table")
    #expect(missing.errorCode == "partitions_query")
    // The log line and the summary name the step: the message does not again.
    #expect(missing.errorMessage?.hasPrefix("the partitions' rows query failed") == true)
    #expect(missing.errorMessage?.contains("no_such_table") == true)
    let undefined = try rows("SELECT id AS repository FROM repos")
    #expect(undefined.errorCode == "placeholder_undefined")
    #expect(undefined.errorMessage?.contains("{repo}") == true)
    #expect(undefined.errorMessage?.contains("repository=1") == true)
    // PostgreSQL selects no column as such; SQLite's statement without one is a write.
    let noColumn = try rows(kind == .postgres ? "SELECT FROM repos" : "DELETE FROM repos WHERE id < 0")
    #expect(noColumn.errorCode == "partitions_query")
    #expect(noColumn.errorMessage?.contains("returned no column") == true)
    let none = try rows("SELECT id AS repo FROM repos WHERE id < 0")
    #expect(none.status == .succeeded)
    #expect(none.notes.contains { $0.hasPrefix("no partitions") })
    #expect(none.members.isEmpty)
    #expect(try server.requests().map(\.path).filter { $0.contains("/issues") } == [])
  }

  /// A value that is empty, `.` or `..` where `path` uses it would send the request to
  /// another path (`repos//issues`, `repos/../issues`): the step fails before any request,
  /// naming the partition, the placeholder and the path it would have sent.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anEmptyOrDotValueInThePathFailsTheStepBeforeAnyRequest(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--repos", "2"])
    let steps = PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: "append")
    for (value, what, segment) in [("", "is empty", "an empty path segment"), ("..", "is '..'", "a segment that names another path")] {
      let sql = "SELECT CASE WHEN id = 2 THEN '\(value)' ELSE CAST(id AS TEXT) END AS repo FROM repos ORDER BY id"
      let partitions = Partitions(source: .rows(sql), location: SourceLocation(file: "job.yaml", line: 1, column: 1))
      let report = run(try manifest(steps, server: server, target: target, partitioned: "issues", partitions), RunFlags(fresh: true))
      let step = report.steps[1]
      #expect(report.exitCode == 1)
      #expect(step.errorCode == "placeholder_undefined")
      #expect(
        step.errorMessage
          == "partition repo=\(value): path: placeholder {repo} \(what) in this partition, so the request would go to "
          + "repos/\(value)/issues (\(segment)), not to the partition's resource; leave such partitions out "
          + "(in a rows query: WHERE repo <> ''; in a list: remove the entry)")
      #expect(try server.requests().map(\.path).filter { $0.contains("/issues") } == [])
    }
  }
}

/// A partitioned `table_stream` step against the platform emulator: each partition is its
/// own parameter set, so it loads its own tables, as the platform names them.
@Suite struct PartitionedTableStreamTests {
  @Test(arguments: TargetDatabase.Kind.allCases)
  func eachPartitionLoadsItsOwnTables(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: fruits
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      \(target.manifestBlock)steps:
        - id: schemes
          schemes: {}
        - id: fruits
          partitions:
            list: [{ fruit: apple }, { fruit: plum }]
            concurrency: 2
          table_stream: { resource: FRUITS, params: { name: "{fruit}" } }
      """)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let partitions = report.steps[1].members
    #expect(partitions.map { $0.partition?["fruit"] } == ["apple", "plum"])
    #expect(partitions.map(\.status) == [.succeeded, .succeeded])
    let tables = partitions.map { $0.tables.sorted() }
    #expect(tables.allSatisfy { !$0.isEmpty })
    #expect(Set(tables).count == 2)
    #expect(Set(report.steps[1].tables).count == report.steps[1].tables.count)
    for (partition, fruit) in zip(partitions, ["apple", "plum"]) {
      // Each partition's tables hold its own rows: the emulator keeps the rows whose column
      // equals a parameter named like it.
      let names = try partition.tables.flatMap { try target.rows("SELECT name FROM \"\($0)\"") }
      #expect(names == [[fruit]], "\(partition.tables)")
    }
  }
}

/// A run report handed from the thread that ran it.
final class RunResult: @unchecked Sendable {
  private let condition = NSCondition()
  private var report: RunReport?

  func set(_ report: RunReport) {
    condition.lock()
    self.report = report
    condition.signal()
    condition.unlock()
  }

  func wait() -> RunReport? {
    condition.lock()
    defer { condition.unlock() }
    while report == nil { condition.wait() }
    return report
  }
}
