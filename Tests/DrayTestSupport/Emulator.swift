public import Foundation

/// The platform emulator (`Emulator/emulator.py`) as a child process on 127.0.0.1.
///
/// Started on port 0; the chosen address is read from the first line it prints. Stopped
/// when the value is released.
public final class Emulator: Sendable {
  private let server: ServerProcess
  /// The emulator's address, ending with `/`.
  public var url: String { server.url }
  public let port: Int

  /// Starts the emulator with extra command-line `arguments`.
  /// - Throws: when python3 cannot start or the emulator prints no address within 10 s.
  public init(_ arguments: [String] = []) throws {
    server = try ServerProcess(script: "emulator.py", name: "emulator", arguments)
    guard let port = URL(string: server.url)?.port else { throw TestSupportError("the emulator printed no port: '\(server.url)'") }
    self.port = port
  }

  /// Calls an admin endpoint (`/admin/...`) and returns the body.
  @discardableResult
  public func admin(_ method: String, _ path: String, json: String? = nil) throws -> Data {
    try Curl.send(method, url + "admin/" + path, headers: json == nil ? [:] : ["Content-Type": "application/json"], body: json)
  }

  /// The folder holding the emulator's file connections, one subfolder each (`nfs4`, ...).
  public func filesRoot() throws -> String {
    let data = try admin("GET", "files/root")
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    guard let root = object?["root"] as? String else { throw TestSupportError("no files root in \(String(decoding: data, as: UTF8.self))") }
    return root
  }

  /// The requests the emulator received, as decoded JSON objects.
  public func requests() throws -> [[String: Any]] {
    let data = try admin("GET", "requests")
    return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
  }
}

/// Small HTTP calls for tests, through the `curl` command (no network stack of our own).
public enum Curl {
  /// Sends one request and returns the body, whatever the status. The body goes through
  /// curl's standard input, so it may be larger than a command line.
  public static func send(_ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil) throws -> Data {
    var arguments = ["-s", "-S", "-X", method]
    for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
    if body != nil { arguments += ["--data-binary", "@-"] }
    arguments.append(url)
    let result = try Command.run("/usr/bin/curl", arguments, stdin: body)
    guard result.status == 0 else { throw TestSupportError("curl failed: \(result.stderr)") }
    return Data(result.stdout.utf8)
  }
}

public struct TestSupportError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
