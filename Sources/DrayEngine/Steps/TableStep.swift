internal import DrayJSON
internal import DrayModel
internal import DrayPlatform
internal import DrayTransport
internal import Foundation

extension StepRunner {
  /// `table`: posts the parameters to `rpc/<resource>/`, streams the answer to a resumable
  /// download and writes it to `output` without touching the database (the SDK's `table`).
  ///
  /// Formats: `json` keeps the answer byte for byte as the server sent it (after checking it
  /// is a list of tables); `ndjson` and `csv` write one line per row of the answer's only
  /// table, with the column names of the resource's scheme (led by `hhive_id` for a cached
  /// resource, whose rows carry that row id first). See `RowWriter`.
  func runTable(_ options: TableStep, _ report: inout StepReport) throws {
    let folder = try jobFolder()
    let destination = try folder.output(options.output, role: "output")
    let client = try platformClient()
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }
    let record: (Attempt) -> Void = {
      attempts.append($0); logAttempt($0)
    }

    var columns: [String] = []
    // A call without a transaction id needs to know whether it writes (`mayChangeData`).
    var schemes: [ResourceScheme] = []
    if options.format != .json || !options.transaction && options.writes == nil {
      schemes = try client.schemes(policy: step.retry, record: recording("schema", record))
    }
    let scheme = schemes.first { $0.name == options.resource }
    if options.format != .json {
      guard let scheme else {
        throw StepError.resourceNotFound(resource: options.resource, available: schemes.map(\.name))
      }
      guard scheme.outputs.count == 1, let table = scheme.outputs.first else {
        throw StepError.notOneTable(
          "resource '\(options.resource)' has \(scheme.outputs.count) output tables (\(scheme.outputs.map(\.name).joined(separator: ", "))); a \(options.format.rawValue) file holds one table: use format: json"
        )
      }
      columns = (scheme.lifetime == nil ? [] : ["hhive_id"]) + table.columns.map(\.name)
    }

    // A write without a transaction id is sent at most once, and never resumed: a resume
    // would send it again.
    let writesOnce = !options.transaction && mayChangeData(writes: options.writes, scheme: scheme)
    var download = Download(path: downloadPath(), style: .platform, resume: manifest.download.resume && !writesOnce)
    let url = client.session.url("rpc/\(options.resource)/")
    let transactionID = options.transaction ? (download.existingSidecar(for: url)?.transactionID ?? UUID().uuidString.lowercased()) : nil
    var kind: String?
    func fetch() throws {
      kind = try client.rpc(
        resource: options.resource, params: options.params, delta: nil, transactionID: transactionID,
        reads: !mayChangeData(writes: options.writes, scheme: scheme), download: download, policy: step.retry, record: record,
        beforeSending: { if writesOnce { try recordCheckpoint(report, status: .sent) } }
      ).unexpectedKind
      report.count(download)
      if download.bytesResumed > 0 { report.notes.append("resumed a partial download at byte \(download.bytesResumed)") }
      report.notes += download.notes
    }
    try fetch()
    // Used or not, the answer is never kept to be reused.
    defer { download.removeFinished() }

    func write() throws -> [String: Int] {
      var rows: [String: Int] = [:]
      var current = ""
      if options.format == .json {
        try AnswerReader(path: download.path).read(
          table: { current = $0 },
          row: { _ in rows["\(options.resource).\(current)", default: 0] += 1 })
        try folder.place(download.path, at: destination)
      } else {
        var writer = try RowWriter(format: options.format, columns: columns, file: OutputFile(path: destination))
        try AnswerReader(path: download.path).read(
          table: { name in
            guard current.isEmpty else {
              throw StepError.notOneTable(
                "resource '\(options.resource)' answered a second table '\(name)'; a \(options.format.rawValue) file holds one table: use format: json"
              )
            }
            current = name
          },
          row: { values in
            guard values.count == columns.count else {
              throw StepError.notOneTable(
                "row \(writer.count + 1) of \(options.resource) '\(current)' has \(values.count) values; its scheme has \(columns.count) columns (\(columns.joined(separator: ", ")))"
              )
            }
            try writer.write(values)
          })
        rows["\(options.resource).\(current.isEmpty ? "output_table" : current)"] = writer.count
        try writer.finish()
      }
      return rows
    }
    func unreadable(_ error: AnswerReadError) -> StepError {
      JSONAnswerRule.refusal(resource: options.resource, expected: "a table answer", reason: error.message, sentAs: kind)
    }

    let rows: [String: Int]
    do {
      rows = try write()
    } catch let error as AnswerReadError {
      // An answer an earlier run or attempt left (only its size was confirmed) may have
      // been damaged on disk: fetched once more from byte 0. A fresh one is the server's.
      guard download.bytesResumed > 0, !context.cancellation.isCancelled else { throw unreadable(error) }
      download.removeFinished()
      report.notes.append(
        "the answer an earlier run downloaded (\(download.bytesResumed) bytes) could not be read (\(error)); it was discarded and downloaded again"
      )
      download = Download(path: downloadPath(), style: .platform, resume: false)
      try fetch()
      do {
        rows = try write()
      } catch let again as AnswerReadError {
        throw unreadable(again)
      }
    }
    if let note = JSONAnswerRule.note(sentAs: kind) { report.notes.append(note) }
    report.rows = rows
    report.outputs = [try folder.check(options.output, role: "output")]
    try recordCheckpoint(report, status: .succeeded)
  }
}
