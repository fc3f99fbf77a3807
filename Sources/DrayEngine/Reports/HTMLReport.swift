internal import DrayJSON
public import DrayModel
public import DrayReportPage
public import DrayTarget
internal import Foundation

/// The inputs of a job's HTML page (`ReportPage`) read from what dray keeps: the run journal
/// and the JSON reports. `dray report` and `report.formats: [html]` both go through it.
///
/// Nothing here throws: a journal or a report that cannot be read is named on the page,
/// with its path and the reason.
public enum HTMLReport {
  /// How many runs the history shows unless told otherwise.
  public static let defaultRuns = 30

  /// The page of run `runID` (nil: the job's newest run) with the job's last `limit` runs,
  /// drawn from the JSON reports (their free text masked when they were written) and the
  /// journal (which holds no secret).
  /// - Parameters:
  ///   - manifest: the job; its `report.path` says where the runs' reports are.
  ///   - database: the job's database, whose journal lists the runs.
  ///   - runID: the run drawn in full; its report is read even when the journal does not list it.
  ///   - limit: the number of runs in the history, 1 or more.
  public static func page(_ manifest: Manifest, database: any JobDatabase, runID: String?, runs limit: Int) -> ReportPage {
    let (runs, problem) = journalRuns(manifest.job, in: database, limit: limit)
    let history = runs.map { run in
      ReportPage.Run(
        id: run.id, status: run.status.rawValue, startedAt: run.startedAt, endedAt: run.endedAt, options: run.flags.text,
        report: document(at: Runner.reportPath(manifest, runID: run.id)))
    }
    let chosen = runID ?? runs.first?.id
    let shown = chosen.map { id in history.first { $0.id == id }?.report ?? document(at: Runner.reportPath(manifest, runID: id)) }
    return ReportPage(job: manifest.job, run: shown, history: history, historyProblem: problem)
  }

  /// The job's last `limit` runs, newest first, or why the journal could not be read.
  private static func journalRuns(_ job: String, in database: any JobDatabase, limit: Int) -> ([RunRecord], String?) {
    do {
      guard let journal = try database.openReadOnly()?.journal() else {
        return ([], "No runs yet: there is no run journal \(database.journalPlace).")
      }
      return (try journal.runs(job: job, limit: limit), nil)
    } catch {
      return ([], "The run journal could not be read: \(database.failure(error)?.message ?? "\(error)")")
    }
  }

  /// The JSON report at `path`, or why it cannot be read.
  static func document(at path: String) -> ReportPage.Document {
    guard FileManager.default.fileExists(atPath: path) else {
      return .unreadable(path: path, reason: "no such file (never written, or removed since)")
    }
    let bytes: [UInt8]
    do {
      bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    } catch {
      return .unreadable(path: path, reason: "it cannot be read: \(error.localizedDescription)")
    }
    do {
      return .report(try JSONValue(parsing: bytes))
    } catch {
      return .unreadable(path: path, reason: "it is not JSON: " + (error.message.split(separator: "\n").first.map(String.init) ?? ""))
    }
  }
}
