internal import Foundation
internal import Glibc

/// Named instants where a test can make `dray run` die as `kill -9` would, to check what a
/// crash there leaves: `DRAY_TEST_CRASH_AT=<point>` sends SIGKILL to the process itself when
/// the run reaches `<point>`. Only the exact name matches; unset, it costs one comparison.
///
/// Points, in the order a run meets them (`STEP` is a step id):
/// - `journal-built`: a new journal is complete beside its path, before it is linked there;
/// - `run-recorded`: the run's row is committed to the journal, before the first step;
/// - `token-kept`: a rotated OAuth 2.0 refresh token is committed to the job's database,
///   before the access token that came with it is used (docs/auth.md);
/// - `downloaded:STEP`: a download is complete on disk, before its load begins;
/// - `page-committed:STEP:N`: page `N` of an `http` step is committed to its staging
///   database (its records and quarantined ones, with its ledger entry), before the next;
/// - `before-commit:STEP`: the step's rows and checkpoint are written, before `COMMIT`;
/// - `published:STEP`: an `http` step's records are committed to the target database,
///   before its staged pages are cleared (docs/http.md, "Checkpoints and resume");
/// - `committed:STEP`: the step's transaction is committed, before the next step;
/// - `run-finished`: the run's end is recorded in the journal, before the report.
public enum CrashPoint {
  private static let target = ProcessInfo.processInfo.environment["DRAY_TEST_CRASH_AT"]

  /// Dies here when `DRAY_TEST_CRASH_AT` names `point`.
  public static func reach(_ point: @autoclosure () -> String) {
    guard let target, target == point() else { return }
    kill(getpid(), SIGKILL)
    // SIGKILL cannot be caught or blocked; this is never reached.
    _exit(137)
  }
}
