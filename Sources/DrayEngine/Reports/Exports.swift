public import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Glibc

/// The run's exports to outside systems: OpenLineage events (`report.openlineage`) and the
/// OpenTelemetry trace (`report.otlp`), docs/report.md.
///
/// Both are best effort: a receiver that is down, slow or refuses costs one warning line
/// each, never the run's outcome or exit code. Each send is tried up to 3 times, 0.5 s then
/// 1 s apart (connection failures, time limits, `408`, `429` and `5xx`), all within 5 s per
/// send (`budget`; the limits are fixed), and a destination that failed is sent nothing more
/// in the run. The `START` event goes out on a thread of its own, so the steps never wait for
/// it and their durations never count it; the run's end waits for it (within its 5 s). A
/// signal (the run's `Cancellation`) cuts a send short at once; a run that a signal ended
/// gives its end event and trace one try of at most 1 s each (`interruptedBudget`). Nothing
/// is done, and no span recorded, when neither is set.
///
/// `@unchecked Sendable`: the thread that sends `START` is the only one using `down` and
/// the console's redactor until `finish` has waited for it.
final class Exports: @unchecked Sendable {
  let manifest: Manifest
  let console: Console
  let lineage: LineageSettings?
  /// The endpoint and header fields after the environment filled in (`OTLPTarget.resolve`).
  let otlp: OTLPTarget?
  /// The run's: a signal cuts every send short.
  let cancellation: Cancellation
  private var startSent = false
  /// Signalled when the `START` sent on its own thread is done.
  private var startDone: DispatchSemaphore?

  /// Tries per send, and the waits between them.
  static let tries = 3
  static let waits: [Duration] = [.milliseconds(500), .seconds(1)]
  /// The longest a connection may take to open, within `budget`.
  static let connectLimit: Duration = .seconds(2)
  /// The longest one send (all its tries and waits) takes.
  static let budget: Duration = .seconds(5)
  /// The longest one send takes once a signal ended the run: one try.
  static let interruptedBudget: Duration = .seconds(1)

  init(
    manifest: Manifest, console: Console, cancellation: Cancellation = Cancellation(),
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) {
    self.manifest = manifest
    self.console = console
    self.cancellation = cancellation
    self.lineage = manifest.report.openLineage
    self.otlp = manifest.report.otlp.flatMap { OTLPTarget.resolve($0, environment: environment) }
    for header in otlp?.headers ?? [] { console.addSecret(header.value) }
    // OTEL_EXPORTER_OTLP_ENDPOINT's key, which validation never saw.
    for value in CredentialName.queryValues(in: otlp?.endpoint ?? "") { console.addSecret(value) }
    for problem in otlp?.problems ?? [] { console.warn(problem) }
    if let otlp, otlp.endpoint.isEmpty, !otlp.endpointRefused {
      console.warn(
        "report.otlp is set without an endpoint and OTEL_EXPORTER_OTLP_ENDPOINT is not set: no trace is sent; give report.otlp.endpoint")
    }
    if otlp.map({ !$0.endpoint.isEmpty }) == true { Tracing.start() }
  }

  /// Whether any export is on.
  var isOn: Bool { lineage != nil || otlp.map { !$0.endpoint.isEmpty } == true }

  /// Sends the lineage `START` event of the run that began at `startedAt`, after the
  /// `ABORT` event of each run in `abandoned` (runs found ended without recording an end,
  /// their process killed, whose end was never sent), on a thread of its own when
  /// `background` (`finish` waits for it).
  func start(job: String, runID: String, startedAt: Date, resumes: String?, abandoned: [RunRecord] = [], background: Bool = false) {
    guard let lineage, !startSent else { return }
    startSent = true
    let found = Date()
    let aborts = abandoned.map {
      LineageEvents(settings: lineage, manifest: manifest, job: job, runID: $0.id).abandoned(eventTime: found, processID: $0.processID)
    }
    let event = LineageEvents(settings: lineage, manifest: manifest, job: job, runID: runID).start(eventTime: startedAt, resumes: resumes)
    // A file is written at once; a receiver may be slow.
    guard background, case .url = lineage.destination else { return sendStart(aborts + [event]) }
    let done = DispatchSemaphore(value: 0)
    startDone = done
    startLimit = Exports.budget.seconds * Double(aborts.count + 1) + 1
    let thread = Thread { [self] in
      sendStart(aborts + [event])
      done.signal()
    }
    thread.name = "dray-lineage-start"
    thread.start()
  }

  private func sendStart(_ events: [JSONValue]) {
    for event in events { send(lineage: event, cancellation: cancellation, budget: Exports.budget) }
  }

  /// Waits for the `START` sent on its own thread: each of its sends keeps to `budget`, so
  /// the wait is bounded; past that and a margin, no more lineage event is sent beside it.
  private func joinStart() {
    guard let done = startDone else { return }
    startDone = nil
    if done.wait(timeout: .now() + startLimit) == .timedOut {
      // The thread may still be sending: the end events are not sent beside it.
      startStuck = true
    }
  }
  private var startStuck = false
  private var startLimit = 0.0

  /// Sends the end of the run: the lineage `COMPLETE`, `FAIL` or `ABORT` event (after its
  /// `START`, when the run ended before sending one) and the trace.
  /// - Parameter columns: the columns of a table written, for the schema facet.
  func finish(_ report: RunReport, columns: (String) -> [String]?) {
    let recorded = Tracing.isOn ? Tracing.stop() : (spans: [], dropped: 0)
    joinStart()
    // After a signal: one short try, which the signal that already came cannot cut.
    let interrupted = cancellation.isCancelled
    let cut = interrupted ? Cancellation() : cancellation
    let budget = interrupted ? Exports.interruptedBudget : Exports.budget
    if let lineage, !startStuck {
      start(job: report.job, runID: report.runID, startedAt: report.startedAt, resumes: report.resumes)
      let events = LineageEvents(settings: lineage, manifest: manifest, job: report.job, runID: report.runID)
      send(lineage: events.end(report, columns: columns), cancellation: cut, budget: budget)
    }
    if let otlp, !otlp.endpoint.isEmpty {
      let trace = OTLPTrace(report: report, spans: recorded.spans, dropped: recorded.dropped, redactor: console.redactor.current).json
      post(
        trace, to: otlp.tracesURL, headers: otlp.headers + [HTTPHeader("Content-Type", "application/json")], what: "the trace",
        cancellation: cut, budget: budget)
    }
  }

  private func send(lineage event: JSONValue, cancellation: Cancellation, budget: Duration) {
    // Masked before encoding, as every report is (docs/report.md, "Secrets").
    let text = console.redactor.current.redact(event).json
    switch lineage?.destination {
    case .url(let url)?:
      post(
        text, to: url, headers: [HTTPHeader("Content-Type", "application/json")], what: "the OpenLineage event",
        cancellation: cancellation, budget: budget)
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
        let reason =
          if case LocalFileError.refused(let message) = error { "refused: \(message)" } else { "\(error)" }
        console.warn(
          "the OpenLineage event was not written to \(ReportFiles.display(file)): \(reason); nothing more is written there by this run, whose outcome is not affected; check report.openlineage.path"
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

  /// POSTs `body` with retries, all within `budget`; one warning when it could not be
  /// delivered, after which nothing more is sent to `url` in this run.
  private func post(_ body: String, to url: String, headers: [HTTPHeader], what: String, cancellation: Cancellation, budget: Duration) {
    guard !down.contains(url) else { return }
    let clock = ContinuousClock()
    let deadline = clock.now + budget
    let client = HTTPClient(cancellation: cancellation)
    client.traced = false
    var last = ""
    var tries = 0
    for attempt in 0..<Exports.tries {
      if attempt > 0 {
        let wait = Exports.waits[min(attempt - 1, Exports.waits.count - 1)]
        guard clock.now + wait + .milliseconds(100) < deadline else { break }
        // In slices, so that a signal cuts the wait short.
        let until = clock.now + wait
        while clock.now < until, !cancellation.isCancelled { Thread.sleep(forTimeInterval: 0.05) }
      }
      let remaining = deadline - clock.now
      guard remaining > .milliseconds(100), !cancellation.isCancelled else { break }
      let request = HTTPRequest(
        method: .post, url: url, headers: HTTPHeaders(headers), body: .bytes(Array(body.utf8)),
        timeouts: Timeouts(connect: min(Exports.connectLimit, remaining), request: remaining, idle: remaining), repeatable: true)
      tries += 1
      do {
        let response = try client.perform(request, sink: MemorySink(limit: 1 << 16))
        if (200..<300).contains(response.status) { return }
        let answer = PrintableText.oneLine(String(decoding: response.errorBody.prefix(200), as: UTF8.self))
        last = "HTTP \(response.status)" + (answer.isEmpty ? "" : ": " + answer)
        if !(response.status == 408 || response.status == 429 || response.status >= 500) { break }
      } catch TransportError.timeout {
        last = "no answer within the export's fixed limit (\(budget.formatted) a send, all tries; docs/report.md)"
      } catch TransportError.cancelled {
        last = "cut short by \(cancellation.signal.map { "signal \($0)" } ?? "the run's end")"
        break
      } catch {
        last = "\(error)"
      }
    }
    down.insert(url)
    let count = tries == 1 ? "1 try" : "\(tries) tries"
    console.warn(
      "\(what) was not delivered to \(HTTPClient.displayURL(url)) after \(count) within \(budget.formatted): \(last); "
        + "nothing more is sent there by this run, whose outcome is not affected")
  }
}

/// `report.otlp` with the environment's `OTEL_EXPORTER_OTLP_ENDPOINT` and
/// `OTEL_EXPORTER_OTLP_HEADERS` filling in what it leaves out (OpenTelemetry specification,
/// "OTLP Exporter Configuration").
public struct OTLPTarget: Equatable, Sendable {
  /// The base URL, without a trailing `/`; empty when neither the manifest nor the
  /// environment gives one, or the environment's is not an http:// or https:// address.
  public var endpoint: String
  /// The manifest's fields, then the environment's that the manifest does not name; every
  /// value is a secret.
  public var headers: [HTTPHeader]
  /// What was wrong in the environment, one warning each, naming the variable and never a
  /// value: an `OTEL_EXPORTER_OTLP_ENDPOINT` that is not an address, entries of
  /// `OTEL_EXPORTER_OTLP_HEADERS` that are not `name=value` (left out).
  public var problems: [String] = []
  /// Whether `OTEL_EXPORTER_OTLP_ENDPOINT` was refused (a problem says so): no trace is sent.
  public var endpointRefused = false

  /// Where spans are POSTed: `{endpoint}/v1/traces`, or the endpoint as it is when it ends
  /// with `/v1/traces` already (a per-signal address: dray's own decision, docs/report.md;
  /// the specification appends the path to the variable's base in any case).
  /// The path is joined before the query and fragment (RFC 3986 §3): an endpoint
  /// `http://c:4318/otlp?key=K` sends to `http://c:4318/otlp/v1/traces?key=K`.
  public var tracesURL: String {
    let end = endpoint.firstIndex { $0 == "?" || $0 == "#" } ?? endpoint.endIndex
    var base = String(endpoint[..<end])
    while base.hasSuffix("/") { base.removeLast() }
    return (base.hasSuffix("/v1/traces") ? base : base + "/v1/traces") + endpoint[end...]
  }

  /// - Parameter environment: where `OTEL_EXPORTER_OTLP_ENDPOINT` and
  ///   `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,...`, values percent-encoded) are read.
  public static func resolve(_ settings: OTLPSettings, environment: [String: String]) -> OTLPTarget {
    var problems: [String] = []
    var refused = false
    var endpoint = settings.endpoint ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? ""
    endpoint = endpoint.trimmingCharacters(in: .whitespaces)
    // A trailing `/` of the path goes, never one of the query (`?token=a/`).
    if !endpoint.contains("?") && !endpoint.contains("#") {
      while endpoint.hasSuffix("/") { endpoint.removeLast() }
    }
    if settings.endpoint == nil, !endpoint.isEmpty, !isAddress(endpoint) {
      problems.append(
        "OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// address such as http://collector:4318: no trace is sent; fix the variable or give report.otlp.endpoint"
      )
      endpoint = ""
      refused = true
    }
    var headers = settings.headers
    let named = Set(headers.map { $0.name.lowercased() })
    // `key1=value1,key2=value2`, values percent-encoded (W3C Baggage's format).
    var malformed: [Int] = []
    for (index, pair) in (environment["OTEL_EXPORTER_OTLP_HEADERS"] ?? "").split(separator: ",").enumerated() {
      guard let equals = pair.firstIndex(of: "="), !pair[..<equals].trimmingCharacters(in: .whitespaces).isEmpty else {
        if !pair.trimmingCharacters(in: .whitespaces).isEmpty { malformed.append(index + 1) }
        continue
      }
      let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
      let raw = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
      let value = raw.removingPercentEncoding ?? raw
      guard !named.contains(name.lowercased()) else { continue }
      headers.append(HTTPHeader(name, value, secret: true))
    }
    if !malformed.isEmpty {
      let which = (malformed.count == 1 ? "entry " : "entries ") + malformed.map(String.init).joined(separator: ", ")
      let verb = malformed.count == 1 ? "is not name=value and is" : "are not name=value and are"
      problems.append(
        "OTEL_EXPORTER_OTLP_HEADERS: \(which) (counting from 1, comma-separated) \(verb) left out; write each as name=value (value percent-encoded)"
      )
    }
    return OTLPTarget(endpoint: endpoint, headers: headers, problems: problems, endpointRefused: refused)
  }

  /// An http:// or https:// address with a host and no blank.
  static func isAddress(_ url: String) -> Bool {
    let lower = url.lowercased()
    let scheme = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
    let authority = url.dropFirst(scheme).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    return scheme > 0 && !authority.isEmpty && !url.contains { $0 == " " || $0 == "\t" || $0 == "\n" }
  }
}
