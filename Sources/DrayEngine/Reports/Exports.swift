public import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Glibc

/// The run's exports to outside systems: OpenLineage events (`report.openlineage`) and the
/// OpenTelemetry trace (`report.otlp`), docs/report.md.
///
/// Both are best effort: a receiver that is down, slow or refuses costs one warning line
/// each, never the run's outcome or exit code. Each send has a 2 s connect and 5 s request
/// limit and is tried 3 times, 0.5 s then 1 s apart (connection failures, time limits,
/// `408`, `429` and `5xx`): at most about 17 s per destination and run, since a destination
/// that failed is sent nothing more. Nothing is done, and no span recorded, when neither is set.
final class Exports {
  let manifest: Manifest
  let console: Console
  let lineage: LineageSettings?
  /// The endpoint and header fields after the environment filled in (`OTLPTarget.resolve`).
  let otlp: OTLPTarget?
  private var startSent = false

  /// Tries per send, and the waits between them.
  static let tries = 3
  static let waits: [Duration] = [.milliseconds(500), .seconds(1)]
  static let timeouts = Timeouts(connect: .seconds(2), request: .seconds(5), idle: .seconds(5))

  init(manifest: Manifest, console: Console, environment: [String: String] = ProcessInfo.processInfo.environment) {
    self.manifest = manifest
    self.console = console
    self.lineage = manifest.report.openLineage
    self.otlp = manifest.report.otlp.flatMap { OTLPTarget.resolve($0, environment: environment) }
    for header in otlp?.headers ?? [] { console.addSecret(header.value) }
    if let otlp, otlp.endpoint.isEmpty {
      console.warn(
        "report.otlp is set without an endpoint and OTEL_EXPORTER_OTLP_ENDPOINT is not set: no trace is sent; give report.otlp.endpoint")
    }
    if otlp.map({ !$0.endpoint.isEmpty }) == true { Tracing.start() }
  }

  /// Whether any export is on.
  var isOn: Bool { lineage != nil || otlp.map { !$0.endpoint.isEmpty } == true }

  /// Sends the lineage `START` event of the run that began at `startedAt`.
  func start(job: String, runID: String, startedAt: Date, resumes: String?) {
    guard let lineage, !startSent else { return }
    startSent = true
    let event = LineageEvents(settings: lineage, manifest: manifest, job: job, runID: runID).start(eventTime: startedAt, resumes: resumes)
    send(lineage: event)
  }

  /// Sends the end of the run: the lineage `COMPLETE`, `FAIL` or `ABORT` event (after its
  /// `START`, when the run ended before sending one) and the trace.
  /// - Parameter columns: the columns of a table written, for the schema facet.
  func finish(_ report: RunReport, columns: (String) -> [String]?) {
    let recorded = Tracing.isOn ? Tracing.stop() : (spans: [], dropped: 0)
    if let lineage {
      start(job: report.job, runID: report.runID, startedAt: report.startedAt, resumes: report.resumes)
      let events = LineageEvents(settings: lineage, manifest: manifest, job: report.job, runID: report.runID)
      send(lineage: events.end(report, columns: columns))
    }
    if let otlp, !otlp.endpoint.isEmpty {
      let trace = OTLPTrace(report: report, spans: recorded.spans, dropped: recorded.dropped, redactor: console.redactor.current).json
      post(trace, to: otlp.tracesURL, headers: otlp.headers + [HTTPHeader("Content-Type", "application/json")], what: "the trace")
    }
  }

  private func send(lineage event: JSONValue) {
    // Masked before encoding, as every report is (docs/report.md, "Secrets").
    let text = console.redactor.current.redact(event).json
    switch lineage?.destination {
    case .url(let url)?:
      post(text, to: url, headers: [HTTPHeader("Content-Type", "application/json")], what: "the OpenLineage event")
    case .path(let path)?:
      let file = manifest.resolve(path)
      guard !down.contains(file) else { return }
      do {
        // Never into a file dray keeps for the job (the database, the manifest, ...), by
        // its name or, through a symbolic link, the file it leads to.
        let kept = KeptPaths.forReports(of: manifest)
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: file)).map {
          $0.hasPrefix("/") ? $0 : (file as NSString).deletingLastPathComponent + "/" + $0
        }
        if let conflict = kept.conflictOnDisk(file) ?? target.flatMap(kept.conflictOnDisk) {
          throw LocalFileError.refused("it \(conflict); name another file")
        }
        try Folders.create(holding: file)
        try Exports.append(text + "\n", to: file)
      } catch {
        down.insert(file)
        console.warn(
          "the OpenLineage event was not written to \(ReportFiles.display(file)): \(error); nothing more is written there by this run, whose outcome is not affected; check report.openlineage.path"
        )
      }
    case nil: break
    }
  }

  /// Appends `line` to the file at `path` with one `write(2)` on a descriptor opened with
  /// `O_APPEND` (created 0644 when missing), so lines of runs of several jobs sharing a file
  /// never interleave; a FIFO, device or folder is refused.
  /// - Throws: `LocalFileError` with the system's reason.
  static func append(_ line: String, to path: String) throws {
    if let kind = FileKind.refusal(at: path, followingLinks: true) {
      throw LocalFileError.refused("it is \(kind), not a regular file")
    }
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw LocalFileError.io(path: path, detail: String(cString: strerror(errno))) }
    defer { close(descriptor) }
    let bytes = Array(line.utf8)
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == bytes.count else { throw LocalFileError.io(path: path, detail: String(cString: strerror(errno))) }
  }

  /// The destinations that could not be reached in this run: sent nothing more, so that a
  /// receiver that is down costs one warning and one round of tries.
  private var down = Set<String>()

  /// POSTs `body` with retries; one warning when it could not be delivered, after which
  /// nothing more is sent to `url` in this run.
  private func post(_ body: String, to url: String, headers: [HTTPHeader], what: String) {
    guard !down.contains(url) else { return }
    let client = HTTPClient()
    client.traced = false
    let request = HTTPRequest(
      method: .post, url: url, headers: HTTPHeaders(headers), body: .bytes(Array(body.utf8)), timeouts: Exports.timeouts, repeatable: true)
    var last = ""
    for attempt in 0..<Exports.tries {
      if attempt > 0 { Thread.sleep(forTimeInterval: Exports.waits[min(attempt - 1, Exports.waits.count - 1)].seconds) }
      do {
        let sink = MemorySink(limit: 1 << 16)
        let response = try client.perform(request, sink: sink)
        if (200..<300).contains(response.status) { return }
        last = "HTTP \(response.status)" + (sink.text.isEmpty ? "" : ": " + PrintableText.oneLine(String(sink.text.prefix(200))))
        if !(response.status == 408 || response.status == 429 || response.status >= 500) { break }
      } catch {
        last = "\(error)"
      }
    }
    down.insert(url)
    console.warn(
      "\(what) was not delivered to \(HTTPClient.displayURL(url)) after \(Exports.tries) tries: \(last); "
        + "nothing more is sent there by this run, whose outcome is not affected")
  }
}

extension Duration {
  fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// `report.otlp` with the environment's `OTEL_EXPORTER_OTLP_ENDPOINT` and
/// `OTEL_EXPORTER_OTLP_HEADERS` filling in what it leaves out (OpenTelemetry specification,
/// "OTLP Exporter Configuration").
public struct OTLPTarget: Equatable, Sendable {
  /// The base URL, without a trailing `/`; empty when neither the manifest nor the
  /// environment gives one.
  public var endpoint: String
  /// The manifest's fields, then the environment's that the manifest does not name; every
  /// value is a secret.
  public var headers: [HTTPHeader]

  /// Where spans are POSTed: `{endpoint}/v1/traces`.
  public var tracesURL: String { endpoint + "/v1/traces" }

  /// - Parameter environment: where `OTEL_EXPORTER_OTLP_ENDPOINT` and
  ///   `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,...`, values percent-encoded) are read.
  public static func resolve(_ settings: OTLPSettings, environment: [String: String]) -> OTLPTarget {
    var endpoint = settings.endpoint ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? ""
    endpoint = endpoint.trimmingCharacters(in: .whitespaces)
    while endpoint.hasSuffix("/") { endpoint.removeLast() }
    var headers = settings.headers
    let named = Set(headers.map { $0.name.lowercased() })
    // `key1=value1,key2=value2`, values percent-encoded (W3C Baggage's format).
    for pair in (environment["OTEL_EXPORTER_OTLP_HEADERS"] ?? "").split(separator: ",") {
      guard let equals = pair.firstIndex(of: "=") else { continue }
      let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
      let raw = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
      let value = raw.removingPercentEncoding ?? raw
      guard !name.isEmpty, !named.contains(name.lowercased()) else { continue }
      headers.append(HTTPHeader(name, value, secret: true))
    }
    return OTLPTarget(endpoint: endpoint, headers: headers)
  }
}
