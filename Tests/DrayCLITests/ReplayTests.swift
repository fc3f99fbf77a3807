import DrayTestSupport
import Foundation
import Testing

/// `dray run --record DIR` against a real server, the server stopped, then `dray run
/// --replay DIR` into a fresh folder with no secret set: the same tables, report (times
/// aside) and exit code; a recording holds no secret in any form; a changed manifest fails
/// naming the request (docs/recordings.md).
@Suite struct ReplayTests {
  /// One run of a job: its exit, what it printed, its database's digest, its report.
  struct Outcome {
    var result: Command.Result
    var digest: DatabaseDigest
    var report: [String: Any]
  }

  static let platformSteps = """
    download: { path: downloads, resume: true }
    retry: { count: 4, interval: 50ms, backoff: fixed }
    steps:
      - id: schemes
        schemes: { resources: [FRUITS, test_resource] }
      - id: group
        parallel:
          max: 2
          steps:
            - id: fruits
              table_stream: { resource: FRUITS, delta: true }
            - id: test-resource
              table_stream: { resource: test_resource }
      - id: table
        table: { resource: test_resource, output: out/test_resource.json }
      - id: request
        request: { resource: FRUITS, output: out/answer.json }
      - id: list
        files: { connection: nfs4, action: list, path: ., local: out/dir.json }
      - id: get
        files: { connection: nfs4, action: get, path: file.txt, local: out/file.txt }

    """

  static func platformJob(_ database: TargetDatabase, extra: String = "") -> String {
    """
    version: 1
    job: replayed
    platform:
      host: ${FMP_HOST}
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      application: app
    auth:
      username: ${FMP_USER}
      password: ${FMP_PASSWORD}
    report: { path: "reports/{job}-{run_id}.json" }
    \(database.manifestBlock)\(platformSteps)\(extra)
    """
  }

  static func httpJob(_ database: TargetDatabase, query: String = "{ per_page: 4 }") -> String {
    """
    version: 1
    job: replayed-http
    report: { path: "reports/{job}-{run_id}.json" }
    retry: { count: 4, interval: 50ms, backoff: fixed }
    \(database.manifestBlock)steps:
      - id: orders
        http:
          base_url: ${API_URL}
          path: orders
          query: \(query)
          auth: { bearer: "${API_TOKEN}" }
          load: { table: orders, records: /data, write: merge, primary_key: [id] }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z", lag: 2s }

    """
  }

  /// Runs `dray run job.yaml` plus `arguments` in `folder` with `environment` only (no
  /// inherited variable: a replay has no secret set).
  static func run(_ folder: TemporaryDirectory, _ database: TargetDatabase, _ arguments: [String], _ environment: [String: String])
    throws -> Outcome
  {
    let result = try Command.run(
      Repository.drayBinary, ["run", "job.yaml"] + arguments, environment: environment, inherit: false, directory: folder.path)
    let reports = folder.path + "/reports"
    let name = try #require(try FileManager.default.contentsOfDirectory(atPath: reports).sorted().last, "\(result.output)")
    let data = try Data(contentsOf: URL(fileURLWithPath: reports + "/" + name))
    let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let timeColumns = DatabaseDigest.timeColumns.merging(["_dray_http_cursors": ["updated_at"]]) { $0.union($1) }
    return Outcome(result: result, digest: try database.digest(ignoringColumns: timeColumns), report: report)
  }

  /// A report without what differs between any two runs: times, run ids, the host, the
  /// transaction id a `request` step draws.
  static func timeless(_ value: Any) -> Any {
    if let object = value as? [String: Any] {
      var out: [String: Any] = [:]
      for (key, item) in object
      where
        !(key.hasSuffix("_at") || key.contains("seconds") || key == "run_id" || key == "host" || key == "lineage" || key == "fingerprint")
      {
        out[key] = timeless(item)
      }
      return out
    }
    // A request step's transaction id is drawn anew by each run, as a run id is.
    if let array = value as? [Any] { return array.filter { !(($0 as? String)?.hasPrefix("transaction ") ?? false) }.map(timeless) }
    return value
  }

  static func canonical(_ report: [String: Any]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: timeless(report), options: [.sortedKeys]), as: UTF8.self)
  }

  /// Records `job(database)` against a server `start` gives, stops it, and replays into a
  /// fresh folder (a fresh database); checks tables, report and exit code are the same.
  /// Returns the recording's folder (kept by `keep`) and both outcomes.
  static func recordAndReplay(
    _ kind: TargetDatabase.Kind, job: (TargetDatabase) -> String, keep: TemporaryDirectory,
    server: () throws -> (AnyObject, [String: String], [String: String])
  ) throws -> (recorded: Outcome, replayed: Outcome) {
    let recordFolder = TemporaryDirectory("dray-record")
    let recordDatabase = try TargetDatabase(kind, folder: recordFolder.path)
    _ = try recordFolder.write("job.yaml", job(recordDatabase))
    let recording = keep.path + "/rec"
    var replayEnvironment: [String: String] = [:]
    let recorded: Outcome
    do {
      let (process, environment, addresses) = try server()
      recorded = try run(recordFolder, recordDatabase, ["--record", recording], environment)
      replayEnvironment = addresses
      withExtendedLifetime(process) {}
    }
    // The server is stopped: a request sent now would be refused.
    let replayFolder = TemporaryDirectory("dray-replay")
    let replayDatabase = try TargetDatabase(kind, folder: replayFolder.path)
    _ = try replayFolder.write("job.yaml", job(replayDatabase))
    let replayed = try run(replayFolder, replayDatabase, ["--replay", recording], replayEnvironment)
    #expect(replayed.result.status == recorded.result.status, "\(replayed.result.output)")
    #expect(replayed.digest.differences(from: recorded.digest) == [])
    let (replayedReport, recordedReport) = (try canonical(replayed.report), try canonical(recorded.report))
    #expect(replayedReport == recordedReport, "\(replayedReport)\n\(recordedReport)")
    return (recorded, replayed)
  }

  static func platform(_ arguments: [String] = []) -> () throws -> (AnyObject, [String: String], [String: String]) {
    {
      let emulator = try Emulator(arguments)
      return (
        emulator, ["FMP_HOST": emulator.url, "FMP_USER": DemoUser.name, "FMP_PASSWORD": DemoUser.password],
        ["FMP_HOST": emulator.url]
      )
    }
  }

  static let apiToken = "rest-token.S3cr3t-for-replay"

  static func rest() throws -> (AnyObject, [String: String], [String: String]) {
    let server = try RestServer(["--orders", "10", "--token", apiToken, "--rule", #"{"path": "/orders", "status": 503, "times": 1}"#])
    return (server, ["API_URL": server.url, "API_TOKEN": apiToken], ["API_URL": server.url])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPlatformJobReplaysWithItsFaultsIntoAFreshFolder(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let faults = [
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "close_after": 60}"#,
      "--fault", #"{"path": "/api/v1/rpc/test_resource/", "times": 1, "status": 503}"#,
    ]
    let (recorded, replayed) = try ReplayTests.recordAndReplay(
      kind, job: { ReplayTests.platformJob($0) }, keep: keep, server: ReplayTests.platform(faults))
    #expect(recorded.result.status == 0, "\(recorded.result.output)")
    #expect(replayed.result.stdout.contains("files         succeeded  78 bytes"), "\(replayed.result.stdout)")
    // The recorded faults came again: the cut answer's resume, the 503's retry.
    #expect(replayed.result.stderr.contains("HTTP 503"), "\(replayed.result.stderr)")
    #expect(replayed.result.stderr.contains("cut short"), "\(replayed.result.stderr)")
    let index = try String(contentsOfFile: keep.path + "/rec/recording.json", encoding: .utf8)
    #expect(index.contains("\"version\" : 2"))
    #expect(index.contains("\"code\" : \"body_truncated\""))
    #expect(index.contains("\"status\" : 503"))
    #expect(index.contains("\"Range\"") || index.contains("\"X-Range\""))
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPaginatedIncrementalHTTPStepReplaysWithoutItsToken(_ kind: TargetDatabase.Kind) throws {
    let keep = TemporaryDirectory("dray-recording")
    let (recorded, _) = try ReplayTests.recordAndReplay(kind, job: { ReplayTests.httpJob($0) }, keep: keep, server: ReplayTests.rest)
    #expect(recorded.result.status == 0, "\(recorded.result.output)")
    #expect(recorded.result.stdout.contains("  orders  http  succeeded  10 rows"), "\(recorded.result.stdout)")
    let index = try String(contentsOfFile: keep.path + "/rec/recording.json", encoding: .utf8)
    #expect(index.contains("Bearer {{secret:1}}"))
    #expect(index.contains("page=3"))
  }

  /// Every secret of the jobs, in every form dray masks: none in any file of a recording.
  @Test func aRecordingHoldsNoSecretInAnyForm() throws {
    let keep = TemporaryDirectory("dray-recording")
    let emulatorKeep = TemporaryDirectory("dray-recording")
    _ = try ReplayTests.recordAndReplay(.sqlite, job: { ReplayTests.httpJob($0) }, keep: keep, server: ReplayTests.rest)
    var tokens: [String] = []
    do {
      let emulator = try Emulator()
      let folder = TemporaryDirectory("dray-record")
      let database = try TargetDatabase(.sqlite, folder: folder.path)
      _ = try folder.write("job.yaml", ReplayTests.platformJob(database))
      let result = try Command.run(
        Repository.drayBinary, ["run", "job.yaml", "--record", emulatorKeep.path + "/rec"],
        environment: ["FMP_HOST": emulator.url, "FMP_USER": DemoUser.name, "FMP_PASSWORD": DemoUser.password], inherit: false,
        directory: folder.path)
      #expect(result.status == 0, "\(result.output)")
      // The tokens the emulator handed out, from its log of requests.
      for request in try emulator.requests() {
        if let header = (request["headers"] as? [String: String])?["Authorization"], header.hasPrefix("Bearer ") {
          tokens.append(String(header.dropFirst("Bearer ".count)))
        }
      }
    }
    #expect(!tokens.isEmpty)
    var scan = SecretScan()
    for (name, secret) in [("api token", ReplayTests.apiToken), ("password", DemoUser.password)] + tokens.map({ ("token", $0) }) {
      scan.sentinels += SecretForms.every(secret).map { (name, $0) }
    }
    for folder in [keep.path + "/rec", emulatorKeep.path + "/rec"] {
      let files = FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []
      #expect(files.count >= 3)
      for file in files {
        scan.look(in: (try? Data(contentsOf: URL(fileURLWithPath: folder + "/" + file))) ?? Data(), file)
      }
    }
    #expect(scan.hits == [])
  }

  /// An answer holding a value equal to a secret (an API echoing who called it) is recorded
  /// masked, so its body file is shorter than the length received: the replay answers with
  /// the file's length and loads every record, the masked value as its placeholder.
  @Test func anAnswerEchoingASecretReplays() throws {
    let keep = TemporaryDirectory("dray-recording")
    let recordFolder = TemporaryDirectory("dray-record")
    let database = try TargetDatabase(.sqlite, folder: recordFolder.path)
    _ = try recordFolder.write("job.yaml", ReplayTests.httpJob(database))
    let addresses: [String: String]
    do {
      let (process, environment, urls) = try ReplayTests.rest()
      let server = try #require(process as? RestServer)
      try server.changeOrders(#"{"insert": [{"customer": "\#(ReplayTests.apiToken)"}]}"#)
      let recorded = try ReplayTests.run(recordFolder, database, ["--record", keep.path + "/rec"], environment)
      #expect(recorded.result.status == 0, "\(recorded.result.output)")
      addresses = urls
    }
    let folder = TemporaryDirectory("dray-replay")
    let replayDatabase = try TargetDatabase(.sqlite, folder: folder.path)
    _ = try folder.write("job.yaml", ReplayTests.httpJob(replayDatabase))
    let replayed = try ReplayTests.run(folder, replayDatabase, ["--replay", keep.path + "/rec"], addresses)
    #expect(replayed.result.status == 0, "\(replayed.result.output)")
    #expect(try replayDatabase.rows("SELECT count(*) FROM orders") == database.rows("SELECT count(*) FROM orders"))
    let masked = try replayDatabase.rows("SELECT customer FROM orders WHERE customer LIKE '{{secret:%'")
    #expect(masked.count == 1, "\(masked)")
  }

  /// A recording's index naming a body file outside its `bodies/` folder (a recording
  /// travels with bug reports) is refused before any request, naming the exchange.
  @Test(arguments: ["../../outside.json", "bodies/../../outside.json", "/etc/hostname", "bodies/link.json"])
  func aBodyFileOutsideTheRecordingIsRefused(_ file: String) throws {
    let keep = TemporaryDirectory("dray-recording")
    _ = try ReplayTests.recordAndReplay(.sqlite, job: { ReplayTests.httpJob($0) }, keep: keep, server: ReplayTests.rest)
    _ = try keep.write("outside.json", #"{"data": [{"id": 99, "customer": "outside"}]}"#)
    try FileManager.default.createSymbolicLink(
      atPath: keep.path + "/rec/bodies/link.json", withDestinationPath: keep.path + "/outside.json")
    let indexPath = keep.path + "/rec/recording.json"
    let index = try String(contentsOfFile: indexPath, encoding: .utf8)
    let first = try #require(index.firstMatch(of: /"body_file" : "([^"]+)"/))
    try index.replacingCharacters(in: first.range, with: #""body_file" : "\#(file)""#).write(
      toFile: indexPath, atomically: true, encoding: .utf8)
    let apiURL = try #require(index.firstMatch(of: /"url" : "(http:\/\/[^\/]+\/)/)).output.1
    let folder = TemporaryDirectory("dray-replay")
    let database = try TargetDatabase(.sqlite, folder: folder.path)
    _ = try folder.write("job.yaml", ReplayTests.httpJob(database))
    let result = try Command.run(
      Repository.drayBinary, ["run", "job.yaml", "--replay", keep.path + "/rec"], environment: ["API_URL": String(apiURL)],
      inherit: false, directory: folder.path)
    #expect(result.status != 0, "\(result.output)")
    #expect(
      result.output.contains("names the body file \"\(file)\", which is not a file in the recording's bodies/ folder"), "\(result.output)")
    // Refused before the run opened its database.
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/data/db.sqlite"))
  }

  /// Requests alike but for a header the step sets, or for a secret in the URL: each is
  /// answered by its own exchange, whatever order they come in (a step run alone with
  /// `--only`, or parallel steps racing), never by the other's.
  @Test func eachRequestGetsItsOwnExchangeWhateverTheOrder() throws {
    let job = """
      version: 1
      job: tenants
      report: { path: "reports/{job}-{run_id}.json" }
      secrets: [TENANT_KEY]
      database: { path: db.sqlite }
      steps:
        - id: secret
          http: { base_url: "${API_URL}", path: "echo/${TENANT_KEY}/items", load: { table: secret, records: /data } }
        - id: public
          http: { base_url: "${API_URL}", path: "echo/public/items", load: { table: public, records: /data } }
        - id: ta
          http: { base_url: "${API_URL}", path: echo/t, headers: { X-Tag: a }, load: { table: ta, records: /data } }
        - id: tb
          http: { base_url: "${API_URL}", path: echo/t, headers: { X-Tag: b }, load: { table: tb, records: /data } }

      """
    let keep = TemporaryDirectory("dray-recording")
    let recordFolder = TemporaryDirectory("dray-record")
    _ = try recordFolder.write("job.yaml", job)
    let server = try RestServer()
    let recorded = try Command.run(
      Repository.drayBinary, ["run", "job.yaml", "--record", keep.path + "/rec"],
      environment: ["API_URL": server.url, "TENANT_KEY": "tkSECRETtenant01"], inherit: false, directory: recordFolder.path)
    #expect(recorded.status == 0, "\(recorded.output)")
    for only in ["tb", "public"] {
      let folder = TemporaryDirectory("dray-replay")
      _ = try folder.write("job.yaml", job)
      let replayed = try Command.run(
        Repository.drayBinary, ["run", "job.yaml", "--replay", keep.path + "/rec", "--only", only],
        environment: ["API_URL": server.url], inherit: false, directory: folder.path)
      #expect(replayed.status == 0, "\(replayed.output)")
      let column = only == "tb" ? "tag" : "path"
      let rows = try SQLiteFile.rows(folder.path + "/db.sqlite", "SELECT \(column) FROM \(only)")
      #expect(rows == [[only == "tb" ? "b" : "/echo/public/items"]], "\(only): \(rows)")
    }
  }

  /// A manifest changed after its recording (a new query value, another resource): the
  /// replay fails naming the request and the nearest recorded one, exit 1, and that step
  /// loads nothing.
  @Test func aChangedManifestFailsNamingTheRequest() throws {
    let keep = TemporaryDirectory("dray-recording")
    let (_, _) = try ReplayTests.recordAndReplay(.sqlite, job: { ReplayTests.httpJob($0) }, keep: keep, server: ReplayTests.rest)
    let folder = TemporaryDirectory("dray-replay")
    let database = try TargetDatabase(.sqlite, folder: folder.path)
    _ = try folder.write("job.yaml", ReplayTests.httpJob(database, query: "{ per_page: 4, status: paid }"))
    let apiURL = try #require(
      try String(contentsOfFile: keep.path + "/rec/recording.json", encoding: .utf8).firstMatch(of: /"url" : "(http:\/\/[^\/]+\/)/)
    ).output.1
    let replayed = try ReplayTests.run(folder, database, ["--replay", keep.path + "/rec"], ["API_URL": String(apiURL)])
    #expect(replayed.result.status == 1, "\(replayed.result.output)")
    #expect(replayed.result.stdout.contains("holds no answer to GET \(apiURL)orders?"), "\(replayed.result.stdout)")
    #expect(replayed.result.stdout.contains("status=paid"))
    #expect(replayed.result.stdout.contains("the nearest recorded request is GET \(apiURL)orders?"))
    #expect(try database.columnNames("orders") == [])

    // Another resource than the recorded run's.
    let platformKeep = TemporaryDirectory("dray-recording")
    _ = try ReplayTests.recordAndReplay(.sqlite, job: { ReplayTests.platformJob($0) }, keep: platformKeep, server: ReplayTests.platform())
    let other = TemporaryDirectory("dray-replay")
    let otherDatabase = try TargetDatabase(.sqlite, folder: other.path)
    let changed = ReplayTests.platformJob(otherDatabase).replacing("request: { resource: FRUITS", with: "request: { resource: COUNTRIES")
    _ = try other.write("job.yaml", changed)
    let host = try #require(
      try String(contentsOfFile: platformKeep.path + "/rec/recording.json", encoding: .utf8).firstMatch(of: /"url" : "(http:\/\/[^\/]+\/)/)
    ).output.1
    let result = try ReplayTests.run(other, otherDatabase, ["--replay", platformKeep.path + "/rec"], ["FMP_HOST": String(host)])
    #expect(result.result.status == 1)
    #expect(result.result.stdout.contains("holds no answer to POST \(host)api/v1/rpc/COUNTRIES/"), "\(result.result.stdout)")
    #expect(result.result.stdout.contains("the nearest recorded request is POST \(host)api/v1/rpc/"))
    #expect(!FileManager.default.fileExists(atPath: other.path + "/out/answer.json"))
  }
}

/// `examples/replay.sh`: the recorded example apps replayed with no server running and no
/// credential set.
@Suite struct ReplayExampleTests {
  @Test func theRecordedExamplesReplayWithNoServer() throws {
    let folder = TemporaryDirectory("dray-examples")
    try FileManager.default.copyItem(atPath: Repository.root + "/examples", toPath: folder.path + "/examples")
    try? FileManager.default.removeItem(atPath: folder.path + "/examples/out")
    let recorded = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/examples/recordings").sorted()
    #expect(recorded.count >= 2)
    for name in recorded {
      let result = try Command.run(
        "/bin/bash", [folder.path + "/examples/replay.sh", name],
        environment: ["DRAY_REPO": Repository.root, "DRAY_BINARY": Repository.drayBinary, "FMP_PASSWORD": ""])
      #expect(result.status == 0, "\(name): \(result.output)")
      #expect(result.stdout.hasPrefix("job \(name): succeeded in "), "\(result.stdout)")
      // No machine's path and no password in a recording kept in the repository.
      let files = FileManager.default.enumerator(atPath: folder.path + "/examples/recordings/" + name)?.allObjects as? [String] ?? []
      for file in files where file.hasSuffix(".json") {
        let text = try String(contentsOfFile: folder.path + "/examples/recordings/\(name)/\(file)", encoding: .utf8)
        #expect(!text.contains(DemoUser.password) && !text.contains("/home/") && !text.contains("/tmp/") && !text.contains("/work/"))
      }
    }
    let select = try String(contentsOfFile: folder.path + "/examples/out/HHFWTableStreamRetry/select.json", encoding: .utf8)
    #expect(select.hasPrefix(#"{"status":"ok","result":{"database":{"records":[{"hhive_id":1,"id":1,"name":"apple""#))
  }
}

/// A replay keeps no credential: an OAuth 2.0 refresh token rotated in a recorded answer is
/// never written to the job's database, and the recording holds none of the tokens.
@Suite struct ReplayCredentialTests {
  @Test func aReplayKeepsNoRotatedRefreshToken() throws {
    let recordFolder = TemporaryDirectory()
    let replayFolder = TemporaryDirectory()
    let database = "database: { path: data/db.sqlite }\n"
    var secrets: [String] = []
    var manifest = ""
    do {
      let server = try OAuthServer(OAuth2Tests.client + ["--refresh-token", OAuth2Tests.firstRefreshToken])
      manifest = OAuth2Tests.manifest(server, database: database)
      let path = try OAuth2Tests.write(manifest, in: recordFolder)
      let recorded = try Command.dray(["run", path, "--record", recordFolder.path + "/rec"])
      #expect(recorded.status == 0, "\(recorded.output)")
      secrets = try OAuth2Tests.secrets(server)
      #expect(
        try SQLiteFile.rows(recordFolder.path + "/data/db.sqlite", "SELECT count(*) FROM _dray_oauth2_tokens") == [["1"]])
    }
    let path = try OAuth2Tests.write(manifest, in: replayFolder)
    let replayed = try Command.dray(["run", path, "--replay", recordFolder.path + "/rec"])
    #expect(replayed.status == 0, "\(replayed.output)")
    let kept = try SQLiteFile.rows(
      replayFolder.path + "/data/db.sqlite", "SELECT count(*) FROM sqlite_schema WHERE name = '_dray_oauth2_tokens'")
    if kept == [["1"]] {
      #expect(try SQLiteFile.rows(replayFolder.path + "/data/db.sqlite", "SELECT count(*) FROM _dray_oauth2_tokens") == [["0"]])
    }
    try OAuth2Tests.expectNoSecret(secrets, in: [], folder: recordFolder.path + "/rec")
  }
}
