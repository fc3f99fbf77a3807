internal import DrayModel
internal import Foundation

/// A run as a Prometheus textfile, for node_exporter's textfile collector.
///
/// Written in the text exposition format (Prometheus docs, "Exposition formats", text format
/// 0.0.4): a `# HELP` and a `# TYPE` line per metric, then its samples. Every metric is a
/// gauge labelled with `dray_job`, the manifest's job name (`job` is Prometheus's own); all describe the job's latest run:
///
/// | metric | value |
/// |---|---|
/// | `dray_job_last_success_timestamp_seconds` | Unix time (s) the job last succeeded; kept from the previous file when this run did not succeed, absent until a first success |
/// | `dray_job_last_run_timestamp_seconds` | Unix time (s) the latest run ended |
/// | `dray_job_duration_seconds` | how long the latest run took (s) |
/// | `dray_job_status{status}` | 1 for the latest run's status (`succeeded`, `failed`, `interrupted`), 0 for the others |
/// | `dray_job_exit_code` | the latest run's exit code |
/// | `dray_job_rows` | rows written by the latest run, summed over its steps |
/// | `dray_job_bytes` | body bytes received and sent by the latest run |
/// | `dray_job_retries` | attempts that were retries in the latest run |
/// | `dray_job_steps{status}` | the latest run's steps with each status (`not_run` included) |
/// | `dray_job_records_quarantined{action}` | records the latest run's `http` loads set aside (`set_aside`) or trimmed (`trimmed`) by their contract, summed over steps, members and partitions (docs/http.md, "Contract") |
///
/// The collector reads `*.prom` files whole at each scrape, so the file is written to a
/// temporary name and renamed over the old one (`AtomicFile`).
struct PrometheusReport {
  let report: RunReport
  /// Unix time of the job's last success before this run, when known.
  let previousSuccess: Double?

  var text: String {
    let job = "dray_job=\"\(PrometheusReport.escape(report.job))\""
    var out = ""
    func metric(_ name: String, _ help: String, _ samples: [(labels: String, value: String)]) {
      out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
      for sample in samples { out += "\(name){\(sample.labels)} \(sample.value)\n" }
    }
    let lastSuccess = report.status == .succeeded ? report.endedAt.timeIntervalSince1970 : previousSuccess
    if let lastSuccess {
      metric(
        "dray_job_last_success_timestamp_seconds", "Unix time when the job last succeeded.",
        [(job, PrometheusReport.number(lastSuccess))])
    }
    metric(
      "dray_job_last_run_timestamp_seconds", "Unix time when the job's latest run ended.",
      [(job, PrometheusReport.number(report.endedAt.timeIntervalSince1970))])
    metric(
      "dray_job_duration_seconds", "Duration of the job's latest run.",
      [(job, PrometheusReport.number(report.endedAt.timeIntervalSince(report.startedAt)))])
    metric(
      "dray_job_status", "1 for the status of the job's latest run, 0 for the other statuses.",
      [RunStatus.succeeded, .failed, .interrupted].map { ("\(job),status=\"\($0.rawValue)\"", report.status == $0 ? "1" : "0") })
    metric("dray_job_exit_code", "Exit code of the job's latest run.", [(job, String(report.exitCode))])
    let totals = report.totals
    metric("dray_job_rows", "Rows written by the job's latest run, summed over its steps.", [(job, String(totals.rows))])
    metric("dray_job_bytes", "Body bytes received and sent by the job's latest run.", [(job, String(totals.bytes))])
    metric("dray_job_retries", "Attempts that were retries in the job's latest run.", [(job, String(totals.retries))])
    metric(
      "dray_job_steps", "Steps of the job's latest run with each status.",
      RunStatus.allCases.map { status in
        ("\(job),status=\"\(status.rawValue)\"", String(report.steps.filter { $0.status == status }.count))
      })
    func contracts(_ steps: [StepReport]) -> [ContractReport] { steps.flatMap { ($0.contract.map { [$0] } ?? []) + contracts($0.members) } }
    let quarantined = contracts(report.steps)
    metric(
      "dray_job_records_quarantined", "Records the job's latest run set aside or trimmed by a load's contract.",
      [
        ("\(job),action=\"set_aside\"", String(quarantined.reduce(0) { $0 + $1.setAside })),
        ("\(job),action=\"trimmed\"", String(quarantined.reduce(0) { $0 + $1.trimmed })),
      ])
    return out
  }

  /// The `dray_job_last_success_timestamp_seconds` value of an earlier textfile, if any.
  static func lastSuccess(inFile path: String) -> Double? {
    // A FIFO would block the read forever, a device could be endless: only a regular file.
    guard FileKind.refusal(at: path, followingLinks: true) == nil, let text = try? String(contentsOfFile: path, encoding: .utf8)
    else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("dray_job_last_success_timestamp_seconds{") {
      if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
    }
    return nil
  }

  /// A sample value: milliseconds kept, no exponent.
  static func number(_ value: Double) -> String {
    String(format: "%.3f", value)
  }

  /// A label value with `\`, `"` and line feeds escaped, as the text format requires.
  static func escape(_ value: String) -> String {
    value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
  }
}
