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
    /// The status answered.
    public var status: Int?
    /// `gzip` when the answer went out compressed.
    public var contentEncoding: String?
    /// Body bytes sent (compressed ones, for gzip).
    public var responseBytes: Int64

    /// A request header's value, by case-insensitive name.
    public subscript(header: String) -> String? {
      headers.first { $0.key.lowercased() == header.lowercased() }?.value
    }
  }

  /// The requests received (outside `/admin/`), oldest first.
  public func requests() throws -> [Request] {
    let data = try Curl.send("GET", url + "admin/requests")
    let list = (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    return list.map {
      Request(
        method: $0["method"] as? String ?? "", path: $0["path"] as? String ?? "", headers: $0["headers"] as? [String: String] ?? [:],
        body: $0["body"] as? String ?? "", records: $0["records"] as? [Int] ?? [], status: $0["status"] as? Int,
        contentEncoding: $0["content_encoding"] as? String, responseBytes: ($0["response_bytes"] as? NSNumber)?.int64Value ?? 0)
    }
  }

  /// Replaces the server's rules (delays, canned statuses, validators, held requests; see
  /// the server's docstring).
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

  /// Sets how `/orders` behaves: `{"boundary": "inclusive"}`, `{"nanos": true}`,
  /// `{"reset": true}`, `{"before_page": {"page": 2, "change": {...}}}` (see the server's
  /// docstring).
  public func setOrdersMode(_ json: String) throws {
    _ = try Curl.send("POST", url + "admin/orders/mode", headers: ["Content-Type": "application/json"], body: json)
  }

  /// Every order, deleted ones too (`{"id": ..., "deleted": true, "updated_at": ...}`), by id.
  public func allOrders() throws -> [[String: Any]] {
    (try JSONSerialization.jsonObject(with: Curl.send("GET", url + "admin/orders/all")) as? [[String: Any]]) ?? []
  }

  /// Changes the number of items of the lists (`/items`...), and their Last-Modified.
  public func changeItems(count: Int) throws {
    _ = try Curl.send("POST", url + "admin/items", headers: ["Content-Type": "application/json"], body: #"{"count": \#(count)}"#)
  }

  /// Waits until `atLeast` requests are held by `"hold"` rules (the server gives up after
  /// 60 s).
  /// - Returns: the number of requests held.
  public func waitForHeld(atLeast: Int = 1) throws -> Int {
    let answer = try JSONSerialization.jsonObject(with: Curl.send("GET", url + "admin/held?at_least=\(atLeast)")) as? [String: Any]
    return answer?["held"] as? Int ?? 0
  }

  /// Lets every request held by a `"hold"` rule go on.
  public func release() throws {
    _ = try Curl.send("POST", url + "admin/release")
  }

  /// Clears the request log.
  public func reset() throws {
    _ = try Curl.send("POST", url + "admin/reset")
  }
}
