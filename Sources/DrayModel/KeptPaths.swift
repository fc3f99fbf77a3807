/// The files and folders dray keeps for a job, which no step output may write and no report
/// may overwrite.
///
/// A step's output that landed on one of them would destroy the job's own state while the run
/// reported success: the database (and its `-wal`, `-shm` and `-journal` files), the manifest,
/// the lock and journal in the state folder, the answers in the download folder, the run's
/// report files, and a past run's report files (an existing file of `report.path`'s pattern
/// when it holds `{run_id}`: `Entry.Kind.pattern`). The rule is checked twice: on the text of the manifest when it is validated
/// (`ManifestValidator`), and on the real paths on disk before a step writes, where symbolic
/// links and names a server supplies are known (`JobFolder`).
///
/// ```swift
/// let kept = KeptPaths.forOutputs(of: manifest, runID: nil)
/// kept.conflict("/jobs/nightly/data/db.sqlite")   // "is the job's database (database.path)"
/// kept.conflict("/jobs/nightly/out/rows.csv")      // nil
/// ```
public struct KeptPaths: Sendable {
  /// One kept file, or a folder kept with everything inside it.
  public struct Entry: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
      /// A file, or a folder with everything inside it.
      case file, folder
      /// Every existing file whose path the entry's path matches, `{job}` and `{run_id}`
      /// standing for any text without a `/` (a past run's report; `KeptPaths.matches`).
      /// Only a check on disk sees it (`KeptPaths.conflictOnDisk`): a path of the pattern
      /// that does not exist yet is free.
      case pattern
    }
    /// Absolute, without `.` or `..`.
    public var path: String
    public var kind: Kind
    /// How messages name it: `the job's database (database.path)`.
    public var name: String

    public init(path: String, kind: Kind, name: String) {
      self.path = path
      self.kind = kind
      self.name = name
    }
  }

  public private(set) var entries: [Entry]

  public init(_ entries: [Entry]) {
    self.entries = entries
  }

  /// An example run id, for checking report paths that hold `{run_id}` before a run has one.
  public static let exampleRunID = "00000000T000000.000Z-000000"

  /// What no step output may be: the manifest, the database files, the run's report files,
  /// a past run's report files (existing files of a report path holding `{run_id}`, with
  /// `{job}` and `{run_id}` filled with any text), and anything inside the state folder or
  /// the download folder.
  ///
  /// - Parameter runID: the run whose report files are kept; nil (at validation) keeps only
  ///   the report files whose path does not hold `{run_id}`, the ones a step could name.
  public static func forOutputs(of manifest: Manifest, runID: String?) -> KeptPaths {
    var entries = common(manifest)
    for (format, path) in manifest.reportFiles(runID: runID ?? "{run_id}") where !path.contains("{run_id}") {
      entries.append(Entry(path: JobPath.lexical(path), kind: .file, name: reportName(format)))
    }
    // Past runs' reports: the files of a path holding `{run_id}`, whatever run and job fill it.
    var anyJob = manifest
    anyJob.job = "{job}"
    for (format, path) in anyJob.reportFiles(runID: "{run_id}") where path.contains("{run_id}") {
      entries.append(Entry(path: JobPath.lexical(path), kind: .pattern, name: pastReportName(format)))
    }
    entries.append(
      Entry(
        path: JobPath.lexical(manifest.resolve(manifest.state.path)), kind: .folder,
        name: "the state folder '\(manifest.state.path)' (state.path), which holds the job's lock and journal"))
    entries.append(
      Entry(
        path: JobPath.lexical(manifest.resolve(manifest.download.path)), kind: .folder,
        name: "the download folder '\(manifest.download.path)' (download.path)"))
    return KeptPaths(entries)
  }

  /// What no report file may be: the manifest, the database files, the lock, the run journal
  /// of a job without a database, and anything inside the download folder. (Reports may live
  /// in the state folder: that is where they go by default.)
  public static func forReports(of manifest: Manifest) -> KeptPaths {
    var entries = common(manifest)
    let state = manifest.resolve(manifest.state.path)
    entries.append(Entry(path: JobPath.lexical(state + "/\(manifest.job).lock"), kind: .file, name: "the job's lock file (state.path)"))
    if manifest.database == nil {
      let journal = JobPath.lexical(state + "/\(manifest.job).journal.sqlite")
      entries.append(Entry(path: journal, kind: .file, name: "the job's run journal (state.path)"))
      for suffix in databaseSuffixes {
        entries.append(Entry(path: journal + suffix, kind: .file, name: "a file of the job's run journal (state.path)"))
      }
    }
    entries.append(
      Entry(
        path: JobPath.lexical(manifest.resolve(manifest.download.path)), kind: .folder,
        name: "the download folder '\(manifest.download.path)' (download.path)"))
    return KeptPaths(entries)
  }

  /// The files SQLite keeps beside a database: write-ahead log, shared memory, rollback journal.
  public static let databaseSuffixes = ["-wal", "-shm", "-journal"]

  /// The manifest and the database files.
  private static func common(_ manifest: Manifest) -> [Entry] {
    var entries = [Entry(path: manifest.file, kind: .file, name: "the job's manifest")]
    if let database = manifest.database?.path {
      let path = JobPath.lexical(manifest.resolve(database))
      entries.append(Entry(path: path, kind: .file, name: "the job's database (database.path)"))
      for suffix in databaseSuffixes {
        entries.append(Entry(path: path + suffix, kind: .file, name: "a file of the job's database (database.path)"))
      }
    }
    return entries
  }

  private static func reportName(_ format: ReportSettings.Format) -> String {
    switch format {
    case .json: "the run's report (report.path)"
    case .junit: "the run's JUnit report (report.formats)"
    case .prometheus: "the job's Prometheus textfile (report.formats)"
    case .html: "the run's HTML page (report.formats)"
    }
  }

  private static func pastReportName(_ format: ReportSettings.Format) -> String {
    switch format {
    case .json: "a past run's report (report.path)"
    case .junit: "a past run's JUnit report (report.formats)"
    case .prometheus: "a past run's Prometheus textfile (report.formats)"
    case .html: "a past run's HTML page (report.formats)"
    }
  }

  /// Whether `path` is one of the paths `pattern` names, `{job}` and `{run_id}` each standing
  /// for any non-empty text without a `/`.
  public static func matches(_ path: String, pattern: String) -> Bool {
    guard
      let hole = [pattern.range(of: "{job}"), pattern.range(of: "{run_id}")].compactMap({ $0 }).min(by: { $0.lowerBound < $1.lowerBound })
    else { return path == pattern }
    let head = pattern[..<hole.lowerBound]
    let rest = String(pattern[hole.upperBound...])
    guard path.hasPrefix(head) else { return false }
    let tail = path.dropFirst(head.count)
    var end = tail.startIndex
    while end < tail.endIndex, tail[end] != "/" {
      end = tail.index(after: end)
      if matches(String(tail[end...]), pattern: rest) { return true }
    }
    return false
  }

  /// The entries but the one at `path` (a folder already refused for another reason, so
  /// that its problem is said once).
  public func dropping(_ path: String) -> KeptPaths {
    KeptPaths(entries.filter { $0.path != path })
  }

  /// The same entries with every path passed through `transform` (the engine resolves
  /// symbolic links with it).
  public func map(_ transform: (String) -> String) -> KeptPaths {
    KeptPaths(entries.map { Entry(path: transform($0.path), kind: $0.kind, name: $0.name) })
  }

  /// How the absolute path `path` meets a kept path, as the end of a sentence starting with
  /// the path: `is the job's database (database.path)`, `is inside the download folder
  /// '.dray/downloads' (download.path)`; nil when it meets none.
  public func conflict(_ path: String) -> String? {
    if let entry = entries.first(where: { $0.kind != .pattern && $0.path == path }) { return "is \(entry.name)" }
    // The innermost folder: the download folder inside the state folder names the download folder.
    let folders = entries.filter { $0.kind == .folder && JobPath.isInside(path, $0.path) }
    return folders.max { $0.path.count < $1.path.count }.map { "is inside \($0.name)" }
  }
}

extension Manifest {
  /// The manifest file's absolute path: its name in the job folder.
  public var file: String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    return JobPath.lexical(directory + "/" + name)
  }

  /// The files a run's report is written to, the JSON report first (docs/report.md):
  /// `report.path` with `{job}` and `{run_id}` replaced, absolute; with `junit`, the same
  /// path with `.json` replaced by `.junit.xml`; with `html`, by `.html`; with `prometheus`,
  /// `<job>.prom` in the JSON report's folder.
  public func reportFiles(runID: String) -> [(format: ReportSettings.Format, path: String)] {
    let json = resolve(report.path.replacing("{job}", with: job).replacing("{run_id}", with: runID))
    var files: [(format: ReportSettings.Format, path: String)] = [(.json, json)]
    if report.formats.contains(.junit) {
      files.append((.junit, (json.hasSuffix(".json") ? String(json.dropLast(5)) : json) + ".junit.xml"))
    }
    if report.formats.contains(.html) {
      files.append((.html, (json.hasSuffix(".json") ? String(json.dropLast(5)) : json) + ".html"))
    }
    if report.formats.contains(.prometheus) {
      let folder = json.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
      files.append((.prometheus, folder + "/\(job).prom"))
    }
    return files
  }
}
