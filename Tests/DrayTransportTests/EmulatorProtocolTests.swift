import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation
import Testing

@Suite struct EmulatorProtocolTests {
  func session(_ emulator: Emulator, password: String = DemoUser.password) -> PlatformSession {
    PlatformSession(
      settings: PlatformSettings(host: emulator.url, environment: "DocumentationExampleEnv", project: "DocumentationExampleProj"),
      credentials: Credentials(username: DemoUser.name, password: password))
  }

  @Test func schemaListsEveryResourceWithItsColumns() throws {
    let emulator = try Emulator()
    let client = PlatformClient(session: session(emulator), cancellation: Cancellation())
    let schemes = try client.schemes(policy: RetryPolicy(count: 0), record: { _ in })
    #expect(
      schemes.map(\.name) == [
        "COUNTRIES", "CURRENCIES", "FRUITS", "FRUITS_EDIT", "FRUITS_WRITE", "LANGUAGES", "SUBDIVISIONS", "test_resource",
      ])
    let fruits = try #require(schemes.first { $0.name == "FRUITS" })
    #expect(fruits.lifetime == 3600)
    #expect(fruits.outputs.map(\.name) == ["output_table"])
    #expect(fruits.outputs[0].columns.map(\.type) == ["BIGINT", "TEXT", "DOUBLE", "BIGINT"])
  }

  /// A `lifetime` beyond 64 bits still marks a cached resource (it never expires); a column
  /// that is not an object, or a lifetime that is not a number, is refused saying what was found.
  @Test func schemeEdgesAreReadOrRefusedSayingWhatWasFound() throws {
    let folder = TemporaryDirectory()
    func schemes(_ resources: String) throws -> Result<[ResourceScheme], any Error> {
      let file = try folder.write(
        "resources.json",
        #"{"environment": "DocumentationExampleEnv", "project": "DocumentationExampleProj", "resources": {\#(resources)}}"#)
      let emulator = try Emulator(["--resources", file])
      let client = PlatformClient(session: session(emulator), cancellation: Cancellation())
      return Result { try client.schemes(policy: RetryPolicy(count: 0), record: { _ in }) }
    }
    let table = #""outputs": {"output_table": {"columns": [["id", "BIGINT", "int8"]], "rows": []}}"#
    let long = try schemes(
      #""FOREVER": {"lifetime": 1e300, \#(table)}, "LONGER": {"lifetime": 9223372036854775808, \#(table)}, "HALF": {"lifetime": 1.5, \#(table)}"#
    ).get()
    #expect(long.map(\.name) == ["FOREVER", "HALF", "LONGER"])
    #expect(long.map(\.lifetime) == [Int.max, 1, Int.max])
    #expect(long.allSatisfy { $0.isCached })

    let url = "unexpected answer from http://127.0.0.1:"
    let refused = [
      (
        #"["id", {"name": "n"}]"#,
        #"column 1 of output table 'output_table' of 'ODD' must be an object with a string 'name', found a string ("id")"#
      ),
      (
        #"[{"name": "n"}, 5]"#,
        "column 2 of output table 'output_table' of 'ODD' must be an object with a string 'name', found a number (5)"
      ),
      (
        #"[{"name": 7, "type": "TEXT"}]"#,
        "column 1 of output table 'output_table' of 'ODD' must be an object with a string 'name', found a name that is not a string (7)"
      ),
    ]
    for (columns, detail) in refused {
      let result = try schemes(#""ODD": {"scheme_output": [{"name": "output_table", "columns": \#(columns)}], "outputs": {}}"#)
      #expect(result.errorText?.hasPrefix(url) == true)
      #expect(result.errorText?.hasSuffix("/api/v1/schema/: " + detail) == true, "\(result.errorText ?? "")")
    }
    let lifetime = try schemes(#""ODD": {"lifetime": "3600", \#(table)}"#)
    #expect(
      lifetime.errorText?.hasSuffix(
        #"/api/v1/schema/: the 'lifetime' of 'ODD' must be a number of seconds, 0 or more, found a string ("3600")"#) == true)
  }

  @Test func rpcAnswersWithETagAndContentVersion() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let client = PlatformClient(session: session(emulator), cancellation: Cancellation())
    let download = Download(path: folder.path + "/fruits.json", style: .platform, resume: true)
    let head = try client.rpc(
      resource: "FRUITS", params: .object([]), delta: nil, transactionID: "t-1", reads: true, download: download,
      policy: RetryPolicy(count: 0),
      record: { _ in })
    #expect(head.status == 200)
    #expect(head.contentVersion == "v1")
    #expect(head.etag?.hasPrefix("\"") == true)
    #expect(head.cacheHash?.hasPrefix("output_table-Hash%3A") == true)
    let body = try folder.read("fruits.json")
    #expect(body.hasPrefix(#"[{"name":"output_table","data":[[1,1,"apple",0.52,1],"#))
    let rpc = try emulator.requests().filter { ($0["path"] as? String) == "/api/v1/rpc/FRUITS/" }
    let headers = rpc.first?["headers"] as? [String: String]
    #expect(headers?["X-Transaction-ID"] == "t-1")
    #expect(headers?["Authorization"]?.hasPrefix("Bearer ") == true)
  }

  @Test func aWrongPasswordIsASignInFailureWithTheServersDescription() throws {
    let emulator = try Emulator()
    let client = PlatformClient(session: session(emulator, password: "wrong"), cancellation: Cancellation())
    do {
      _ = try client.schemes(policy: RetryPolicy(count: 3), record: { _ in })
      Issue.record("sign-in succeeded with a wrong password")
    } catch let error as PlatformError {
      #expect(error.code == "auth_failed")
      #expect("\(error)".contains("HTTP 401 Unauthorized"))
      #expect(!"\(error)".contains("wrong"))
    }
    // A refused sign-in is not retried.
    #expect(try emulator.requests().count == 1)
  }

  @Test func callsWithoutAValidTokenGet401InThePlatformShape() throws {
    let emulator = try Emulator()
    let body = try Curl.send("GET", emulator.url + "api/v1/schema/", headers: ["Authorization": "Bearer not.a.token"])
    #expect(String(decoding: body, as: UTF8.self) == #"{"code": 401, "description": "Unauthorized", "original_descriptions": []}"#)
  }

  @Test func anUnknownResourceIs404WithTheDataSourceMessage() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let client = PlatformClient(session: session(emulator), cancellation: Cancellation())
    let download = Download(path: folder.path + "/x.json", style: .platform, resume: true)
    do {
      _ = try client.rpc(
        resource: "NOPE", params: .object([]), delta: nil, transactionID: nil, reads: true, download: download,
        policy: RetryPolicy(count: 2),
        record: { _ in })
      Issue.record("an unknown resource answered")
    } catch let error as TransportError {
      #expect(error.code == "http_404")
      #expect(
        "\(error)" == "HTTP 404 Not Found from \(emulator.url)api/v1/rpc/NOPE/: Not Found (data source: resource NOPE does not exist)")
    }
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/x.json"))
  }
}
