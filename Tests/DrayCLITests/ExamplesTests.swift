import DrayTestSupport
import Foundation
import Testing

/// Each example in `examples/` run by the `dray` binary against the emulator, from a copy of
/// the folder, with its results checked: files with the right bytes, tables with the right
/// counts, listings before and after.
@Suite struct ExamplesTests {
  static let examples = Repository.root + "/examples"
  static let seed = Repository.root + "/Emulator/files"

  /// A copy of `examples/` (without `out/`) in a fresh folder; `path` is the copy.
  struct Copy {
    let folder = TemporaryDirectory("dray-examples")
    var path: String { folder.path + "/examples" }

    init() throws {
      try FileManager.default.copyItem(atPath: ExamplesTests.examples, toPath: folder.path + "/examples")
      try? FileManager.default.removeItem(atPath: folder.path + "/examples/out")
    }

    func out(_ name: String) -> String { path + "/out/" + name }
    func text(_ name: String) throws -> String { try String(contentsOfFile: out(name), encoding: .utf8) }
    func bytes(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: out(name))) }

    /// The run report of an example, decoded.
    func report(_ example: String) throws -> [String: Any] {
      let folder = out(example + "/reports")
      let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).sorted().last)
      let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
      return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
  }

  /// Runs `examples/NAME.yaml` from `copy` against `emulator`, signing in as `user`.
  func run(
    _ name: String, _ copy: Copy, _ emulator: Emulator, user: (name: String, password: String) = (DemoUser.name, DemoUser.password)
  ) throws -> Command.Result {
    let environment = ["FMP_HOST": emulator.url, "FMP_USER": user.name, "FMP_PASSWORD": user.password]
    let result = try Command.dray(["run", copy.path + "/\(name).yaml"], environment: environment)
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.hasPrefix("job \(name): succeeded in "), "\(result.stdout)")
    return result
  }

  /// `SELECT count(*)` of a table through `dray query`.
  func count(_ database: String, _ table: String) throws -> String {
    try Command.dray(["query", database, "SELECT count(*) AS n FROM \(table)"]).stdout
  }

  static let fruitsRecords =
    #"{"status":"ok","result":{"database":{"records":[{"hhive_id":1,"id":1,"name":"apple","price":0.52,"in_season":1},{"hhive_id":2,"id":2,"name":"pear","price":null,"in_season":0},{"hhive_id":3,"id":3,"name":"plum","price":1.25,"in_season":1},{"hhive_id":4,"id":4,"name":"quince","price":2.1,"in_season":0},{"hhive_id":5,"id":5,"name":"cherry","price":4.75,"in_season":1}]}}}"#
    + "\n"
  static let fruitsAnswer =
    #"[{"name":"output_table","data":[[1,1,"apple",0.52,1],[2,2,"pear",null,0],[3,3,"plum",1.25,1],[4,4,"quince",2.1,0],[5,5,"cherry",4.75,1]]}]"#

  @Test func tableStreamRetryLoadsFRUITSAndSelectsItsRows() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    let result = try run("HHFWTableStreamRetry", copy, emulator)
    #expect(result.stdout.contains("  perform-table-stream  table_stream  succeeded  5 rows; 138 bytes"))
    #expect(try count(copy.out("HHFWTableStreamRetry/database.sqlite"), "FRUITS__output_table").contains(#"[{"n":5}]"#))
    #expect(try copy.text("HHFWTableStreamRetry/select.json") == ExamplesTests.fruitsRecords)
    let rpc = try emulator.requests().filter { $0["path"] as? String == "/api/v1/rpc/FRUITS/" }
    #expect(rpc.count == 1)
    #expect((rpc.first?["headers"] as? [String: String])?["X-Transaction-ID"] == nil)
  }

  /// The vendor's apps sign in as `test` / `test123` and `Leonid` / `123123`: the emulator
  /// knows those users, and the examples run with them, short passwords and all.
  @Test func theExamplesRunAsTheVendorsOwnUsers() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    for (user, example) in [(("test", "test123"), "HHFWTableStreamRetry"), (("Leonid", "123123"), "HHFWRequestRetry")] {
      let result = try run(example, copy, emulator, user: user)
      #expect(!result.output.contains(user.1), "\(result.output)")
    }
    #expect(try copy.text("HHFWTableStreamRetry/select.json") == ExamplesTests.fruitsRecords)
  }

  @Test func tableStreamRetryAsyncLoadsBothResourcesInAParallelGroup() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    _ = try run("HHFWTableStreamRetryAsync", copy, emulator)
    let database = copy.out("HHFWTableStreamRetryAsync/database.sqlite")
    #expect(try count(database, "FRUITS__output_table").contains(#"[{"n":5}]"#))
    #expect(try count(database, "test_resource__output_table").contains(#"[{"n":3}]"#))
    #expect(try copy.text("HHFWTableStreamRetryAsync/select.json") == ExamplesTests.fruitsRecords)
    #expect(try copy.text("HHFWTableStreamRetryAsync/test_resource-count.csv") == "n\r\n3\r\n")
    let steps = try copy.report("HHFWTableStreamRetryAsync")["steps"] as? [[String: Any]]
    let members = steps?[1]["steps"] as? [[String: Any]]
    #expect(members?.map { $0["id"] as? String } == ["fruits", "test-resource"])
    #expect(members?.map { $0["status"] as? String } == ["succeeded", "succeeded"])
  }

  @Test func tableRetryWritesTheAnswerAsTheServerSentIt() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    _ = try run("HHFWTableRetry", copy, emulator)
    #expect(try copy.text("HHFWTableRetry/FRUITS.json") == ExamplesTests.fruitsAnswer)
    #expect(!FileManager.default.fileExists(atPath: copy.out("HHFWTableRetry/database.sqlite")))
  }

  @Test func tableRetryAsyncWritesJSONLinesAndCSVAtOnce() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    _ = try run("HHFWTableRetryAsync", copy, emulator)
    #expect(
      try copy.text("HHFWTableRetryAsync/FRUITS.ndjson").split(separator: "\n").first
        == #"{"hhive_id":1,"id":1,"name":"apple","price":0.52,"in_season":1}"#)
    #expect(try copy.text("HHFWTableRetryAsync/FRUITS.ndjson").split(separator: "\n").count == 5)
    #expect(try copy.text("HHFWTableRetryAsync/test_resource.csv") == "id,value\r\n1,one\r\n2,two\r\n3,three\r\n")
  }

  @Test func tableRetryDownloadResumesABrokenAnswerFromItsDownloadFolder() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "close_after": 60}"#])
    let copy = try Copy()
    let result = try run("HHFWTableRetryDownload", copy, emulator)
    // 138 bytes over both attempts: what the 60 gzip bytes of the broken one decoded to,
    // then only the rest, asked for from there (X-Range counts uncompressed bytes).
    #expect(result.stdout.contains("request-table  table  succeeded  5 rows; 138 bytes; 2 attempts"))
    let attempts = (try copy.report("HHFWTableRetryDownload")["steps"] as? [[String: Any]])?.first?["attempts"] as? [[String: Any]]
    let held = try #require(attempts?.first { $0["call"] == nil }?["bytes"] as? Int)
    #expect(held > 0)
    #expect(attempts?.filter { $0["call"] == nil }.map { $0["bytes"] as? Int } == [held, 138 - held])
    #expect(try copy.text("HHFWTableRetryDownload/FRUITS.json") == ExamplesTests.fruitsAnswer)
    let rpc = try emulator.requests().filter { $0["path"] as? String == "/api/v1/rpc/FRUITS/" }
    #expect(rpc.map { ($0["headers"] as? [String: String])?["X-Range"] } == [nil, "bytes=\(held)-"])
    // A run that succeeds leaves no partial download behind: its download folder is removed.
    #expect(!FileManager.default.fileExists(atPath: copy.out("HHFWTableRetryDownload/DownloadPath/HHFWTableRetryDownload")))
  }

  @Test func requestRetrySavesTheAnswerAfterRetries() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "status": 503}"#])
    let copy = try Copy()
    let result = try run("HHFWRequestRetry", copy, emulator)
    #expect(result.stdout.contains("perform-request  request  succeeded  138 bytes; 2 attempts"))
    #expect(try copy.text("HHFWRequestRetry/FRUITS-answer.json") == ExamplesTests.fruitsAnswer)
    let steps = try copy.report("HHFWRequestRetry")["steps"] as? [[String: Any]]
    let attempts = (steps?[0]["attempts"] as? [[String: Any]])?.filter { $0["call"] == nil }
    #expect(attempts?.map { $0["outcome"] as? String } == ["http_503", "ok"])
    // retryIntervalSec 1, jittered: a wait of at most 1 s.
    let wait = try #require(attempts?.first?["wait_seconds"] as? Double)
    #expect(wait >= 0 && wait <= 1)
  }

  @Test func filesWalksListMetaGetPutListDeleteList() throws {
    let emulator = try Emulator()
    let copy = try Copy()
    _ = try run("HHFWFiles", copy, emulator)
    let before = #"{"directories":["docs","images"],"files":["file.txt","notes.txt"]}"# + "\n"
    #expect(try copy.text("HHFWFiles/directory-1.json") == before)
    #expect(
      try copy.text("HHFWFiles/directory-2.json")
        == #"{"directories":["docs","images"],"files":["file.txt","file1.txt","notes.txt"]}"# + "\n")
    #expect(try copy.text("HHFWFiles/directory-3.json") == before)
    #expect(try copy.bytes("HHFWFiles/home/file.txt") == Data(contentsOf: URL(fileURLWithPath: ExamplesTests.seed + "/nfs4/file.txt")))
    let meta = try JSONSerialization.jsonObject(with: copy.bytes("HHFWFiles/file-meta.json")) as? [String: Any]
    #expect((meta?["stat"] as? [String: Any])?["st_size"] as? Int == 78)
    let put = try emulator.requests().first { $0["method"] as? String == "PUT" }
    #expect(put?["path"] as? String == "/api/v1/file/nfs4/?file=file1.txt")
    #expect(put?["body_bytes"] as? Int == 55)
    #expect(!FileManager.default.fileExists(atPath: try emulator.filesRoot() + "/nfs4/file1.txt"))
    #expect(
      try emulator.requests().map { "\($0["method"] as? String ?? "") \($0["path"] as? String ?? "")" } == [
        "POST /api/v1/auth/jwt/obtain/",
        "GET /api/v1/directory/nfs4/?directory=.",
        "GET /api/v1/file/nfs4/meta/?file=file.txt",
        "GET /api/v1/file/nfs4/?file=file.txt",
        "PUT /api/v1/file/nfs4/?file=file1.txt",
        "GET /api/v1/directory/nfs4/?directory=.",
        "DELETE /api/v1/file/nfs4/?file=file1.txt",
        "GET /api/v1/directory/nfs4/?directory=.",
      ])
  }

  @Test func runShRunsAnExampleWithOneCommand() throws {
    let copy = try Copy()
    let result = try Command.run(
      "/bin/bash", [copy.path + "/run.sh", "HHFWRequestRetry"],
      environment: ["DRAY_REPO": Repository.root, "DRAY_BINARY": Repository.drayBinary])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.hasPrefix("platform emulator at http://127.0.0.1:"))
    #expect(result.stdout.contains("job HHFWRequestRetry: succeeded in "))
    #expect(result.stdout.contains("  FRUITS-answer.json                          138 bytes"))
    #expect(try copy.text("HHFWRequestRetry/FRUITS-answer.json") == ExamplesTests.fruitsAnswer)
    let unknown = try Command.run("/bin/bash", [copy.path + "/run.sh", "Nope"], environment: ["DRAY_REPO": Repository.root])
    #expect(unknown.status == 2)
    #expect(
      unknown.stderr
        == "no example named 'Nope'; examples: HHFWFiles HHFWRequestRetry HHFWTableRetry HHFWTableRetryAsync HHFWTableRetryDownload HHFWTableStreamRetry HHFWTableStreamRetryAsync rest-incremental rest-paginated\n"
    )
  }
}
