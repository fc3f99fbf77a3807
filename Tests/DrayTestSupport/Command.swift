import Foundation

/// Where the repository is, from this file's path.
public enum Repository {
  public static let root: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
  }()

  /// The built `dray` binary: `$DRAY_BINARY`, or `.build/debug/dray`.
  public static var drayBinary: String {
    if let path = ProcessInfo.processInfo.environment["DRAY_BINARY"] { return path }
    for configuration in ["debug", "release"] {
      let path = root + "/.build/\(configuration)/dray"
      if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return root + "/.build/debug/dray"
  }
}

/// Runs a program to completion and captures what it printed.
public enum Command {
  public struct Result: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Seconds from start to exit.
    public var duration: Double
    /// Everything printed, both streams.
    public var output: String { stdout + stderr }
  }

  /// Runs `executable` with `arguments`, environment `environment` (added to a minimal
  /// PATH-only base when `inherit` is false), in `directory`.
  public static func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], inherit: Bool = true,
    directory: String? = nil, stdin: String? = nil
  ) throws -> Result {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var env = inherit ? ProcessInfo.processInfo.environment : ["PATH": "/usr/local/bin:/usr/bin:/bin"]
    env.merge(environment) { $1 }
    process.environment = env
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let input = Pipe()
    process.standardInput = input
    let start = Date()
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try? input.fileHandleForWriting.close()
    // Read both pipes at once so that neither fills up and blocks the child.
    let errors = DataBox()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
      errors.data = err.fileHandleForReading.readDataToEndOfFile()
      group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return Result(
      status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
      stderr: String(decoding: errors.data, as: UTF8.self), duration: Date().timeIntervalSince(start))
  }

  /// Runs the `dray` binary.
  public static func dray(_ arguments: [String], environment: [String: String] = [:], directory: String? = nil) throws -> Result {
    try run(Repository.drayBinary, arguments, environment: environment, directory: directory)
  }
}

/// Bytes handed from a reader thread; read only after the group is done.
private final class DataBox: @unchecked Sendable {
  var data = Data()
}

/// A fresh folder under the system's temporary directory, removed on release.
public final class TemporaryDirectory: @unchecked Sendable {
  // @unchecked: `path` is immutable; removal happens once in deinit.
  public let path: String

  /// - Parameter base: the folder to make it in; the system's temporary folder by default.
  public init(_ prefix: String = "dray-test", base: String? = nil) {
    let base = base ?? FileManager.default.temporaryDirectory.path
    path = base + "/\(prefix)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  /// Writes `text` to `name` inside the folder and returns the full path.
  @discardableResult
  public func write(_ name: String, _ text: String) throws -> String {
    let full = path + "/" + name
    try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try text.write(toFile: full, atomically: true, encoding: .utf8)
    return full
  }

  public func read(_ name: String) throws -> String {
    try String(contentsOfFile: path + "/" + name, encoding: .utf8)
  }
}

/// The emulator's demo user.
public enum DemoUser {
  public static let name = "demo"
  public static let password = "demo-password"
  public static var environment: [String: String] { ["FMP_USER": name, "FMP_PASSWORD": password] }
}
