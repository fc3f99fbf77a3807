import Foundation

/// The REST test server (`Emulator/rest_server.py`) as a child process on 127.0.0.1.
///
/// Started on port 0; the chosen address is read from the first line it prints. Stopped
/// when the value is released.
public final class RestServer: Sendable {
  private let server: ServerProcess
  /// The server's address, ending with `/`.
  public var url: String { server.url }

  /// Starts the server with extra command-line `arguments` (`--items`, `--token`, `--user`,
  /// `--rule`).
  /// - Throws: when python3 cannot start or the server prints no address within 10 s.
  public init(_ arguments: [String] = []) throws {
    server = try ServerProcess(script: "rest_server.py", name: "REST server", arguments)
  }

  /// One request the server received.
  public struct Request: Sendable, Equatable {
    public var method: String
    /// The path with its query, as sent.
    public var path: String
    public var headers: [String: String]
    public var body: String
    /// The ids of the records an `/orders` request answered.
    public var records: [Int]
  }

  /// The requests received (outside `/admin/`), oldest first.
  public func requests() throws -> [Request] {
    let data = try Curl.send("GET", url + "admin/requests")
    let list = (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    return list.map {
      Request(
        method: $0["method"] as? String ?? "", path: $0["path"] as? String ?? "", headers: $0["headers"] as? [String: String] ?? [:],
        body: $0["body"] as? String ?? "", records: $0["records"] as? [Int] ?? [])
    }
  }

  /// Replaces the server's rules (delays and canned statuses; see the server's docstring).
  public func setRules(_ json: String) throws {
    _ = try Curl.send("POST", url + "admin/rules", headers: ["Content-Type": "application/json"], body: json)
  }

  /// The live orders (`/orders`, not deleted) as JSON objects, by id.
  public func orders() throws -> [[String: Any]] {
    (try JSONSerialization.jsonObject(with: Curl.send("GET", url + "admin/orders")) as? [[String: Any]]) ?? []
  }

  /// Changes the orders: `{"insert": 3}`, `{"update": [2], "set": {...}}`, `{"delete": [1]}`
  /// (see the server's docstring).
  public func changeOrders(_ json: String) throws {
    _ = try Curl.send("POST", url + "admin/orders", headers: ["Content-Type": "application/json"], body: json)
  }

  /// Clears the request log.
  public func reset() throws {
    _ = try Curl.send("POST", url + "admin/reset")
  }
}
