internal import DrayDatabases
internal import DrayEngine
internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Glibc

/// The run's cancellation, reachable from signal handlers (which cannot capture context).
private let runCancellation = Cancellation()

/// `dray run JOB.yaml`: validate, then run with checkpoints; print the summary.
enum RunCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(
      arguments, flags: ["--fresh", "--quiet", "--verbose", "-q", "-v", "--join"],
      options: ["--from", "--only", "--resend", "--log-format", "--when-locked", "--run-key", "--record", "--replay"])
    guard args.positional.count == 1 else { throw UsageError("run takes one manifest: dray run JOB.yaml") }
    if args.values["--from"] != nil && args.values["--only"] != nil { throw UsageError("--from and --only do not go together") }
    let quiet = args.flags.contains("--quiet") || args.flags.contains("-q")
    let verbose = args.flags.contains("--verbose") || args.flags.contains("-v")
    if quiet && verbose { throw UsageError("--quiet and --verbose do not go together") }
    var format = Console.LogFormat.text
    if let name = args.values["--log-format"] {
      guard let chosen = Console.LogFormat(rawValue: name) else {
        throw UsageError(
          "--log-format \(name): unknown format; formats: \(Console.LogFormat.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      format = chosen
    }
    var whenLocked = WhenLocked.exit
    if let value = args.values["--when-locked"] {
      do {
        whenLocked = try WhenLocked.parse(value)
      } catch {
        throw UsageError(error.message)
      }
    }
    // `--when-locked join` is `--join`: one mechanism.
    let join = args.flags.contains("--join") || whenLocked == .join
    if join && whenLocked == .succeed { throw UsageError("--join and --when-locked succeed do not go together") }
    let runKey = args.values["--run-key"]
    if let runKey {
      guard join else { throw UsageError("--run-key goes with --join: runners given one key share one run") }
      guard !runKey.isEmpty, runKey.utf8.count <= 200, runKey.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
        throw UsageError("--run-key takes 1 to 200 bytes of printable text (a Kubernetes Job's UID, a CI pipeline's id)")
      }
    }
    let record = args.values["--record"]
    let replay = args.values["--replay"]
    if record != nil && replay != nil { throw UsageError("--record and --replay do not go together") }
    if join && (record != nil || replay != nil) {
      throw UsageError("--\(record != nil ? "record" : "replay") does not go with --join: a recording is of one runner's run")
    }
    for (flag, value) in [("--record", record), ("--replay", replay)] where value?.isEmpty == true {
      throw UsageError("\(flag) takes the recording's folder: dray run JOB.yaml \(flag) DIR")
    }
    // A replay signs in with the recording's fake token: the job's secrets need not be set
    // (as `validate --no-credentials`).
    guard var manifest = ManifestInput.load(args.positional[0], secretsMayBeMissing: replay != nil) else { return ExitCode.usage }
    if replay != nil {
      // No HTTP traffic at all: the exports are off.
      manifest.report.openLineage = nil
      manifest.report.otlp = nil
    }
    if join && manifest.database?.postgres == nil {
      throw UsageError(
        "--join needs a job whose database is PostgreSQL (database.url): runners share a run through it, and "
          + (manifest.database?.path.map { "this job's database is the SQLite file \($0), which serves one machine" }
            ?? "this job has no database")
          + "; run it without --join")
    }
    let options = try args.runFlags(steps: manifest.steps.map(\.id))
    let level: Console.Level = quiet ? .quiet : verbose ? .verbose : .normal
    let console = Console(level: level, format: format, redactor: SharedRedactor(manifest.redactor))
    installSignalHandlers()
    let recorder: TrafficRecorder?
    do {
      recorder = try record.map { try TrafficRecorder(directory: $0, job: manifest.job, redactor: console.redactor) }
      if let recorder { Traffic.mode = .recording(recorder) }
      if let replay { Traffic.mode = .replaying(try TrafficReplayer(directory: replay)) }
    } catch {
      console.error(console.redact("\(error)"))
      return ExitCode.usage
    }
    let runner = Runner(
      manifest: manifest, database: Databases.open(manifest), options: options, console: console, cancellation: runCancellation)
    runner.whenLocked = whenLocked
    runner.join = join
    runner.runKey = runKey
    let report = runner.run()
    // A start refused by the job's lock sent nothing: an earlier recording in DIR stays.
    if let recorder, report.lockedOut || report.exitCode == ExitCode.locked {
      recorder.discard()
    } else if let recorder {
      do {
        try recorder.finish()
      } catch {
        console.error(console.redact("\(error)"))
        return report.exitCode == ExitCode.success ? ExitCode.stepFailed : report.exitCode
      }
    }
    // The lock-refused run touched nothing and said why; --quiet keeps a good run silent.
    if report.exitCode != ExitCode.locked && !report.lockedOut && (level > .quiet || report.exitCode != ExitCode.success) {
      // Masked before the summary escapes what servers said (`PrintableText`), so that the
      // secrets are found as they were sent.
      console.print(
        Summary.text(
          report.redacted(by: console.redactor.current),
          files: ReportFiles.paths(manifest, runID: report.runID).filter { !report.unwrittenReports.contains($0.path) }.map {
            ($0.format.rawValue, ReportFiles.display($0.path))
          },
          color: console.useColorOnOutput))
    }
    return report.exitCode
  }

  /// SIGINT, SIGTERM and SIGHUP (the terminal or ssh session the run was started from went
  /// away) ask the run to stop at its next safe point; a second one exits at once with 130.
  /// A SIGHUP ignored when dray starts (`nohup dray run ...`) stays ignored.
  static func installSignalHandlers() {
    // A parent (a test runner, a supervisor) may have left these blocked.
    var mask = sigset_t()
    sigemptyset(&mask)
    for sig in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&mask, sig) }
    pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    var hangup = sigaction()
    sigaction(SIGHUP, nil, &hangup)
    func address(_ handler: __sighandler_t?) -> Int { handler.map { unsafeBitCast($0, to: Int.self) } ?? 0 }
    let hangupIgnored = address(hangup.__sigaction_handler.sa_handler) == address(SIG_IGN)
    for sig in [SIGINT, SIGTERM, SIGHUP] where !(sig == SIGHUP && hangupIgnored) {
      signal(sig) { received in
        if runCancellation.isCancelled { _exit(130) }
        runCancellation.cancel(signal: received)
      }
    }
  }
}

/// The short human summary printed after a run: one screen at most.
///
/// ```
/// job iso-reference: succeeded in 0.28s (run 20261130T120311Z-78795a)
///   schemes       schemes       succeeded  4 tables
///   countries     table_stream  succeeded  249 rows; 16.7 KiB
///   drop-unnamed  sql           succeeded  0 rows changed
/// total: 249 rows; 16.7 KiB
/// report: jobs/reports/iso-reference-20261130T120311Z-78795a.json
/// ```
///
/// Members of a `parallel` group are indented under it. "N attempts" appears only when a
/// step's own call was retried; retries of the sign-in or a scheme fetch are named apart
/// ("sign-in retried once").
/// Beyond 25 lines, the partitions that succeeded or were skipped are not listed (their
/// count is); if the steps are still more than 25, only those that did not succeed are. The report's path is the last
/// line.
enum Summary {
  /// Steps listed in full up to this many.
  static let maxSteps = 25

  static func text(_ report: RunReport, files: [(format: String, path: String)], color: Bool = false) -> String {
    let seconds = HumanUnits.duration(report.endedAt.timeIntervalSince(report.startedAt))
    var lines = ["job \(report.job): \(paint(report.status.rawValue, report.status, color)) in \(seconds) (run \(report.runID))"]
    var rows: [(id: String, step: StepReport, partition: Bool)] = []
    for step in report.steps {
      rows.append((step.id, step, false))
      for member in step.members { rows.append(("  " + member.id, member, step.partitioned)) }
    }
    func quiet(_ step: StepReport) -> Bool { step.status == .succeeded || step.status == .skipped }
    // Partitions that succeeded or were skipped go first, so that the job's own steps stay
    // listed while they fit.
    var hiddenPartitions: [RunStatus: Int] = [:]
    if rows.count > maxSteps {
      for row in rows where row.partition && quiet(row.step) { hiddenPartitions[row.step.status, default: 0] += 1 }
      rows = rows.filter { !($0.partition && quiet($0.step)) }
    }
    var hidden: [RunStatus: Int] = [:]
    if rows.count > maxSteps {
      for row in rows where quiet(row.step) { hidden[row.step.status, default: 0] += 1 }
      rows = rows.filter { !quiet($0.step) }
    }
    let idWidth = max(4, rows.map(\.id.count).max() ?? 0)
    let kindWidth = max(4, rows.map(\.step.kind.count).max() ?? 0)
    let statusWidth = max(11, (rows.map(\.step.status.rawValue.count).max() ?? 0) + 2)
    for (id, step, _) in rows {
      let status = step.status.rawValue.padding(toLength: statusWidth, withPad: " ", startingAt: 0)
      let line =
        "  " + id.padding(toLength: idWidth, withPad: " ", startingAt: 0) + "  "
        + step.kind.padding(toLength: kindWidth, withPad: " ", startingAt: 0) + "  " + paint(status, step.status, color)
        + details(step).joined(separator: "; ")
      lines.append(line.trimmingSuffix())
    }
    if !hidden.isEmpty {
      let parts = [(RunStatus.succeeded, "succeeded"), (.skipped, "skipped")].compactMap { status, word in
        hidden[status].map { "\($0) \(word)" }
      }
      lines.append("  (\(parts.joined(separator: " and ")) not listed; the report lists every step)")
    }
    if !hiddenPartitions.isEmpty {
      let parts = [(RunStatus.succeeded, "succeeded"), (.skipped, "skipped")].compactMap { status, word in
        hiddenPartitions[status].map { "\($0) \(word)" }
      }
      lines.append("  (partitions: \(parts.joined(separator: " and ")) not listed; the report lists every partition)")
    }
    let totals = report.totals
    var total: [String] = []
    if totals.rows > 0 { total.append(HumanUnits.counted(totals.rows, "row")) }
    if totals.bytes > 0 { total.append(HumanUnits.bytes(totals.bytes)) }
    if totals.retries > 0 { total.append("\(totals.retries) \(totals.retries == 1 ? "retry" : "retries")") }
    if !total.isEmpty { lines.append("total: " + total.joined(separator: "; ")) }
    if let failure = report.failure {
      // Which class, and why: what a scheduler acts on (README, "Exit codes").
      lines.append(
        "failure: \(failure.failureClass.rawValue) (exit \(report.exitCode)): \(PrintableText.oneLine(failure.reason)); \(failure.failureClass.advice)"
      )
    }
    if let error = report.errorMessage { lines.append("error: \(PrintableText.oneLine(error))") }
    // Only the files written: one that could not be is not named.
    for file in files where file.format != "json" { lines.append("\(file.format): \(file.path)") }
    if let json = files.first(where: { $0.format == "json" }) { lines.append("report: \(json.path)") }
    return lines.joined(separator: "\n")
  }

  /// `249 rows`, `4 tables`, `16.7 KiB`, `3 attempts`, the skip reason, the error.
  static func details(_ step: StepReport) -> [String] {
    var detail: [String] = []
    if !step.rows.isEmpty { detail.append(HumanUnits.counted(step.totalRows, "row")) }
    if !step.tables.isEmpty && step.rows.isEmpty { detail.append(HumanUnits.counted(step.tables.count, "table")) }
    if !step.statements.isEmpty { detail.append(HumanUnits.counted(step.statements.reduce(0) { $0 + $1.changes }, "row") + " changed") }
    if step.bytes > 0 { detail.append(HumanUnits.bytes(step.bytes)) }
    let own = step.ownAttempts
    if own.attempts > own.calls {
      detail.append("\(own.attempts) attempts" + (own.calls > 1 ? " over \(own.calls) calls" : ""))
    }
    let others = Dictionary(grouping: step.attempts.filter { $0.call != nil }, by: { $0.call ?? "" })
    for (call, attempts) in others.sorted(by: { $0.key < $1.key }) {
      let retried = attempts.filter { $0.wait != nil }.count
      if retried > 0 { detail.append("\(call) retried " + (retried == 1 ? "once" : "\(retried) times")) }
    }
    // What a server said may be in these: one line each, no control character, so that the
    // summary's lines are its own and its colour codes the only ones.
    if let reason = step.skipReason { detail.append(PrintableText.oneLine(reason)) }
    if let message = step.errorMessage { detail.append(PrintableText.oneLine(message)) }
    return detail
  }

  /// `text` in the status's colour (ECMA-48 SGR): green, red, yellow, or dim.
  static func paint(_ text: String, _ status: RunStatus, _ color: Bool) -> String {
    guard color else { return text }
    let code =
      switch status {
      case .succeeded: "32"
      case .failed: "31"
      case .interrupted: "33"
      case .skipped, .notRun: "2"
      }
    let trimmed = text.trimmingSuffix()
    return "\u{1B}[\(code)m\(trimmed)\u{1B}[0m" + String(repeating: " ", count: text.count - trimmed.count)
  }
}

extension String {
  /// The string without trailing spaces.
  func trimmingSuffix() -> String {
    var out = self
    while out.last == " " { out.removeLast() }
    return out
  }
}
