public import DrayModel
internal import DrayReportPage
internal import DrayTarget
internal import Foundation
internal import Glibc

/// The files a run's report is written to, and the writing.
///
/// The JSON report (docs/report.md) is always written, to `report.path` with `{job}` and
/// `{run_id}` replaced. `report.formats` may add:
///
/// - `junit`: JUnit XML beside it, the same path with `.json` replaced by `.junit.xml`
///   (`JUnitReport`);
/// - `html`: a page of the run and the job's last runs beside it, the same path with `.json`
///   replaced by `.html` (`HTMLReport`), read back from the JSON report just written and the
///   journal;
/// - `prometheus`: `<job>.prom` in the same folder, one file per job rewritten by each run,
///   for node_exporter's textfile collector (`PrometheusReport`).
///
/// Each file is written whole or not at all (a temporary file beside it, flushed, renamed),
/// and every format is written from the report with its free text masked by the run's
/// `Redactor` (`RunReport.redacted(by:)`), before the format escapes it. A folder, device,
/// FIFO or socket at a report's path is refused, never replaced; a file not written is named
/// on standard error and makes a run that succeeded exit 1 (docs/report.md).
public enum ReportFiles {
  /// Every file a run of `manifest` writes, the JSON report first.
  public static func paths(_ manifest: Manifest, runID: String) -> [(format: ReportSettings.Format, path: String)] {
    manifest.reportFiles(runID: runID)
  }

  /// `path` relative to the current directory when it lies inside it, as people typed it;
  /// otherwise as is.
  public static func display(_ path: String) -> String {
    let here = FileManager.default.currentDirectoryPath
    guard here != "/", path.hasPrefix(here + "/") else { return path }
    return String(path.dropFirst(here.count + 1))
  }

  /// Writes every file of `report`, logging each path, or why it could not be written: the
  /// path, the system's reason (`strerror`: ENOTDIR, EISDIR, ENOSPC, …) and what to do. A
  /// folder, device, FIFO or socket at a path is never replaced.
  /// - Returns: the absolute paths not written; empty when every file was.
  @discardableResult
  static func write(_ report: RunReport, manifest: Manifest, database: any JobDatabase, console: Console) -> [String] {
    var unwritten: [String] = []
    let report = report.redacted(by: console.redactor.current)
    for (format, path) in paths(manifest, runID: report.runID) {
      let text: String
      switch format {
      case .json: text = report.json() + "\n"
      case .junit: text = JUnitReport(report: report).xml
      case .html: text = HTMLReport.page(manifest, database: database, runID: report.runID, runs: HTMLReport.defaultRuns).html()
      case .prometheus:
        text = PrometheusReport(report: report, previousSuccess: PrometheusReport.lastSuccess(inFile: path)).text
      }
      do {
        try writeFile(text, to: path, keeping: KeptPaths.forReports(of: manifest))
        console.info(format == .json ? "report: \(display(path))" : "report (\(format.rawValue)): \(display(path))")
      } catch {
        unwritten.append(path)
        let key = format == .json ? "report.path" : "report.path, report.formats"
        console.error(
          "the \(format.rawValue) report was not written to \(display(path)): \(error.reason); \(error.advice(key)), then run again")
      }
    }
    return unwritten
  }

  /// Writes `text` to `path` as every report file is written: whole or not at all
  /// (`AtomicFile`), never replacing a folder, device, FIFO or socket, nor landing on a file
  /// dray keeps for the job (`kept`, checked on disk: `KeptPaths.conflictOnDisk`).
  ///
  /// - Parameters:
  ///   - path: absolute, or relative to the current directory.
  ///   - page: the job and run (nil: the history alone) of the page `text` is, for `dray
  ///     report`: an existing file at `path` is then replaced only when it is a page dray
  ///     wrote (it starts with `ReportPage.opening`) of the same job and run, or the job's
  ///     history page (`ReportPage.otherRun(inPage:job:run:)`).
  /// - Throws: `ReportFileError` with the reason; nothing is written.
  public static func writeFile(
    _ text: String, to path: String, keeping kept: KeptPaths, onlyOverAPageOf page: (job: String, run: String?)? = nil
  ) throws(ReportFileError) {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    if let conflict = kept.conflictOnDisk(absolute) {
      throw ReportFileError(reason: "it \(conflict)", kind: .kept)
    }
    if let page {
      var info = stat()
      if lstat(path, &info) == 0 {
        if info.st_mode & S_IFMT == S_IFLNK {
          throw ReportFileError(reason: "a symbolic link is there, and dray report replaces only its own pages", kind: .notPage)
        }
        if info.st_mode & S_IFMT == S_IFREG {
          let head = self.head(path, count: 1 << 16)
          guard head.hasPrefix(ReportPage.opening) else {
            throw ReportFileError(
              reason: "a file is there that is not a page dray wrote, and dray report replaces only its own pages", kind: .notPage)
          }
          if let shown = ReportPage.otherRun(inPage: head, job: page.job, run: page.run) {
            throw ReportFileError(
              reason: "\(shown) is there, and dray report replaces a page only with a page of the same job and run", kind: .notPage)
          }
        }
      }
    }
    do {
      try AtomicFile.write(text, to: path)
    } catch {
      throw switch error {
      case LocalFileError.refused(let message): ReportFileError(reason: message, kind: .notRegularFile)
      case LocalFileError.io(_, let detail): ReportFileError(reason: detail, kind: .fileSystem)
      default: ReportFileError(reason: "\(error)", kind: nil)
      }
    }
  }

  /// The first `count` bytes of the file at `path`, as UTF-8 (invalid bytes replaced); empty
  /// when it cannot be read.
  private static func head(_ path: String, count: Int) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
    defer { try? handle.close() }
    return String(decoding: (try? handle.read(upToCount: count)) ?? Data(), as: UTF8.self)
  }
}

/// A report file that could not be written.
public struct ReportFileError: Error, CustomStringConvertible {
  /// Why dray would not write it.
  enum Kind {
    /// Something other than a regular file is at the path.
    case notRegularFile
    /// The path is one of the files dray keeps for the job (`KeptPaths`).
    case kept
    /// A file there is not a page dray wrote (`writeFile(_:to:keeping:onlyOverAPage:)`).
    case notPage
    /// The file system refused.
    case fileSystem
  }

  /// What went wrong, with the system's reason (`strerror`: ENOTDIR, EISDIR, ENOSPC, …).
  public var reason: String
  /// Why; nil when otherwise.
  var kind: Kind?

  public var description: String { reason }

  /// What to do, naming the setting `key` (`report.path`, or `-o`).
  public func advice(_ key: String) -> String {
    switch kind {
    case .notRegularFile: "move it aside, or name another file (\(key))"
    case .kept: "a report never overwrites the files dray keeps for the job; name another file (\(key))"
    case .notPage: "name a new file, or move that one aside (\(key))"
    case .fileSystem: "name a file in a folder this user may write, with room on its disk (\(key))"
    case nil: "check \(key)"
    }
  }
}

extension RunReport {
  /// Reads from `journal` the checkpoint of every step the run did not run (skipped, or
  /// never reached), for their `checkpoint.before` and `checkpoint.after`: unchanged by this
  /// run, so both are the journal's.
  mutating func recordCheckpointsOfStepsNotRun(_ journal: any RunJournal) {
    guard let checkpoints = try? journal.checkpoints(job: job) else { return }
    func fill(_ step: inout StepReport) {
      if step.status == .skipped || step.status == .notRun {
        let state = checkpoints.first { $0.stepID == step.id }.map(CheckpointState.init)
        step.checkpointBefore = state
        step.checkpointAfter = state
      }
      for index in step.members.indices { fill(&step.members[index]) }
    }
    for index in steps.indices { fill(&steps[index]) }
  }
}
