import Foundation

/// The number-cursor test server (`Emulator/ticks_server.py`) as a child process on
/// 127.0.0.1: `/ticks?since=X` answers the records whose cursor `c` is above X (exclusive),
/// each `c` written as it was added (`1701600000.25`, `1e3`).
public final class TicksServer: Sendable {
  private let server: ServerProcess
  /// The server's address, ending with `/`.
  public var url: String { server.url }

  /// - Throws: when python3 cannot start or the server prints no address within 10 s.
  public init() throws {
    server = try ServerProcess(script: "ticks_server.py", name: "ticks server", [])
  }

  /// Adds records `(id, c as written)`; with `exactly`, `c` and `since` compare as decimals
  /// from now on, otherwise as doubles (the default).
  public func add(_ records: [(Int, String)], exactly: Bool = false) throws {
    let list = records.map { "[\($0.0), \"\($0.1)\"]" }.joined(separator: ", ")
    _ = try Curl.send(
      "POST", url + "admin/ticks", headers: ["Content-Type": "application/json"],
      body: #"{"add": [\#(list)], "compare": "\#(exactly ? "decimal" : "float")"}"#)
  }

  /// The paths (with query) of the `/ticks` requests received, oldest first.
  public func requests() throws -> [String] {
    (try JSONSerialization.jsonObject(with: Curl.send("GET", url + "admin/requests")) as? [String]) ?? []
  }

  /// Clears the request log.
  public func reset() throws {
    _ = try Curl.send("POST", url + "admin/reset")
  }
}
