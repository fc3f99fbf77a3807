internal import DrayModel
internal import Foundation

/// A run report as JUnit XML, for CI dashboards (GitLab, Jenkins, GitHub test reporters).
///
/// The shape follows the Ant JUnit schema as CI tools read it (`junit-4.xsd`, the de-facto
/// reference; there is no formal standard): one `<testsuites>` holding one `<testsuite>` per
/// run, named after the job, and one `<testcase>` per step (`classname` the job, `name` the
/// step id; a member of a `parallel` group is `group/member`).
///
/// - a failed step has a `<failure>` whose `type` is the error code and whose text is the
///   message, its attempts and notes;
/// - an interrupted step has an `<error type="interrupted">`;
/// - a skipped step, and a step the run never reached, has a `<skipped>` with the reason;
/// - a run that failed before its first step (the journal, the database) has one more
///   test case, `run`, with the failure.
///
/// `time` is seconds with millisecond precision; `timestamp` is the run's start in UTC as
/// the schema's ISO 8601 pattern wants it (`2026-11-30T12:03:11`, no zone designator).
/// `report` is the one `ReportFiles` writes, its secrets already masked
/// (`RunReport.redacted(by:)`); this type only escapes.
struct JUnitReport {
  let report: RunReport

  /// The document, UTF-8, ending with a newline.
  var xml: String {
    var cases: [String] = []
    var counts = (tests: 0, failures: 0, errors: 0, skipped: 0)
    func add(_ step: StepReport, name: String) {
      counts.tests += 1
      var body = ""
      switch step.status {
      case .failed:
        counts.failures += 1
        body =
          "      <failure type=\"\(attribute(step.errorCode ?? "error"))\" message=\"\(attribute(step.errorMessage ?? ""))\">"
          + text(details(step)) + "</failure>\n"
      case .interrupted:
        counts.errors += 1
        body = "      <error type=\"interrupted\" message=\"\(attribute(step.errorMessage ?? "interrupted"))\"/>\n"
      case .skipped, .notRun:
        counts.skipped += 1
        body = "      <skipped message=\"\(attribute(step.skipReason ?? step.status.rawValue))\"/>\n"
      case .succeeded:
        let detail = details(step)
        if !detail.isEmpty { body = "      <system-out>" + text(detail) + "</system-out>\n" }
      }
      let head =
        "    <testcase classname=\"\(attribute(report.job))\" name=\"\(attribute(name))\" time=\"\(RunReport.seconds(step.duration))\""
      cases.append(body.isEmpty ? head + "/>\n" : head + ">\n" + body + "    </testcase>\n")
    }
    for step in report.steps {
      add(step, name: step.id)
      for member in step.members { add(member, name: step.id + "/" + member.id) }
    }
    if let message = report.errorMessage {
      var run = StepReport(id: "run", kind: "run", status: report.exitCode == ExitCode.interrupted ? .interrupted : .failed)
      run.errorCode = report.exitCode == ExitCode.locked ? "locked" : "run_failed"
      run.errorMessage = message
      add(run, name: "run")
    }
    let time = RunReport.seconds(report.endedAt.timeIntervalSince(report.startedAt))
    let counters =
      "tests=\"\(counts.tests)\" failures=\"\(counts.failures)\" errors=\"\(counts.errors)\" skipped=\"\(counts.skipped)\" time=\"\(time)\""
    var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    out += "<testsuites name=\"dray\" \(counters)>\n"
    out +=
      "  <testsuite name=\"\(attribute(report.job))\" id=\"0\" package=\"dray\" hostname=\"\(attribute(report.host))\" \(counters) timestamp=\"\(JUnitReport.timestamp(report.startedAt))\">\n"
    out += "    <properties>\n"
    let properties = [
      ("run_id", report.runID), ("status", report.status.rawValue), ("exit_code", String(report.exitCode)),
      ("manifest", report.manifestPath), ("manifest_fingerprint", report.manifestFingerprint), ("dray_version", DrayVersion.current),
    ]
    for (name, value) in properties {
      out += "      <property name=\"\(name)\" value=\"\(attribute(value))\"/>\n"
    }
    out += "    </properties>\n"
    out += cases.joined()
    out += "  </testsuite>\n</testsuites>\n"
    return out
  }

  /// The step's kind, numbers, attempts that did not succeed, and notes, one per line.
  private func details(_ step: StepReport) -> String {
    var lines: [String] = []
    var numbers = [step.kind]
    if !step.rows.isEmpty { numbers.append(HumanUnits.counted(step.totalRows, "row")) }
    if step.bytes > 0 { numbers.append(HumanUnits.counted(Int(step.bytes), "byte")) }
    if step.retries > 0 { numbers.append("\(step.retries) \(step.retries == 1 ? "retry" : "retries")") }
    if numbers.count > 1 || step.status != .succeeded { lines.append(numbers.joined(separator: ", ")) }
    for attempt in step.attempts where attempt.outcome != .ok {
      var line = "attempt \(attempt.number)" + (attempt.call.map { " (\($0))" } ?? "") + ": \(attempt.outcome.code)"
      if let message = attempt.message { line += ": \(message)" }
      if let wait = attempt.wait { line += "; waited \(RunReport.seconds(wait))s" }
      lines.append(line)
    }
    lines += step.notes
    lines += step.outputs.map { "wrote \($0)" }
    return lines.joined(separator: "\n")
  }

  private func attribute(_ value: String) -> String {
    JUnitReport.escape(value, attribute: true)
  }

  private func text(_ value: String) -> String {
    JUnitReport.escape(value, attribute: false)
  }

  /// XML 1.0 escaping (§2.4, §3.3.3): `&`, `<`, `>` always; `"` and newlines in attribute
  /// values; characters XML 1.0 cannot hold at all (other C0 controls) as `?`.
  static func escape(_ value: String, attribute: Bool) -> String {
    var out = ""
    for scalar in value.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"" where attribute: out += "&quot;"
      case "\n" where attribute: out += "&#10;"
      case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
      case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: out += "?"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// `2026-11-30T12:03:11`: UTC, whole seconds, no zone (the schema's `ISO8601_DATETIME_PATTERN`).
  static func timestamp(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
    return formatter.string(from: date)
  }
}
