internal import DrayModel

/// The run: its outcome, a timeline of its steps and a table of what each step did.
struct RunSection {
  var run: RunView

  func write(to page: inout HTMLWriter) {
    page.raw("<header>\n")
    page.raw("<h1>job ")
    page.text(run.job)
    page.raw(": <span class=\"status \(StatusClass.of(run.status))\">")
    page.text(run.status)
    page.raw("</span> in ")
    page.text(Figures.seconds(run.duration))
    page.raw("</h1>\n<dl class=\"facts\">")
    var facts: [(String, String)] = [("run", run.runID)]
    if let resumes = run.resumes { facts.append(("resumes", resumes)) }
    facts += [
      ("started", run.startedAt), ("ended", run.endedAt), ("exit code", String(run.exitCode)), ("host", run.host),
      ("manifest", run.manifestPath), ("dray", run.drayVersion),
    ]
    facts += run.totals.map { ($0.key, Figures.count($0.value)) }
    for (name, value) in facts {
      page.element("dt", name)
      page.element("dd", value)
    }
    page.raw("</dl>\n")
    if let error = run.error {
      page.raw("<pre class=\"error\">")
      page.text(error, keepingNewlines: true)
      page.raw("</pre>\n")
    }
    page.raw("</header>\n<section>\n<h2>Timeline</h2>\n")
    Timeline(run: run).write(to: &page)
    page.raw("</section>\n<section>\n<h2>Steps</h2>\n")
    writeSteps(to: &page)
    page.raw("</section>\n")
  }

  private func writeSteps(to page: inout HTMLWriter) {
    page.raw(
      "<table class=\"steps\">\n<thead><tr><th>step</th><th>kind</th><th>status</th><th>duration</th><th>attempts</th>"
        + "<th>rows</th><th>bytes</th><th>tables</th><th>HTTP statuses</th></tr></thead>\n<tbody>\n")
    for step in run.steps {
      writeStep(step, member: false, to: &page)
      for member in step.members { writeStep(member, member: true, to: &page) }
    }
    page.raw("</tbody>\n</table>\n")
  }

  private func writeStep(_ step: StepView, member: Bool, to page: inout HTMLWriter) {
    page.raw(member ? "<tr class=\"member\">" : "<tr>")
    page.raw("<th scope=\"row\">")
    page.text(step.id)
    page.raw("</th>")
    page.element("td", step.kind)
    page.element("td", step.status, class: "status \(StatusClass.of(step.status))")
    page.element("td", Figures.seconds(step.duration), class: "number")
    page.element("td", String(step.attempts.count), class: "number")
    page.raw("<td class=\"number rows\">")
    if step.rows.isEmpty { page.text("–") }
    for (index, pair) in step.rows.enumerated() {
      if index > 0 { page.raw("<br/>") }
      page.tableName(pair.key)
      page.text(": \(Figures.count(pair.value))")
    }
    page.raw("</td>")
    // Compressed answers: the bytes decoded, and below them what crossed the network.
    page.raw("<td class=\"number\">")
    page.text(Figures.count(step.bytes))
    if step.wireBytes != step.bytes {
      page.raw("<br/>")
      page.text("\(Figures.count(step.wireBytes)) on the wire")
    }
    page.raw("</td>")
    page.raw("<td class=\"tables\">")
    for (index, table) in step.tables.enumerated() {
      if index > 0 { page.text(", ") }
      page.tableName(table)
    }
    page.raw("</td>")
    page.element("td", step.httpStatuses.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
    page.raw("</tr>\n")
    let details = detailLines(step)
    // Attempts are listed when something happened to them: a failure, a retry, a resume.
    let showAttempts = step.attempts.contains { $0.outcome != "ok" || $0.wait != nil || $0.resumedFrom != nil }
    guard !details.isEmpty || showAttempts else { return }
    page.raw(member ? "<tr class=\"member detail\">" : "<tr class=\"detail\">")
    page.raw("<td colspan=\"9\">")
    for (label, text, className) in details {
      page.raw("<div class=\"\(className)\"><span class=\"label\">")
      page.text(label)
      page.raw("</span> ")
      page.text(text, keepingNewlines: true)
      page.raw("</div>")
    }
    if showAttempts { writeAttempts(step.attempts, to: &page) }
    page.raw("</td></tr>\n")
  }

  /// The step's error, skip reason, notes, statements and files, each a labelled line.
  private func detailLines(_ step: StepView) -> [(String, String, String)] {
    var lines: [(String, String, String)] = []
    if step.errorCode != nil || step.errorMessage != nil {
      lines.append(("error \(step.errorCode ?? "")", step.errorMessage ?? "", "error"))
    }
    if let reason = step.skipReason { lines.append((step.status == "skipped" ? "skipped" : "not run", reason, "note")) }
    lines += step.notes.map { ("note", $0, "note") }
    lines += step.statements.map { ("SQL (\(Figures.count($0.changes)) changed)", $0.sql, "sql") }
    lines += step.outputs.map { ("wrote", $0, "note") }
    return lines
  }

  private func writeAttempts(_ attempts: [AttemptView], to page: inout HTMLWriter) {
    page.raw(
      "<table class=\"attempts\"><thead><tr><th>call</th><th>attempt</th><th>outcome</th><th>HTTP</th><th>start</th>"
        + "<th>duration</th><th>then waited</th><th>message</th></tr></thead><tbody>")
    for attempt in attempts {
      page.raw("<tr>")
      page.element("td", attempt.call ?? "step")
      page.element("td", String(attempt.number), class: "number")
      page.element("td", attempt.outcome, class: "status " + StatusClass.ofOutcome(attempt.outcome))
      page.element("td", attempt.httpStatus.map(String.init) ?? "", class: "number")
      page.element("td", "+" + Figures.seconds(attempt.startOffset), class: "number")
      page.element("td", Figures.seconds(attempt.duration), class: "number")
      page.element(
        "td", attempt.wait.map { Figures.seconds($0) + (attempt.waitFromRetryAfter ? " (Retry-After)" : "") } ?? "", class: "number")
      var message = attempt.message ?? ""
      if let offset = attempt.resumedFrom {
        message = "resumed from byte \(Figures.count(offset))" + (message.isEmpty ? "" : "; " + message)
      }
      page.element("td", message)
      page.raw("</tr>")
    }
    page.raw("</tbody></table>")
  }
}

/// The CSS class of a status word: the colour of a run or step in tables and charts.
enum StatusClass {
  static func of(_ status: String) -> String {
    switch status {
    case "succeeded", "ok": "ok"
    case "failed": "failed"
    case "interrupted", "abandoned": "interrupted"
    case "skipped", "not_run": "skipped"
    default: "other"
    }
  }

  /// The class of an attempt's outcome: `ok`, `interrupted` for an attempt a signal
  /// cancelled, `failed` for every error code.
  static func ofOutcome(_ outcome: String) -> String {
    switch outcome {
    case "ok": "ok"
    case "cancelled", "interrupted": "interrupted"
    default: "failed"
    }
  }
}
