internal import DrayDatabases
internal import DrayEngine
internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// `dray plan --json`: the resolved job as one JSON object, every string already masked.
extension JobPlan {
  var json: JSONValue {
    var pairs: [(key: String, value: JSONValue)] = [
      ("job", .string(manifest.job)),
      ("description", manifest.description.map { .string($0) } ?? .null),
      ("manifest", .string(manifest.path)),
      ("version", .integer(Int64(manifest.version))),
    ]
    if let p = manifest.platform {
      pairs.append(
        (
          "platform",
          .object([
            ("host", .string(p.host)), ("api_version", .string(p.apiVersion)), ("environment", .string(p.environment)),
            ("project", .string(p.project)), ("application", p.application.map { .string($0) } ?? .null),
            ("device", .string(p.device)),
            ("tls", .object([("verify", .bool(p.tls.verify)), ("ca_file", p.tls.caFile.map { .string(manifest.resolve($0)) } ?? .null)])),
            ("headers", .object(p.headers.map { (key: $0.name, value: .string(Self.headerValue($0))) })),
          ])
        ))
    }
    if let auth = manifest.auth {
      pairs.append(("auth", .object([("username", .string(auth.username)), ("password", .string(Redactor.mask))])))
    }
    pairs += [
      ("database", manifest.database?.path.map { .string(manifest.resolve($0)) } ?? .null),
      ("download", .object([("path", .string(manifest.resolve(manifest.download.path))), ("resume", .bool(manifest.download.resume))])),
      ("journal", .string(database.journalLocation)),
      (
        "report",
        .object(
          [
            ("path", .string(reportPath)),
            ("formats", .array(manifest.report.formats.map { .string($0.rawValue) })),
          ] + exportsJSON)
      ),
      ("resumes", resume.resumes.map { .string($0.id) } ?? .null),
      ("steps", .array(manifest.steps.map { stepJSON($0, group: nil) })),
    ]
    return .object(pairs)
  }

  private func stepJSON(_ step: Step, group: Step?) -> JSONValue {
    var options = step.kind.options
    if case .object(var pairs) = options {
      pairs.removeAll { $0.key == "steps" }
      if let index = pairs.firstIndex(where: { $0.key == "sql" }), case .string(let sql) = pairs[index].value {
        pairs[index].value = .string(renderedSQL(sql))
      }
      options = .object(pairs)
    }
    let reason = skipReason(step, group: group)
    var pairs: [(key: String, value: JSONValue)] = [
      ("id", .string(step.id)),
      ("kind", .string(step.kindName)),
      ("description", step.description.map { .string($0) } ?? .null),
      ("line", .integer(Int64(step.location.line))),
      ("action", .string(reason != nil ? "skip" : resume.unresolvedWrites[step.id] != nil ? "fail" : "run")),
      ("skip_reason", reason.map { .string($0) } ?? .null),
      ("fail_reason", resume.unresolvedWrites[step.id].map { .string($0) } ?? .null),
      ("run_reason", resume.runReasons[step.id].map { .string($0) } ?? .null),
      ("options", options),
      ("tables", .array(tables(step).map { .string($0) })),
    ]
    if let partitions = step.partitions { pairs.append(("partitions", partitionsJSON(partitions))) }
    if let cursor = cursor(step) {
      pairs.append(
        ("cursor", .object([("param", .string(cursor.param)), ("value", .string(cursor.value)), ("source", .string(cursor.source))])))
    }
    if case .http(let h) = step.kind, let o = h.auth?.oauth2, let source = refreshTokens[o.key] {
      pairs.append(("refresh_token", .string(source)))
    }
    if Self.callsNetwork(step) {
      let r = step.retry
      let t = step.timeouts
      pairs.append(
        (
          "retry",
          .object([
            ("count", .integer(Int64(r.count))), ("interval", .string(r.interval.formatted)), ("backoff", .string(r.backoff.rawValue)),
            ("max_interval", .string(r.maxInterval.formatted)), ("jitter", .bool(r.jitter)),
            ("max_elapsed", r.maxElapsed.map { .string($0.formatted) } ?? .null),
            ("max_retry_after", .string(r.maxRetryAfter.formatted)), ("wait_budget", .string(r.waitBudget.formatted)),
          ])
        ))
      pairs.append(
        (
          "timeouts",
          .object([
            ("connect", .string(t.connect.formatted)), ("request", .string(t.request.formatted)),
            ("idle", .string(t.idle.formatted)),
          ])
        ))
    }
    if case .parallel(let p) = step.kind {
      pairs.append(("steps", .array(p.steps.map { stepJSON($0, group: step) })))
    }
    return .object(pairs)
  }
}
