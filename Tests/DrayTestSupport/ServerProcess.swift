import Foundation

/// A Python server of `Emulator/` as a child process on 127.0.0.1, started on port 0 with
/// `--exit-on-eof`; its address is read from the first line it prints. Killed when released.
final class ServerProcess: @unchecked Sendable {
  // @unchecked: the process handle is set once in init and only killed in deinit.
  /// The server's address as printed (`http://127.0.0.1:PORT/`, or `https://`).
  let url: String
  private let process: Process
  /// Held open: the server exits when it reads end-of-file, so it never outlives the tests.
  private let lifeline = Pipe()

  /// Starts `Emulator/<script>` with extra command-line `arguments`.
  /// - Throws: when python3 cannot start or the server prints no address within 10 s.
  init(script: String, name: String, _ arguments: [String]) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", Repository.root + "/Emulator/" + script, "--port", "0", "--exit-on-eof"] + arguments
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
    // `http://` or, for a TLS emulator, `https://`.
    guard let range = text.range(of: "http"), text.contains("://") else {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw TestSupportError("the \(name) printed no address: '\(text)'")
    }
    url = String(text[range.lowerBound...]).trimmingCharacters(in: .whitespaces)
  }

  deinit {
    // SIGKILL: a test runner may leave SIGTERM blocked in the child's inherited mask.
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }
}
