import Foundation

/// The REST test server (`Emulator/rest_server.py`) as a child process on 127.0.0.1.
///
/// Started on port 0; the chosen address is read from the first line it prints. Stopped
/// when the value is released.
public final class RestServer: @unchecked Sendable {
  // @unchecked: the process handle is set once in init and only killed in deinit.
  /// The server's address, ending with `/`.
  public let url: String
  private let process: Process
  /// Held open: the server exits when it reads end-of-file, so it never outlives the tests.
  private let lifeline = Pipe()

  /// Starts the server with extra command-line `arguments` (`--items`, `--token`, `--user`,
  /// `--rule`).
  /// - Throws: when python3 cannot start or the server prints no address within 10 s.
  public init(_ arguments: [String] = []) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", Repository.root + "/Emulator/rest_server.py", "--port", "0", "--exit-on-eof"] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    process.standardInput = lifeline
    try process.run()
    let handle = output.fileHandleForReading
    var line = Data()
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let byte = handle.readData(ofLength: 1)
      if byte.isEmpty || byte == Data("\n".utf8) { break }
      line.append(byte)
    }
    let text = String(decoding: line, as: UTF8.self)
    guard let range = text.range(of: "http://") else {
      process.terminate()
      throw TestSupportError("the REST server printed no address: '\(text)'")
    }
    url = String(text[range.lowerBound...]).trimmingCharacters(in: .whitespaces)
  }

  deinit {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// One request the server received.
  public struct Request: Sendable, Equatable {
    public var method: String
    /// The path with its query, as sent.
    public var path: String
    public var headers: [String: String]
    public var body: String
  }

  /// The requests received (outside `/admin/`), oldest first.
  public func requests() throws -> [Request] {
    let data = try Curl.send("GET", url + "admin/requests")
    let list = (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    return list.map {
      Request(
        method: $0["method"] as? String ?? "", path: $0["path"] as? String ?? "", headers: $0["headers"] as? [String: String] ?? [:],
        body: $0["body"] as? String ?? "")
    }
  }

  /// Replaces the server's rules (delays and canned statuses; see the server's docstring).
  public func setRules(_ json: String) throws {
    _ = try Curl.send("POST", url + "admin/rules", headers: ["Content-Type": "application/json"], body: json)
  }

  /// Clears the request log.
  public func reset() throws {
    _ = try Curl.send("POST", url + "admin/reset")
  }
}
