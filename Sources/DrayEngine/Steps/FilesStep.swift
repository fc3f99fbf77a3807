internal import DrayJSON
internal import DrayModel
internal import DrayPlatform
internal import DrayTransport
internal import Foundation

extension StepRunner {
  /// `files`: one operation on a file-server connection (platform-api.md §5; the SDK's
  /// getDirectory, getFileMeta, getFile, putFile, deleteFile).
  ///
  /// - `list`: the folder `path` (`.` by default); the listing is written to `local` when
  ///   given, and summed up in the report's notes.
  /// - `meta`: the file's stat dump, written to `local` when given.
  /// - `get`: downloads `path` to `local`, resumable like every download. A `local` ending in
  ///   `/` is a folder that receives the file under its own name. A `path` ending in `/`, `.`
  ///   or `..` is a folder on the server (`FilesStep.folder`): every file its listing names is downloaded into the folder
  ///   `local` (not recursively); each listed name must be one plain path component.
  /// - `put`: streams `local` from disk to `path` (a folder path, ending in `/`, `.` or `..`,
  ///   gets the local file's name: `FilesStep.file`).
  /// - `delete`: deletes `path`; a missing file fails the step unless `missing_ok: true`.
  ///
  /// Local paths stay inside the job folder (`JobFolder`); they are checked before the
  /// first call to the server.
  func runFiles(_ options: FilesStep, _ report: inout StepReport) throws {
    let folder = try jobFolder()
    let client = try platformClient()
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }
    let files = FileCalls(
      connection: options.connection, client: client, policy: step.retry,
      record: {
        attempts.append($0); logAttempt($0)
      })
    switch options.action {
    case .list:
      let destination = try options.local.map { try folder.output($0, role: "local") }
      let listing = try files.list(options.path)
      report.notes.append(FileCalls.describe(listing, at: "\(options.connection):\(options.path)"))
      if let destination, let local = options.local {
        try write(listing.json + "\n", to: destination)
        report.outputs = [try folder.check(local, role: "local")]
      }
    case .meta:
      let destination = try options.local.map { try folder.output($0, role: "local") }
      let meta = try files.client.fileMeta(connection: options.connection, path: options.path, policy: step.retry, record: files.record)
      report.notes.append(FileCalls.describeMeta(meta, at: "\(options.connection):\(options.path)"))
      if let destination, let local = options.local {
        try write(meta.json + "\n", to: destination)
        report.outputs = [try folder.check(local, role: "local")]
      }
    case .get:
      guard let local = options.local else { throw StepError.settingMissing("files get needs 'local'") }
      if let directory = FilesStep.folder(options.path) {
        try getFolder(options, directory: directory, local: local, folder: folder, files: files, &report)
      } else {
        let target = local.hasSuffix("/") ? local + (options.path as NSString).lastPathComponent : local
        let destination = try folder.output(target, role: "local")
        try get(options.path, to: destination, download: downloadPath(), folder: folder, files: files, &report)
        report.outputs = [try folder.check(target, role: "local")]
      }
    case .put:
      guard let local = options.local else { throw StepError.settingMissing("files put needs 'local'") }
      let source = try folder.input(local, role: "local")
      let remote = FilesStep.file(options.path, named: (local as NSString).lastPathComponent)
      try client.putFile(connection: options.connection, path: remote, localFile: source, policy: step.retry, record: files.record)
      report.bytes = JobFolder.fileSize(source)
      report.wireBytes = report.bytes
      report.notes.append("uploaded \(report.bytes) bytes to \(options.connection):\(remote)")
    case .delete:
      let target = "\(options.connection):\(options.path)"
      if let missing = try client.deleteFile(connection: options.connection, path: options.path, policy: step.retry, record: files.record) {
        guard options.missingOK else { throw FilesError.missing(target: target, answer: missing) }
        report.notes.append("\(target) was already absent (HTTP 404); missing_ok: true")
      } else {
        report.notes.append("deleted \(target)")
      }
    }
    try recordCheckpoint(report, status: .succeeded)
  }

  /// Downloads one server file into place.
  private func get(
    _ remote: String, to destination: String, download path: String, folder: JobFolder, files: FileCalls, _ report: inout StepReport
  ) throws {
    let download = Download(path: path, style: .platform, resume: manifest.download.resume)
    try files.client.getFile(connection: files.connection, path: remote, download: download, policy: step.retry, record: files.record)
    report.count(download)
    if download.bytesResumed > 0 { report.notes.append("\(remote): resumed a partial download at byte \(download.bytesResumed)") }
    report.notes += download.notes.map { "\(remote): \($0)" }
    try folder.place(download.path, at: destination)
  }

  /// Downloads every file the server folder `directory` (`FilesStep.folder`) lists into the
  /// local folder `local`, after checking every listed name and every destination.
  private func getFolder(
    _ options: FilesStep, directory: String, local: String, folder: JobFolder, files: FileCalls, _ report: inout StepReport
  ) throws {
    let listing = try files.list(directory)
    let place = "\(options.connection):\(options.path)"
    let listed = (listing["files"]?.arrayValue ?? []).map { $0.stringValue ?? $0.json }
    // A name listed twice is one remote file: fetched once (names compared as bytes).
    var seen = Set<[UInt8]>()
    let names = listed.filter { seen.insert(Array($0.utf8)).inserted }
    if names.count < listed.count {
      report.notes.append("the listing of \(place) named \(listed.count - names.count) file(s) more than once; each was fetched once")
    }
    for name in names where !JobPath.isPlainName(name) {
      throw LocalFileError.refused(
        "the name '\(name)' that the server listed in \(place): a listed name must be one plain path component; nothing was downloaded"
      )
    }
    let base = local.hasSuffix("/") ? local : local + "/"
    for name in names {
      if let conflict = folder.keptConflict(base + name) {
        throw LocalFileError.refused(
          "the name '\(name)' that the server listed in \(place): local '\(base + name)' \(conflict); \(JobFolder.keptRule); nothing was downloaded"
        )
      }
    }
    let targets = try names.map { name in (name, base + name, try folder.output(base + name, role: "local")) }
    for (name, target, destination) in targets {
      let remote = FilesStep.file(directory + "/", named: name)
      try get(
        remote, to: destination, download: downloadPath("\(SHA256.hex(name).prefix(8)).answer"), folder: folder, files: files, &report)
      report.outputs.append(try folder.check(target, role: "local"))
    }
    let skipped = listing["directories"]?.arrayValue?.count ?? 0
    report.notes.append(
      "fetched \(names.count) file\(names.count == 1 ? "" : "s") from \(place)"
        + (skipped > 0 ? "; \(skipped) folder\(skipped == 1 ? "" : "s") not fetched (a folder download is not recursive)" : ""))
  }

  /// Writes a small answer whole to a path from `JobFolder.output`.
  private func write(_ text: String, to destination: String) throws {
    let file = try OutputFile(path: destination)
    try file.write(text)
    try file.commit()
  }
}

/// The platform calls of one `files` step.
private struct FileCalls {
  let connection: String
  let client: PlatformClient
  let policy: RetryPolicy
  let record: (Attempt) -> Void

  func list(_ path: String) throws -> JSONValue {
    let listing = try client.listDirectory(connection: connection, path: path, policy: policy, record: record)
    guard case .object = listing, listing["files"]?.arrayValue != nil || listing["directories"]?.arrayValue != nil else {
      throw PlatformError.badAnswer(
        url: client.session.url("directory/\(connection)/"), detail: "the listing has neither 'files' nor 'directories'")
    }
    return listing
  }

  /// `nfs4:. holds 2 folders (docs, images) and 2 files (file.txt, notes.txt)`.
  static func describe(_ listing: JSONValue, at place: String) -> String {
    func part(_ key: String, _ one: String, _ many: String) -> String {
      let names = (listing[key]?.arrayValue ?? []).map { $0.stringValue ?? $0.json }
      let shown = names.prefix(20).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
      return "\(names.count) \(names.count == 1 ? one : many)" + (names.isEmpty ? "" : " (\(shown))")
    }
    return "\(place) holds \(part("directories", "folder", "folders")) and \(part("files", "file", "files"))"
  }

  /// `nfs4:file.txt: 78 bytes, mode 0644, modified 2026-11-30T12:09:18Z`.
  static func describeMeta(_ meta: JSONValue, at place: String) -> String {
    let stat = meta["stat"] ?? meta
    var parts: [String] = []
    if let size = stat["st_size"]?.intValue { parts.append("\(size) bytes") }
    if let mode = stat["st_mode"]?.intValue { parts.append("mode " + String(format: "%04o", Int(mode) & 0o7777)) }
    if let ns = stat["st_mtime_ns"]?.intValue {
      let formatter = ISO8601DateFormatter()
      parts.append("modified " + formatter.string(from: Date(timeIntervalSince1970: Double(ns / 1_000_000_000))))
    }
    return "\(place): " + (parts.isEmpty ? "no stat fields" : parts.joined(separator: ", "))
  }
}

/// A `files` operation the server could not carry out in a way the step cares about.
enum FilesError: Error, CustomStringConvertible {
  /// `delete` of a file the server does not have, without `missing_ok`.
  case missing(target: String, answer: HTTPStatusError)

  var code: String {
    switch self {
    case .missing: "file_missing"
    }
  }

  var description: String {
    switch self {
    case .missing(let target, let answer):
      "cannot delete \(target): the server has no such file (\(answer)); set missing_ok: true if a missing file is fine"
    }
  }
}
