internal import DrayDatabases
public import DrayEngine
internal import DrayManifest
public import DrayModel
public import DrayTarget
internal import Foundation

/// Writes `text` as `folder/file`, loads it and runs it quietly.
public func runJob(_ folder: TemporaryDirectory, _ text: String, file: String = "job.yaml", environment: [String: String] = [:]) throws -> (
  Manifest, RunReport
) {
  try runJob(at: folder.path + "/" + file, text, environment: environment)
}

/// Writes `text` to `path`, loads it and runs it quietly.
public func runJob(at path: String, _ text: String, environment: [String: String] = [:]) throws -> (Manifest, RunReport) {
  try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
  try text.write(toFile: path, atomically: true, encoding: .utf8)
  let manifest = try ManifestLoader(environment: environment).load(path: path)
  let report = Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
  return (manifest, report)
}

extension Runner {
  /// A runner of `manifest` on the database its manifest names (`Databases.open`), as
  /// `dray run` opens it.
  public convenience init(manifest: Manifest, options: RunFlags = RunFlags(), console: Console, cancellation: Cancellation) {
    self.init(manifest: manifest, database: Databases.open(manifest), options: options, console: console, cancellation: cancellation)
  }
}

/// A path with every symbolic link resolved (the job folder as steps name it).
public func realPath(_ path: String) -> String {
  URL(fileURLWithPath: path).resolvingSymlinksInPath().path
}

/// A file's bytes.
public func bytes(_ path: String) throws -> [UInt8] {
  Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// A file's text.
public func text(_ path: String) throws -> String {
  try String(contentsOfFile: path, encoding: .utf8)
}

/// The emulator's requests whose path starts with `prefix`.
public func requests(_ emulator: Emulator, _ prefix: String) throws -> [[String: Any]] {
  try emulator.requests().filter { ($0["path"] as? String)?.hasPrefix(prefix) == true }
}
