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
    #expect(schemes.map(\.name) == ["COUNTRIES", "CURRENCIES", "FRUITS", "FRUITS_EDIT", "LANGUAGES", "SUBDIVISIONS", "test_resource"])
    let fruits = try #require(schemes.first { $0.name == "FRUITS" })
    #expect(fruits.lifetime == 3600)
    #expect(fruits.outputs.map(\.name) == ["output_table"])
    #expect(fruits.outputs[0].columns.map(\.type) == ["BIGINT", "TEXT", "DOUBLE", "BIGINT"])
  }

  @Test func rpcAnswersWithETagAndContentVersion() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let client = PlatformClient(session: session(emulator), cancellation: Cancellation())
    let download = Download(path: folder.path + "/fruits.json", style: .platform, resume: true)
    let head = try client.rpc(
      resource: "FRUITS", params: .object([]), delta: nil, transactionID: "t-1", download: download, policy: RetryPolicy(count: 0),
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
        resource: "NOPE", params: .object([]), delta: nil, transactionID: nil, download: download, policy: RetryPolicy(count: 2),
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
