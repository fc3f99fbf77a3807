internal import DrayJSON
internal import DrayModel
internal import DrayPlatform
internal import DrayTransport
internal import Foundation

extension StepRunner {
  /// `request`: the uniform request (platform-api.md §4): posts the parameters to
  /// `rpc/<resource>/` and saves the answer as is to `output`, or only counts its bytes
  /// when there is no `output`; an answer that is not one JSON document is refused and not
  /// saved (`JSONAnswerRule`). With `transaction` (the default) one `X-Transaction-ID` is
  /// kept across every retry, so a resource that changes data runs once; without it, a
  /// resource that may change data (`mayChangeData`) is sent at most once (`sent`
  /// checkpoint), and its answer is never resumed (a resume would send it again).
  func runRequest(_ options: RequestStep, _ report: inout StepReport) throws {
    let folder = try jobFolder()
    let destination = try options.output.map { try folder.output($0, role: "output") }
    let client = try platformClient()
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }
    let record: (Attempt) -> Void = {
      attempts.append($0); logAttempt($0)
    }

    let scheme = options.transaction || options.writes != nil ? nil : try fetchScheme(client, options.resource, record: record)
    let writesOnce = !options.transaction && mayChangeData(writes: options.writes, scheme: scheme)
    let download = Download(path: downloadPath(), style: .platform, resume: manifest.download.resume && !writesOnce)
    let url = client.session.url("rpc/\(options.resource)/")
    let transactionID = options.transaction ? (download.existingSidecar(for: url)?.transactionID ?? UUID().uuidString.lowercased()) : nil
    let head = try client.rpc(
      resource: options.resource, params: options.params, delta: nil, transactionID: transactionID,
      reads: !mayChangeData(writes: options.writes, scheme: scheme), download: download, policy: step.retry, record: record,
      beforeSending: { if writesOnce { try recordCheckpoint(report, status: .sent) } })
    report.count(download)
    if let problem = JSONEvents.documentProblem(path: download.path) {
      download.removeFinished()
      throw JSONAnswerRule.refusal(resource: options.resource, expected: "a JSON document", reason: problem, sentAs: head.unexpectedKind)
    }
    if let note = JSONAnswerRule.note(sentAs: head.unexpectedKind) { report.notes.append(note) }
    if download.bytesResumed > 0 { report.notes.append("resumed a partial download at byte \(download.bytesResumed)") }
    report.notes += download.notes
    if let transactionID { report.notes.append("transaction \(transactionID)") }
    if let version = head.contentVersion { report.notes.append("content version \(version)") }
    if let destination, let output = options.output {
      try folder.place(download.path, at: destination)
      report.outputs = [try folder.check(output, role: "output")]
    } else {
      try? FileManager.default.removeItem(atPath: download.path)
    }
    try recordCheckpoint(report, status: .succeeded)
  }
}
