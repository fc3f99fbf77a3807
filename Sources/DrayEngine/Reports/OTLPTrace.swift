internal import DrayModel
internal import DrayTransport
internal import Foundation

/// A run's trace as an OTLP/HTTP JSON `ExportTraceServiceRequest` (OpenTelemetry protocol
/// 1.x, `opentelemetry/proto/collector/trace/v1`; JSON as the OTLP specification's "JSON
/// Protobuf Encoding" says: lowerCamelCase field names, trace and span ids as hex, times as
/// decimal strings of Unix nanoseconds, enums as integers).
///
/// - The trace id is the run's OpenLineage UUID (`LineageEvents.runUUID`) without dashes.
/// - Spans: the run (root), a child per step that started, a child of a step per member of
///   its `parallel` group or partition, and a child of the step running on the thread per
///   HTTP request and database commit (`Tracing`). Span ids are the first 8 bytes of
///   SHA-256 of the run id and the span's place, so they are stable.
/// - Attributes follow the semantic conventions (`http.request.method`, `url.full` with
///   credentials left out and secret query values `REDACTED`, `server.address`,
///   `server.port`, `http.response.status_code`, `http.request.resend_count`,
///   `db.system`), plus dray's own (`dray.step.id`, `dray.rows`, `dray.bytes`,
///   `dray.retries`; on a request `dray.bytes` received on the wire and `dray.bytes_sent`,
///   head and body). A span that failed has status code 2 (error) with the message; every
///   string is masked by the run's redactor.
struct OTLPTrace {
  let report: RunReport
  let spans: [Tracing.Span]
  /// Request and commit spans past `Tracing.limit`, not sent: the root's `dray.spans_dropped`.
  var dropped = 0
  let redactor: Redactor

  var traceID: String { LineageEvents.runUUID(job: report.job, runID: report.runID).replacing("-", with: "") }

  func spanID(_ place: String) -> String {
    SHA256.hex(Array("\(report.runID)/\(place)".utf8)).prefix(16).lowercased()
  }

  var json: String {
    var out: [JSONValue] = []
    let root = spanID("run")
    out.append(
      span(
        id: root, parent: nil, name: "dray run \(report.job)", start: report.startedAt, end: report.endedAt,
        attributes: [
          ("dray.job", .string(report.job)), ("dray.run_id", .string(report.runID)), ("dray.status", .string(report.status.rawValue)),
          ("dray.exit_code", .integer(Int64(report.exitCode))), ("dray.rows", .integer(Int64(report.totals.rows))),
          ("dray.bytes", .integer(report.totals.bytes)), ("dray.retries", .integer(Int64(report.totals.retries))),
        ] + (dropped > 0 ? [("dray.spans_dropped", .integer(Int64(dropped)))] : []),
        error: report.status == .failed ? (report.failure?.reason ?? report.errorMessage ?? "failed") : nil))
    var stepSpans: [String: String] = [:]
    func add(_ step: StepReport, parent: String) {
      guard let started = step.startedAt else { return }
      let id = spanID("step/\(step.id)")
      stepSpans[step.id] = id
      var attributes: [(key: String, value: JSONValue)] = [
        ("dray.step.id", .string(step.id)), ("dray.step.kind", .string(step.kind)), ("dray.status", .string(step.status.rawValue)),
        ("dray.rows", .integer(Int64(step.totalRows))), ("dray.bytes", .integer(step.bytes)),
        ("dray.retries", .integer(Int64(step.retries))),
      ]
      if let partition = step.partition {
        attributes += partition.values.map { ("dray.partition.\($0.name)", .string($0.value)) }
      }
      let error = step.status == .failed ? "\(step.errorCode ?? "error"): \(step.errorMessage ?? "")" : nil
      out.append(
        span(
          id: id, parent: parent, name: "step \(step.id)", start: started, end: started.addingTimeInterval(step.duration),
          attributes: attributes, error: error))
      for member in step.members { add(member, parent: id) }
    }
    for step in report.steps { add(step, parent: root) }
    for (index, recorded) in spans.enumerated() {
      let parent = recorded.step.flatMap { stepSpans[$0] } ?? root
      var attributes: [(key: String, value: JSONValue)] = []
      if let step = recorded.step { attributes.append(("dray.step.id", .string(step))) }
      let name: String
      switch recorded.kind {
      case .request(let method, let url, let status, let received, let sent, let attempt):
        name = method
        attributes += [("http.request.method", .string(method)), ("url.full", .string(Self.safeURL(url)))]
        if let server = Origin(url) {
          attributes += [("server.address", .string(server.host)), ("server.port", .integer(Int64(server.port)))]
        }
        if let status { attributes.append(("http.response.status_code", .integer(Int64(status)))) }
        if attempt > 1 { attributes.append(("http.request.resend_count", .integer(Int64(attempt - 1)))) }
        attributes += [("dray.bytes", .integer(received)), ("dray.bytes_sent", .integer(sent))]
      case .commit(let system):
        name = "COMMIT"
        attributes += [("db.system", .string(system)), ("db.operation.name", .string("COMMIT"))]
      }
      var error = recorded.error
      if error == nil, case .request(_, _, let status?, _, _, _) = recorded.kind, status >= 400 { error = "HTTP \(status)" }
      out.append(
        span(
          id: spanID("span/\(index)"), parent: parent, name: name, start: recorded.start, end: recorded.end, attributes: attributes,
          error: error, kind: 3))
    }
    let resource: JSONValue = .object([
      (
        "attributes",
        attributes([
          ("service.name", .string("dray")), ("service.version", .string(DrayVersion.current)), ("host.name", .string(report.host)),
        ])
      )
    ])
    let scope: JSONValue = .object([("name", .string("dray")), ("version", .string(DrayVersion.current))])
    let request: JSONValue = .object([
      (
        "resourceSpans",
        .array([.object([("resource", resource), ("scopeSpans", .array([.object([("scope", scope), ("spans", .array(out))])]))])])
      )
    ])
    return redactor.redact(request).json
  }

  /// One span; `kind` 1 internal, 3 client.
  private func span(
    id: String, parent: String?, name: String, start: Date, end: Date, attributes list: [(key: String, value: JSONValue)], error: String?,
    kind: Int = 1
  ) -> JSONValue {
    var fields: [(key: String, value: JSONValue)] = [("traceId", .string(traceID)), ("spanId", .string(id))]
    if let parent { fields.append(("parentSpanId", .string(parent))) }
    fields += [
      ("name", .string(name)), ("kind", .integer(Int64(kind))),
      ("startTimeUnixNano", .string(Self.nanos(start))), ("endTimeUnixNano", .string(Self.nanos(max(start, end)))),
      ("attributes", attributes(list)),
    ]
    if let error {
      fields.append(("status", .object([("code", .integer(2)), ("message", .string(PrintableText.oneLine(error)))])))
    } else {
      fields.append(("status", .object([("code", .integer(1))])))
    }
    return .object(fields)
  }

  private func attributes(_ list: [(key: String, value: JSONValue)]) -> JSONValue {
    .array(
      list.map { key, value in
        let typed: JSONValue =
          switch value {
          case .integer(let i): .object([("intValue", .string(String(i)))])
          case .bool(let b): .object([("boolValue", .bool(b))])
          default: .object([("stringValue", value)])
          }
        return .object([("key", .string(key)), ("value", typed)])
      })
  }

  static func nanos(_ date: Date) -> String {
    String(Int64((date.timeIntervalSince1970 * 1e6).rounded()) * 1000)
  }

  /// `url` with the values of query parameters named as credentials (`QueryItem.isSecret`:
  /// `api_key`, `token`, ...) replaced by `REDACTED` (semantic conventions, `url.full`).
  static func safeURL(_ url: String) -> String {
    guard let question = url.firstIndex(of: "?") else { return url }
    let query = url[url.index(after: question)...]
    let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
      guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
      let name = (pair[..<equals].removingPercentEncoding ?? String(pair[..<equals])).lowercased()
      return QueryItem(name, "").isSecret ? pair[..<equals] + "=REDACTED" : String(pair)
    }
    return String(url[...question]) + pairs.joined(separator: "&")
  }
}
