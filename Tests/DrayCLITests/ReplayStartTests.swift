import DrayTestSupport
import Foundation
import Testing

/// A recording of a job's second run holds the state that run started from (its `start`
/// section, docs/recordings.md): a replay into a fresh folder is seeded with it, sends the
/// same requests, loads the same rows and writes the same report; it does not wait the
/// recorded retry waits; the recording holds no secret, a rotated refresh token included.
@Suite struct ReplayStartTests {
  /// The outcomes of a job's second run, recorded, and of its replay into a fresh folder.
  struct Replayed {
    var recorded: ReplayTests.Outcome
    var replayed: ReplayTests.Outcome
    var recording: String
    var index: String
    /// The waits the recorded run and the replay slept (`DRAY_TEST_SLEEP_LOG`), one a line.
    var recordedSleeps: [String]
    var replayedSleeps: [String]
    /// The replay's folder (kept) and environment.
    var replayFolder: TemporaryDirectory
    var replayEnvironment: [String: String]
  }

  static func sleeps(_ path: String) -> [String] {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
  }

  /// Runs `job` once against a server `start` gives, then `between` (a change on the
  /// server), then records its second run; stops the server and replays the recording into
  /// a fresh folder. Checks exit code, report (times aside) and the rows of `tables`.
  static func recordSecondRun(
    _ kind: TargetDatabase.Kind, job: (TargetDatabase) -> String, tables: [String], keep: TemporaryDirectory,
    server: () throws -> (AnyObject, [String: String], [String: String]), between: (AnyObject) throws -> Void = { _ in }
  ) throws -> Replayed {
    let recordFolder = TemporaryDirectory("dray-record")
    let recordDatabase = try TargetDatabase(kind, folder: recordFolder.path)
    _ = try recordFolder.write("job.yaml", job(recordDatabase))
    let recording = keep.path + "/rec"
    let recordedLog = keep.path + "/recorded-sleeps"
    let replayedLog = keep.path + "/replayed-sleeps"
    var replayEnvironment: [String: String] = [:]
    let recorded: ReplayTests.Outcome
    do {
      let (process, environment, addresses) = try server()
      let first = try ReplayTests.run(recordFolder, recordDatabase, [], environment)
      #expect(first.result.status == 0, "\(first.result.output)")
      try between(process)
      recorded = try ReplayTests.run(
        recordFolder, recordDatabase, ["--record", recording], environment.merging(["DRAY_TEST_SLEEP_LOG": recordedLog]) { $1 })
      replayEnvironment = addresses
      withExtendedLifetime(process) {}
    }
    let replayFolder = TemporaryDirectory("dray-replay")
    let replayDatabase = try TargetDatabase(kind, folder: replayFolder.path)
    _ = try replayFolder.write("job.yaml", job(replayDatabase))
    let replayed = try ReplayTests.run(
      replayFolder, replayDatabase, ["--replay", recording], replayEnvironment.merging(["DRAY_TEST_SLEEP_LOG": replayedLog]) { $1 })
    #expect(recorded.result.status == 0, "\(recorded.result.output)")
    #expect(replayed.result.status == recorded.result.status, "\(replayed.result.output)")
    #expect(!replayed.result.output.contains("holds no answer"), "\(replayed.result.output)")
    let (replayedReport, recordedReport) = (try ReplayTests.canonical(replayed.report), try ReplayTests.canonical(recorded.report))
    #expect(replayedReport == recordedReport, "\(replayedReport)\n\(recordedReport)")
    for table in tables {
      let sql = "SELECT * FROM \(table) ORDER BY 1"
      #expect(try replayDatabase.rows(sql) == recordDatabase.rows(sql), "\(table)")
    }
    return Replayed(
      recorded: recorded, replayed: replayed, recording: recording,
      index: try String(contentsOfFile: recording + "/recording.json", encoding: .utf8), recordedSleeps: sleeps(recordedLog),
      replayedSleeps: sleeps(replayedLog), replayFolder: replayFolder, replayEnvironment: replayEnvironment)
  }

  /// An `incremental` step's second run sends the cursor the first kept, and meets a 503
  /// that it retries after `retry.interval`: the replay sends the same cursor and does not
  /// wait.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKeptCursorReplaysIntoAFreshFolderWithoutWaiting(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let outcome = try Self.recordSecondRun(
      kind, job: { ReplayTests.httpJob($0) }, tables: ["orders"], keep: keep,
      server: {
        let server = try RestServer(["--orders", "10", "--token", ReplayTests.apiToken])
        return (server, ["API_URL": server.url, "API_TOKEN": ReplayTests.apiToken], ["API_URL": server.url])
      },
      between: { server in try (server as? RestServer)?.setRules(#"[{"path": "/orders", "status": 503, "times": 1}]"#) })
    #expect(outcome.recorded.result.stdout.contains("  orders  http  succeeded  10 rows"), "\(outcome.recorded.result.stdout)")
    // The second run sent the kept cursor, not `initial`.
    let sent = try #require(outcome.recorded.result.stderr.firstMatch(of: /sending updated_since=(\S+)/)?.output.1)
    #expect(sent != "2024-01-01T00:00:00Z")
    #expect(outcome.replayed.result.stderr.contains("sending updated_since=\(sent)"), "\(outcome.replayed.result.stderr)")
    #expect(outcome.index.contains("\"version\" : 2"))
    #expect(outcome.index.contains("\"cursors\""))
    #expect(outcome.index.contains("\"status\" : 503"))
    // The live run waited its retry; the replay waited nothing.
    #expect(outcome.recordedSleeps.count == 1, "\(outcome.recordedSleeps)")
    #expect(outcome.replayedSleeps == [])
    #expect(outcome.replayed.result.stderr.contains("HTTP 503"), "\(outcome.replayed.result.stderr)")
    // The API token, in every form dray masks: in no file of the recording, start rows included.
    var scan = SecretScan()
    scan.sentinels = SecretForms.every(ReplayTests.apiToken).map { ("api token", $0) }
    let files = FileManager.default.enumerator(atPath: outcome.recording)?.allObjects as? [String] ?? []
    #expect(files.contains { $0.hasPrefix("start/") }, "\(files)")
    for file in files { scan.look(in: (try? Data(contentsOf: URL(fileURLWithPath: outcome.recording + "/" + file))) ?? Data(), file) }
    #expect(scan.hits == [])
    // A second replay into the folder the first one filled is refused, naming what it holds.
    let again = try Command.run(
      Repository.drayBinary, ["run", "job.yaml", "--replay", outcome.recording],
      environment: outcome.replayEnvironment, inherit: false, directory: outcome.replayFolder.path)
    #expect(again.status == 1, "\(again.output)")
    #expect(again.output.contains("already holds run"), "\(again.output)")
    #expect(again.output.contains("fresh"), "\(again.output)")
  }

  /// A conditional `http` step's second run sends the `ETag` the first kept and is
  /// answered 304: the replay keeps the seeded table and reports its rows.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKeptETagReplaysIntoAFreshFolder(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let job = { (database: TargetDatabase) in
      """
      version: 1
      job: replayed-etag
      report: { path: "reports/{job}-{run_id}.json" }
      \(database.manifestBlock)steps:
        - id: items
          http: { base_url: "${API_URL}", path: items, query: { per_page: 100 }, load: { table: items, records: /data } }

      """
    }
    let outcome = try Self.recordSecondRun(
      kind, job: job, tables: ["items"], keep: keep,
      server: {
        let server = try RestServer()
        try server.setRules(#"[{"path": "/items", "validators": true}]"#)
        return (server, ["API_URL": server.url], ["API_URL": server.url])
      })
    let steps = try #require(outcome.replayed.report["steps"] as? [[String: Any]])
    #expect(steps.first?["unchanged"] as? Bool == true, "\(steps)")
    #expect(outcome.index.contains("\"status\" : 304"))
    #expect(outcome.index.contains("\"etag\""))
  }

  static func platformJob(_ database: TargetDatabase, delta: Bool) -> String {
    """
    version: 1
    job: replayed-delta
    platform:
      host: ${FMP_HOST}
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      application: app
    auth:
      username: ${FMP_USER}
      password: ${FMP_PASSWORD}
    report: { path: "reports/{job}-{run_id}.json" }
    \(database.manifestBlock)steps:
      - id: fruits
        table_stream: { resource: FRUITS, delta: \(delta) }

    """
  }

  /// A `table_stream` delta's second run asks for a delta from the version the first
  /// loaded, with the scheme it kept (no `schemes` step, no scheme asked): the replay's
  /// seeded tables record that version and ask the same.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKeptDeltaVersionReplaysIntoAFreshFolder(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let outcome = try Self.recordSecondRun(
      kind, job: { Self.platformJob($0, delta: true) }, tables: ["\"FRUITS__output_table\""], keep: keep, server: ReplayTests.platform(),
      between: { emulator in
        try (emulator as? Emulator)?.admin(
          "POST", "versions/FRUITS", json: #"{"insert": [[7, "fig", 3.5, 0]], "delete": [1]}"#)
      })
    #expect(outcome.index.contains("\"schemes\""))
    #expect(outcome.index.contains("\"content_version\""))
    #expect(outcome.index.contains("X-Delta") || outcome.index.contains("x-delta"), "\(outcome.index)")
    #expect(!outcome.index.contains("/api/v1/schema/"), "the second run asked for the scheme it kept")
  }

  /// A `table_stream` whose tables already hold the server's answer reports it unchanged
  /// on its second run: so does the replay, from the seeded tables and bookkeeping.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anUnchangedAnswerReplaysUnchangedIntoAFreshFolder(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let outcome = try Self.recordSecondRun(
      kind, job: { Self.platformJob($0, delta: false) }, tables: ["\"FRUITS__output_table\""], keep: keep,
      server: ReplayTests.platform())
    let notes = ((outcome.recorded.report["steps"] as? [[String: Any]])?.first?["notes"] as? [String]) ?? []
    #expect(notes.contains { $0.contains("unchanged") }, "\(notes)")
    #expect(outcome.index.contains("\"rows_file\" : \"start/0001.json\""), "\(outcome.index)")
  }

  /// A recording of an OAuth 2.0 job's second run, which sends the refresh token the first
  /// run kept (rotated), holds none of the job's secrets; its replay keeps none.
  @Test func aSecondRunsRecordingHoldsNoRotatedRefreshToken() throws {
    let recordFolder = TemporaryDirectory()
    let replayFolder = TemporaryDirectory()
    let database = "database: { path: data/db.sqlite }\n"
    var secrets: [String] = []
    var manifest = ""
    do {
      let server = try OAuthServer(OAuth2Tests.client + ["--refresh-token", OAuth2Tests.firstRefreshToken])
      manifest = OAuth2Tests.manifest(server, database: database)
      let path = try OAuth2Tests.write(manifest, in: recordFolder)
      let first = try Command.dray(["run", path])
      #expect(first.status == 0, "\(first.output)")
      let second = try Command.dray(["run", path, "--record", recordFolder.path + "/rec"])
      #expect(second.status == 0, "\(second.output)")
      secrets = try OAuth2Tests.secrets(server)
      let kept = try SQLiteFile.rows(recordFolder.path + "/data/db.sqlite", "SELECT refresh_token FROM _dray_oauth2_tokens")
      secrets += kept.compactMap { $0.first ?? nil }
    }
    #expect(secrets.count > 3)
    var scan = SecretScan()
    for secret in Set(secrets) { scan.sentinels += SecretForms.every(secret).map { ("secret", $0) } }
    let files = FileManager.default.enumerator(atPath: recordFolder.path + "/rec")?.allObjects as? [String] ?? []
    for file in files {
      scan.look(in: (try? Data(contentsOf: URL(fileURLWithPath: recordFolder.path + "/rec/" + file))) ?? Data(), file)
    }
    #expect(scan.hits == [])
    let path = try OAuth2Tests.write(manifest, in: replayFolder)
    let replayed = try Command.dray(["run", path, "--replay", recordFolder.path + "/rec"])
    #expect(replayed.status == 0, "\(replayed.output)")
    let kept = try SQLiteFile.rows(
      replayFolder.path + "/data/db.sqlite", "SELECT count(*) FROM sqlite_schema WHERE name = '_dray_oauth2_tokens'")
    if kept == [["1"]] {
      #expect(try SQLiteFile.rows(replayFolder.path + "/data/db.sqlite", "SELECT count(*) FROM _dray_oauth2_tokens") == [["0"]])
    }
  }

  /// A version 1 recording (no start section) still replays, as a run that started from
  /// nothing; a layout this dray does not know is refused, naming the versions it reads.
  @Test func aVersionOneRecordingReplaysAndAnUnknownVersionIsRefused() throws {
    let keep = TemporaryDirectory("dray-recording")
    _ = try ReplayTests.recordAndReplay(.sqlite, job: { ReplayTests.httpJob($0) }, keep: keep, server: ReplayTests.rest)
    let path = keep.path + "/rec/recording.json"
    var index = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    #expect(index["start"] != nil)
    index["start"] = nil
    let recorded = try #require(URL(string: ((index["exchanges"] as? [[String: Any]])?.first?["url"] as? String) ?? ""))
    let apiURL = "http://\(recorded.host ?? ""):\(recorded.port ?? 0)/"
    for (version, status) in [(1, 0), (3, 2)] {
      index["version"] = version
      try JSONSerialization.data(withJSONObject: index, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
      let folder = TemporaryDirectory("dray-replay")
      let database = try TargetDatabase(.sqlite, folder: folder.path)
      _ = try folder.write("job.yaml", ReplayTests.httpJob(database))
      let result = try Command.run(
        Repository.drayBinary, ["run", "job.yaml", "--replay", keep.path + "/rec"], environment: ["API_URL": apiURL],
        inherit: false, directory: folder.path)
      #expect(result.status == Int32(status), "\(result.output)")
      if version == 3 {
        #expect(result.output.contains("layout version 3; this dray reads versions 1 to 2"), "\(result.output)")
      } else {
        #expect(result.stdout.contains("  orders  http  succeeded  10 rows"), "\(result.output)")
      }
    }
  }
}
