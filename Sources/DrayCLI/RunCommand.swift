internal import DrayEngine
internal import DrayModel
internal import Foundation
internal import Glibc

/// The run's cancellation, reachable from signal handlers (which cannot capture context).
private let runCancellation = Cancellation()

/// `dray run JOB.yaml`: validate, then run with checkpoints; print the summary.
enum RunCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, flags: ["--fresh", "--quiet", "--verbose", "-q", "-v"], options: ["--from", "--only"])
    guard args.positional.count == 1 else { throw UsageError("run takes one manifest: dray run JOB.yaml") }
    if args.values["--from"] != nil && args.values["--only"] != nil { throw UsageError("--from and --only do not go together") }
    guard let manifest = ManifestInput.load(args.positional[0]) else { return ExitCode.usage }
    let ids = manifest.steps.map(\.id)
    for option in ["--from", "--only"] {
      if let id = args.values[option], !ids.contains(id) {
        throw UsageError("\(option) \(id): no such step; steps: \(ids.joined(separator: ", "))")
      }
    }
    let level: Console.Level =
      args.flags.contains("--quiet") || args.flags.contains("-q")
      ? .quiet
      : args.flags.contains("--verbose") || args.flags.contains("-v") ? .verbose : .normal
    let console = Console(level: level, redactor: manifest.redactor)
    installSignalHandlers()
    let options = RunOptions(fresh: args.flags.contains("--fresh"), from: args.values["--from"], only: args.values["--only"])
    let report = Runner(manifest: manifest, options: options, console: console, cancellation: runCancellation).run()
    if report.exitCode != ExitCode.locked {
      console.print(Summary.text(report, reportPath: Runner.reportPath(manifest, runID: report.runID)))
    }
    return report.exitCode
  }

  /// SIGINT and SIGTERM ask the run to stop at its next safe point; a second one exits at
  /// once with 130.
  static func installSignalHandlers() {
    // A parent (a test runner, a supervisor) may have left these blocked.
    var mask = sigset_t()
    sigemptyset(&mask)
    sigaddset(&mask, SIGINT)
    sigaddset(&mask, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    for sig in [SIGINT, SIGTERM] {
      signal(sig) { received in
        if runCancellation.isCancelled { _exit(130) }
        runCancellation.cancel(signal: received)
      }
    }
  }
}

/// The short human summary printed after a run.
enum Summary {
  static func text(_ report: RunReport, reportPath: String) -> String {
    let seconds = String(format: "%.2fs", report.endedAt.timeIntervalSince(report.startedAt))
    var lines = ["job \(report.job): \(report.status.rawValue) in \(seconds) (run \(report.runID))"]
    let idWidth = max(4, report.steps.map(\.id.count).max() ?? 0)
    let kindWidth = max(4, report.steps.map(\.kind.count).max() ?? 0)
    for step in report.steps {
      var detail: [String] = []
      if !step.rows.isEmpty { detail.append("\(step.totalRows) rows") }
      if !step.tables.isEmpty && step.rows.isEmpty { detail.append("\(step.tables.count) tables") }
      if step.bytes > 0 { detail.append("\(step.bytes) bytes") }
      if step.attempts.count > 1 { detail.append("\(step.attempts.count) attempts") }
      if let reason = step.skipReason { detail.append(reason) }
      if let message = step.errorMessage { detail.append(message) }
      lines.append(
        "  " + step.id.padding(toLength: idWidth, withPad: " ", startingAt: 0) + "  "
          + step.kind.padding(toLength: kindWidth, withPad: " ", startingAt: 0) + "  "
          + step.status.rawValue.padding(toLength: max(11, step.status.rawValue.count + 2), withPad: " ", startingAt: 0)
          + detail.joined(separator: "; "))
    }
    if let error = report.errorMessage { lines.append("error: \(error)") }
    lines.append("report: \(reportPath)")
    return lines.joined(separator: "\n")
  }
}
