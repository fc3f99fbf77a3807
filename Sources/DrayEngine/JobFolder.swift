internal import DrayModel
internal import Foundation
internal import Glibc

/// The job folder, as the only place steps read and write their files.
///
/// Every `output` of `table`, `request` and `query`, and every `local` of `files`, is a path
/// relative to the job folder (the folder holding the manifest). The rules, checked before
/// any byte moves:
///
/// 1. the text: no absolute path, no `..` that climbs out (`JobPath.normalize`);
/// 2. on disk: each folder on the way is created inside the job folder, and an existing one
///    that is a symbolic link must resolve inside it (checked with `realpath(3)` after
///    each step, so nothing, not even a folder, is created outside);
/// 3. the file itself: an existing symbolic link there must resolve inside the job folder
///    (a new file replaces the link, never writes through it); reading follows links only
///    when the real path stays inside;
/// 4. names a server supplies (the entries of a folder listing that become local files) must
///    each be one plain path component (`JobPath.isPlainName`), then pass rules 1 to 3;
/// 5. no file written, and no folder on the way to it, is one of the files dray keeps for
///    the job (`KeptPaths`: the database, the manifest, the state and download folders, the
///    run's reports), compared by real path so that a symbolic link cannot lead there;
/// 6. a file written replaces only a regular file (or a symbolic link inside the job
///    folder): never a folder, a device, a FIFO or a socket (`FileKind`).
struct JobFolder {
  /// The job folder's real path.
  let root: String
  /// The files no step may write, as the manifest names them (resolved on each check: the
  /// folders may appear while the run goes).
  let kept: KeptPaths

  /// - Throws: `LocalFileError.io` when the folder cannot be resolved.
  init(_ directory: String, keeping kept: KeptPaths = KeptPaths([])) throws {
    guard let real = JobFolder.realPath(directory) else {
      throw LocalFileError.io(path: directory, detail: "cannot resolve the job folder: \(JobFolder.lastError())")
    }
    root = real
    self.kept = kept
  }

  /// Whether an absolute real path is the job folder or inside it.
  func contains(_ real: String) -> Bool {
    real == root || real.hasPrefix(root == "/" ? "/" : root + "/")
  }

  /// Makes `relative` ready to be written: checks it, creates its folders inside the job
  /// folder, and returns the absolute path to write (its folder resolved).
  /// - Parameter role: how the manifest names it, for messages (`output`, `local`).
  /// - Throws: `LocalFileError.refused` when the path leads outside; `.io` when a folder
  ///   cannot be created.
  func output(_ relative: String, role: String) throws -> String {
    let normalized = try check(relative, role: role)
    var components = normalized.split(separator: "/").map(String.init)
    guard normalized != ".", let name = components.popLast() else {
      throw refused(role, relative, "it names the job folder itself, not a file")
    }
    let kept = self.kept.onDisk()
    var current = root
    var walked: [String] = []
    for component in components {
      walked.append(component)
      let next = current + "/" + component
      if let conflict = kept.conflict(JobFolder.realPath(next) ?? next) {
        throw keptRefused(role, relative, "'\(walked.joined(separator: "/"))' \(conflict)")
      }
      var info = stat()
      if lstat(next, &info) != 0 {
        guard errno == ENOENT else { throw LocalFileError.io(path: next, detail: JobFolder.lastError()) }
        if mkdir(next, 0o755) != 0 && errno != EEXIST {
          throw LocalFileError.io(path: next, detail: "cannot create the folder: \(JobFolder.lastError())")
        }
        guard lstat(next, &info) == 0 else { throw LocalFileError.io(path: next, detail: JobFolder.lastError()) }
      }
      if info.st_mode & S_IFMT == S_IFLNK {
        guard let real = JobFolder.realPath(next), contains(real) else {
          let target = JobFolder.linkTarget(next)
          throw refused(role, relative, "'\(walked.joined(separator: "/"))' is a symbolic link to \(target), outside the job folder")
        }
        guard JobFolder.isDirectory(real) else { throw refused(role, relative, "'\(walked.joined(separator: "/"))' is not a folder") }
        current = real
      } else if info.st_mode & S_IFMT == S_IFDIR {
        current = next
      } else {
        throw refused(role, relative, "'\(walked.joined(separator: "/"))' is a file, not a folder")
      }
    }
    let path = current + "/" + name
    if let conflict = self.kept.conflictOnDisk(path) { throw keptRefused(role, relative, "it \(conflict)") }
    var info = stat()
    if lstat(path, &info) == 0 {
      if info.st_mode & S_IFMT == S_IFLNK {
        guard let real = JobFolder.realPath(path), contains(real) else {
          throw refused(role, relative, "it is a symbolic link to \(JobFolder.linkTarget(path)), outside the job folder")
        }
      } else if let kind = FileKind.refusal(at: path) {
        // A rename over it would replace a device or a FIFO, and fails on a folder.
        let advice =
          role == "local" && info.st_mode & S_IFMT == S_IFDIR
          ? "to put the file inside the folder, end the path with a slash: local: \(relative)/"
          : "dray writes a step's output only as a new file or over a regular file: remove it or name another file"
        throw LocalFileError.refused("\(role) '\(relative)': it is \(kind), not a regular file; \(advice)")
      }
    }
    return path
  }

  /// The real path of an existing file to read, inside the job folder.
  /// - Throws: `LocalFileError.refused` when the path or a link on it leads outside;
  ///   `.missing` when there is no such file.
  func input(_ relative: String, role: String) throws -> String {
    let normalized = try check(relative, role: role)
    let joined = normalized == "." ? root : root + "/" + normalized
    guard let real = JobFolder.realPath(joined) else {
      var info = stat()
      if lstat(joined, &info) == 0 { throw refused(role, relative, "it is a symbolic link that leads nowhere") }
      throw LocalFileError.missing(role: role, path: relative)
    }
    guard contains(real) else {
      throw refused(role, relative, "it leads through a symbolic link to \(real), outside the job folder")
    }
    var info = stat()
    guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw refused(role, relative, "it is not a regular file") }
    return real
  }

  /// `relative` checked by the text rule, normalised.
  func check(_ relative: String, role: String) throws -> String {
    do {
      return try JobPath.normalize(relative)
    } catch {
      throw LocalFileError.refused("\(role) '\(relative)': \(error); steps read and write files only inside the job folder \(root)")
    }
  }

  private func refused(_ role: String, _ relative: String, _ reason: String) -> LocalFileError {
    .refused("\(role) '\(relative)': \(reason); steps read and write files only inside the job folder \(root)")
  }

  private func keptRefused(_ role: String, _ relative: String, _ reason: String) -> LocalFileError {
    .refused("\(role) '\(relative)': \(reason); \(JobFolder.keptRule)")
  }

  static let keptRule = "a step may not write the files dray keeps for the job"

  /// What `relative` would overwrite among the kept files, checked without creating
  /// anything (`KeptPaths.conflictOnDisk`): `is the job's database (database.path)`; nil when
  /// it is free. For a whole list of names checked before the first is written.
  func keptConflict(_ relative: String) -> String? {
    guard let normalized = try? JobPath.normalize(relative), normalized != "." else { return nil }
    return kept.conflictOnDisk(root + "/" + normalized)
  }

  /// Moves a finished download into place at `destination` (a path from `output`): a rename
  /// when both are on one file system, else a copy to a temporary file beside the
  /// destination, flushed and renamed.
  func place(_ source: String, at destination: String) throws {
    if rename(source, destination) == 0 { return }
    guard errno == EXDEV else { throw LocalFileError.io(path: destination, detail: JobFolder.lastError()) }
    let file = try OutputFile(path: destination)
    guard let input = FileHandle(forReadingAtPath: source) else {
      throw LocalFileError.io(path: source, detail: "cannot read the downloaded file")
    }
    defer { try? input.close() }
    while true {
      let chunk = input.readData(ofLength: 1 << 20)
      if chunk.isEmpty { break }
      try file.write(Array(chunk))
    }
    try file.commit()
    unlink(source)
  }

  /// `path` (absolute) with every symbolic link resolved as far as it exists, as the kernel
  /// reads it (`link/..` is the folder holding the link's target); the missing rest is
  /// appended as written, `.` and `..` removed. With `keepingName`, the last component is not
  /// resolved (a link there is replaced by a write, never followed).
  static func canonical(_ path: String, keepingName: Bool = false) -> String {
    var existing = path
    var rest: [String] = []
    if keepingName, let name = path.split(separator: "/").last, name != ".", name != ".." {
      rest.append(String(name))
      existing = (path as NSString).deletingLastPathComponent
    }
    while existing != "/" && !existing.isEmpty {
      if let real = realPath(existing) { return JobPath.lexical(([real] + rest.reversed()).joined(separator: "/")) }
      rest.append((existing as NSString).lastPathComponent)
      existing = (existing as NSString).deletingLastPathComponent
    }
    return JobPath.lexical("/" + rest.reversed().joined(separator: "/"))
  }

  static func realPath(_ path: String) -> String? {
    guard let resolved = Glibc.realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  static func linkTarget(_ path: String) -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink(path, &buffer, buffer.count - 1)
    guard n >= 0 else { return "?" }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
  }

  /// The size of a file in bytes; 0 when it cannot be read.
  static func fileSize(_ path: String) -> Int64 {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : 0
  }

  static func lastError() -> String { String(cString: strerror(errno)) }
}

/// A file written whole or not at all: bytes go to a new temporary file beside the
/// destination (created with `O_EXCL | O_NOFOLLOW`), which `commit()` flushes to disk and
/// renames over the destination. Dropped without `commit()`, the temporary file is removed.
final class OutputFile {
  let path: String
  let temporaryPath: String
  private var fd: Int32
  private var buffer: [UInt8] = []
  private var committed = false
  /// Bytes written so far.
  private(set) var size: Int64 = 0

  /// - Throws: `LocalFileError.io` when the temporary file cannot be created.
  init(path: String) throws {
    self.path = path
    let folder = (path as NSString).deletingLastPathComponent
    let name = (path as NSString).lastPathComponent
    temporaryPath = folder + "/.\(name).tmp-\(getpid())-\(UUID().uuidString.prefix(8))"
    fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw LocalFileError.io(path: path, detail: "cannot create a temporary file: \(JobFolder.lastError())") }
    buffer.reserveCapacity(1 << 16)
  }

  deinit {
    if fd >= 0 { close(fd) }
    if !committed { unlink(temporaryPath) }
  }

  func write(_ text: String) throws { try write(Array(text.utf8)) }

  func write(_ bytes: [UInt8]) throws {
    buffer.append(contentsOf: bytes)
    size += Int64(bytes.count)
    if buffer.count >= 1 << 16 { try flush() }
  }

  private func flush() throws {
    var done = 0
    while done < buffer.count {
      let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress?.advanced(by: done), $0.count - done) }
      if n < 0 {
        if errno == EINTR { continue }
        throw LocalFileError.io(path: path, detail: JobFolder.lastError())
      }
      done += n
    }
    buffer.removeAll(keepingCapacity: true)
  }

  /// Flushes, syncs and renames the file into place.
  func commit() throws {
    try flush()
    guard fsync(fd) == 0 else { throw LocalFileError.io(path: path, detail: JobFolder.lastError()) }
    close(fd)
    fd = -1
    guard rename(temporaryPath, path) == 0 else { throw LocalFileError.io(path: path, detail: JobFolder.lastError()) }
    committed = true
  }
}

/// A step's local file could not be used.
enum LocalFileError: Error, CustomStringConvertible {
  /// The path leads outside the job folder; nothing was read or written.
  case refused(String)
  /// A file to read does not exist.
  case missing(role: String, path: String)
  /// The file system refused.
  case io(path: String, detail: String)

  var code: String {
    switch self {
    case .refused: "path_refused"
    case .missing: "file_missing"
    case .io: "file_error"
    }
  }

  var description: String {
    switch self {
    case .refused(let message): "refused \(message)"
    case .missing(let role, let path): "\(role) '\(path)' does not exist in the job folder"
    case .io(let path, let detail): "cannot use \(path): \(detail)"
    }
  }
}

extension KeptPaths {
  /// The kept paths as they are on disk now: a folder by its real path; a file both where
  /// its name is (its folder resolved: a write there would replace a link) and where a link
  /// there leads (a write there would reach the file itself).
  func onDisk() -> KeptPaths {
    KeptPaths(
      entries.flatMap { entry -> [Entry] in
        switch entry.kind {
        case .folder:
          return [Entry(path: JobFolder.canonical(entry.path), kind: .folder, name: entry.name)]
        case .pattern:
          return [Entry(path: JobFolder.canonical(entry.path, keepingName: true), kind: .pattern, name: entry.name)]
        case .file:
          let placed = JobFolder.canonical(entry.path, keepingName: true)
          let target = JobFolder.canonical(entry.path)
          return [Entry(path: placed, kind: .file, name: entry.name)]
            + (target == placed ? [] : [Entry(path: target, kind: .file, name: entry.name)])
        }
      })
  }

  /// The one check of a path dray is about to create or replace by a rename (a step's
  /// output, a report file, `dray report -o`) against the kept paths, as things are on disk
  /// now; the end of a sentence starting with the path, as `conflict(_:)` gives it, or nil
  /// when it meets none.
  ///
  /// `path` is absolute, read as the kernel reads it: folders on the way through symbolic
  /// links, `..` after a link from the link's target (`JobFolder.canonical`); a link at
  /// `path` itself is replaced, never followed. Beyond names, files are compared by identity
  /// (device and inode): an existing file at `path` that is a kept file under another name
  /// (a hard link; a name a case-insensitive file system does not tell apart) is one, and so
  /// is a path inside a folder that is a kept folder under another name.
  func conflictOnDisk(_ path: String) -> String? {
    let placed = JobFolder.canonical(path, keepingName: true)
    let kept = onDisk()
    // The path, then each folder on the way (`db.sqlite/x` would be the database's place).
    var current = placed
    while true {
      if let conflict = kept.conflict(current) { return conflict }
      if current == "/" { break }
      current = (current as NSString).deletingLastPathComponent
    }
    // A past run's report: an existing file of a kept pattern.
    if FileIdentity(placed, following: false) != nil,
      let entry = kept.entries.first(where: { $0.kind == .pattern && KeptPaths.matches(placed, pattern: $0.path) })
    {
      return "is \(entry.name)"
    }
    let identities = kept.entries.compactMap { entry in FileIdentity(entry.path, following: true).map { ($0, entry) } }
    if let own = FileIdentity(placed, following: false), own.isRegularFile,
      let (_, entry) = identities.first(where: { $0.1.kind == .file && $0.0 == own })
    {
      return "is \(entry.name), by another name (a hard link, or a name the file system does not tell apart)"
    }
    var folder = (placed as NSString).deletingLastPathComponent
    while true {
      if let own = FileIdentity(folder, following: true),
        let (_, entry) = identities.first(where: { $0.1.kind == .folder && $0.0 == own })
      {
        return "is inside \(entry.name)"
      }
      if folder == "/" { break }
      folder = (folder as NSString).deletingLastPathComponent
    }
    return nil
  }
}

/// What a file is, whatever its name: its device and inode.
private struct FileIdentity: Equatable {
  let device: UInt64
  let inode: UInt64
  let isRegularFile: Bool

  /// The file at `path`, through a symbolic link there when `following`; nil when nothing is there.
  init?(_ path: String, following: Bool) {
    var info = stat()
    guard (following ? stat(path, &info) : lstat(path, &info)) == 0 else { return nil }
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
    isRegularFile = info.st_mode & S_IFMT == S_IFREG
  }

  static func == (a: FileIdentity, b: FileIdentity) -> Bool { a.device == b.device && a.inode == b.inode }
}
