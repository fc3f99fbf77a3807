public import Foundation

/// Report files checked by `scripts/check-report.py` (JSON against docs/report.schema.json,
/// JUnit XML, Prometheus textfiles), run with Debian's `/usr/bin/python3`, which has
/// `python3-jsonschema` and `python3-prometheus-client`.
public enum ReportCheck {
  /// The problems found in `paths`, one per line; empty when every file checks out.
  public static func problems(_ paths: [String]) throws -> String {
    let result = try Command.run("/usr/bin/python3", [Repository.root + "/scripts/check-report.py"] + paths)
    return (result.stdout + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The problems headless Chromium finds opening the HTML page at `page` with networking
  /// off (`scripts/check-page-in-browser.sh`): console messages, a crash, no screenshot.
  /// Saves the screenshot at `screenshot`, and also in the folder named by the environment
  /// variable `DRAY_PAGE_SCREENSHOTS` when it is set (how docs/report.md's pictures are made).
  public static func browserProblems(_ page: String, screenshot: String) throws -> String {
    let result = try Command.run(Repository.root + "/scripts/check-page-in-browser.sh", [page, screenshot])
    if result.status == 0, let folder = ProcessInfo.processInfo.environment["DRAY_PAGE_SCREENSHOTS"] {
      let copy = folder + "/" + (screenshot as NSString).lastPathComponent
      try? FileManager.default.removeItem(atPath: copy)
      try FileManager.default.copyItem(atPath: screenshot, toPath: copy)
    }
    return result.status == 0 ? "" : (result.stdout + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// A JSON file decoded as an object.
  public static func json(_ path: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
      throw TestSupportError("\(path) is not a JSON object")
    }
    return object
  }
}

/// The built `dray` running in the background with its output going to files, so that a test
/// can signal it at a chosen moment.
public final class BackgroundDray {
  public let process = Process()
  private let outputPath: String
  private let errorsPath: String

  /// Starts `dray` with `arguments` and the test process's environment plus `environment`;
  /// standard output and error go to `<logPrefix>.out` and `<logPrefix>.err`.
  public init(_ arguments: [String], environment: [String: String] = [:], logPrefix: String) throws {
    outputPath = logPrefix + ".out"
    errorsPath = logPrefix + ".err"
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: Repository.drayBinary)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    process.standardOutput = FileHandle(forWritingAtPath: outputPath)
    process.standardError = FileHandle(forWritingAtPath: errorsPath)
    try process.run()
  }

  /// Waits up to `seconds` for `condition`, checking every 50 ms.
  /// - Throws: when the time runs out or the process ends first.
  public func wait(upTo seconds: Double = 20, for what: String, until condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return }
      guard process.isRunning else { throw TestSupportError("dray ended before \(what): \(try finish().output)") }
      Thread.sleep(forTimeInterval: 0.05)
    }
    throw TestSupportError("no \(what) within \(seconds) s")
  }

  /// Sends `signal` to the process.
  public func send(_ signal: Int32) {
    kill(process.processIdentifier, signal)
  }

  /// Waits for the process to end and returns what it printed.
  public func finish() throws -> Command.Result {
    process.waitUntilExit()
    return Command.Result(
      status: process.terminationStatus, stdout: try String(contentsOfFile: outputPath, encoding: .utf8),
      stderr: try String(contentsOfFile: errorsPath, encoding: .utf8), duration: 0)
  }
}
