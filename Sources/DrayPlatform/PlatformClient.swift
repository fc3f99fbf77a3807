internal import DrayJSON
public import DrayModel
public import DrayTransport
internal import Foundation

/// Calls the platform's API for one thread of work (platform-api.md).
///
/// Every call carries the session's token (signing in first when needed), retries under the
/// step's policy, and meets a 401 with one new token and one repeat (`PlatformSession`). A
/// call that may change data (a POST the step does not know to be a read) is retried freely
/// only when it carries an `X-Transaction-ID`, kept the same on every attempt; without one,
/// only while its attempts changed nothing on the server (`WriteOutcome`), and its failure
/// says what the last one did there (`WriteFailure`).
public final class PlatformClient {
  public let session: PlatformSession
  public let http: HTTPClient
  public var cancellation: Cancellation { http.cancellation }
  /// Time limits of this client's calls (a step's `timeouts`); the platform's by default.
  public var timeouts: Timeouts
  /// The run's retry waits, shared by every client of the run (`retry.wait_budget`).
  public var retryBudget = RetryBudget()
  /// Waits between attempts; `RetryRunner.serverWait` (none in a replay) unless a test
  /// injects another.
  public var sleeper: @Sendable (Duration, Cancellation) throws -> Void = RetryRunner.serverWait

  public init(session: PlatformSession, cancellation: Cancellation) {
    self.session = session
    self.http = HTTPClient(cancellation: cancellation)
    self.timeouts = session.settings.timeouts
  }

  // MARK: Calls

  /// Sends a request built for the platform and returns the 2xx answer's head.
  /// - Parameters:
  ///   - reads: the caller knows the call only reads, whatever its method.
  ///   - beforeSending: called once, before the first attempt's request goes out (after the
  ///     sign-in it needs): a write without a transaction id is recorded there first, so that
  ///     a crash while it is out leaves it known as sent.
  ///   - perform: sends one attempt (to a sink or a download) and returns the answer's head.
  /// - Throws: `TransportError` (the last attempt's, or `.gaveUp` saying why retrying
  ///   stopped), `PlatformError`; for a call that may change data without a transaction id,
  ///   any of them in a `WriteFailure` saying what its last attempt did on the server.
  func send(
    _ request: HTTPRequest, policy: RetryPolicy, transactionID: String?, reads: Bool = false, record: (Attempt) -> Void,
    beforeSending: () throws -> Void = {}, perform: (HTTPRequest) throws -> HTTPResponse
  ) throws -> HTTPResponse {
    var runner = RetryRunner(policy: policy, cancellation: cancellation, budget: retryBudget)
    runner.sleeper = sleeper
    var reauthenticated = false
    // The token a 401 refused; the next attempt replaces it first.
    var refused: String?
    var request = request
    request.repeatable = request.method.isIdempotent || transactionID != nil || reads
    if let transactionID { request.headers.set("X-Transaction-ID", transactionID) }
    // What the last attempt of the call did on the server, for a write without an id.
    var outcome = WriteOutcome.notSent
    var announced = false
    do {
      return try withoutActuallyEscaping(record) { recordAttempt in
        // Each attempt (the sign-in's too) is recorded as soon as its request ended, with the
        // status the server sent even when the transfer broke after it.
        let http = http
        let record: (Attempt) -> Void = { attempt in
          var attempt = attempt
          if attempt.status == nil { attempt.status = http.lastStatus }
          recordAttempt(attempt)
        }
        return try runner.run(
          { _ in
            // A sign-in that fails sends nothing of this call: its attempts are the sign-in's.
            let token: String
            do {
              if let stale = refused {
                refused = nil
                _ = try session.renew(stale: stale, because: "the token was refused (401)", client: http, runner: runner, record: record)
              }
              token = try session.token(client: http, runner: runner, record: record)
            } catch {
              throw UnsentAttempt(error)
            }
            var sent = request
            sent.headers.set("Authorization", "Bearer \(token)")
            if !announced {
              do { try beforeSending() } catch { throw UnsentAttempt(error) }
              announced = true
            }
            do {
              let response = try perform(sent)
              if (200..<300).contains(response.status) { return response }
              let error = PlatformError.statusError(response, url: response.url.isEmpty ? request.url : response.url)
                .redacted(by: Redactor([token]))
              if response.status == 401 {
                guard !reauthenticated else { throw PlatformError.unauthorized(error) }
                reauthenticated = true
                refused = token
                throw PlatformError.reauthenticated(error)
              }
              throw TransportError.httpStatus(error)
            } catch {
              outcome = WriteOutcome(error: error, bytesSent: http.bytesSent)
              throw error
            }
          },
          classify: { error in
            if case .reauthenticated? = error as? PlatformError { return .repeatNow }
            guard (error as? TransportError)?.isTransient == true, request.repeatable || !outcome.mayBeApplied else {
              return .fail(reason: nil)
            }
            return .retry
          },
          record: record)
      }
    } catch  where !request.repeatable {
      throw WriteFailure(error, outcome: outcome)
    }
  }

  private func request(_ method: HTTPMethod, _ path: String, body: HTTPBody = .none, contentType: String? = nil) -> HTTPRequest {
    var headers = HTTPHeaders(session.settings.headers)
    if let contentType { headers.set("Content-Type", contentType) }
    return HTTPRequest(
      method: method, url: session.url(path), headers: headers, body: body, timeouts: timeouts, tls: session.settings.tls)
  }

  /// Sends a call whose answer is small and returns its bytes.
  /// - Parameter json: the answer is a JSON document, whose own end shows it whole when the
  ///   framing does not (`HTTPResponse.endShown`); one cut short is retried.
  private func small(
    _ request: HTTPRequest, policy: RetryPolicy, transactionID: String? = nil, json: Bool = false, record: (Attempt) -> Void
  ) throws -> (HTTPResponse, [UInt8]) {
    let sink = MemorySink()
    let response = try send(request, policy: policy, transactionID: transactionID, record: record) {
      let response = try http.perform($0, sink: sink)
      if json { try PlatformClient.requireWholeJSON(response, sink.bytes) }
      return response
    }
    return (response, sink.bytes)
  }

  /// Fails a 2xx answer whose framing did not show its end and whose JSON document stops
  /// early: the connection closed mid-answer. A blank answer passes, to be refused as blank
  /// (`blankAnswer`) whatever its framing.
  /// - Throws: `TransportError.truncated`, retried like any broken transfer.
  static func requireWholeJSON(_ response: HTTPResponse, _ bytes: [UInt8]) throws {
    guard (200..<300).contains(response.status), !response.endShown, !JSONEvents.endsWhole(bytes),
      BlankAnswer.size(of: bytes) == nil
    else { return }
    throw TransportError.truncated(
      url: HTTPClient.displayURL(response.url), received: Int64(bytes.count),
      detail: "the connection closed without a Content-Length or a final chunk, and the JSON document it holds is not complete")
  }

  /// Sends a call whose answer is a small JSON document and parses it.
  /// - Throws: `PlatformError.badAnswer` naming `what` when the answer is not JSON, or is
  ///   blank (`blankAnswer`).
  private func smallJSON(_ request: HTTPRequest, what: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> JSONValue {
    let (response, bytes) = try small(request, policy: policy, json: true, record: record)
    if let blank = BlankAnswer.size(of: bytes) { throw PlatformClient.blankAnswer(blank, response, url: request.url) }
    do {
      return try JSONValue(parsing: bytes)
    } catch {
      throw PlatformError.badAnswer(url: request.url, detail: "the \(what) is not valid JSON (\(error.message))")
    }
  }

  // MARK: Schemes (platform-api.md §2)

  /// The schemes of every resource the user may read, by name order.
  /// - Throws: `TransportError`, `PlatformError`.
  public func schemes(policy: RetryPolicy, record: (Attempt) -> Void) throws -> [ResourceScheme] {
    let request = request(.get, "schema/")
    guard case .object(let resources) = try smallJSON(request, what: "schema answer", policy: policy, record: record) else {
      throw PlatformError.badAnswer(url: request.url, detail: "the schema answer is not a JSON object keyed by resource")
    }
    return try resources.map { try PlatformClient.scheme(name: $0.key, $0.value, url: request.url) }.sorted { $0.name < $1.name }
  }

  /// A resource's scheme from its entry in the schema answer (platform-api.md §2).
  ///
  /// Each column is an object with a string `name` (and a `type`, `TEXT` when missing); a
  /// column written otherwise is refused, saying what was found. `lifetime` is a number of
  /// seconds, present for a cached resource; one beyond 2^63-1 seconds (`1e300`) is kept as
  /// `Int.max`, which means the same: the rows carry row ids and the cache never expires.
  /// - Throws: `PlatformError.badAnswer` naming the resource, table and column.
  static func scheme(name: String, _ value: JSONValue, url: String) throws -> ResourceScheme {
    guard case .object = value else { throw PlatformError.badAnswer(url: url, detail: "resource '\(name)' is not an object") }
    var outputs: [ResourceScheme.Table] = []
    for table in value["output"]?.arrayValue ?? [] {
      guard let tableName = table["name"]?.stringValue else {
        throw PlatformError.badAnswer(url: url, detail: "an output table of '\(name)' has no name")
      }
      var columns: [ResourceScheme.Column] = []
      for (index, column) in (table["columns"]?.arrayValue ?? []).enumerated() {
        guard case .object = column, let columnName = column["name"]?.stringValue else {
          let found = column["name"].map { "a name that is not a string (\($0.json))" } ?? PlatformClient.describe(column)
          throw PlatformError.badAnswer(
            url: url,
            detail: "column \(index + 1) of output table '\(tableName)' of '\(name)' must be an object with a string 'name', found \(found)"
          )
        }
        columns.append(ResourceScheme.Column(name: columnName, type: column["type"]?.stringValue ?? "TEXT"))
      }
      outputs.append(ResourceScheme.Table(name: tableName, columns: columns))
    }
    var lifetime: Int?
    let given = value["lifetime"]
    // A number that is not an integer within 64 bits: `1.5`, `1e300`, `9223372036854775808`.
    let seconds: Double? = if case .number(let n)? = given { Double(n) } else { nil }
    switch (given, seconds) {
    case (.integer(let i)?, _) where i >= 0: lifetime = Int(i)
    case (.number?, let seconds?) where seconds >= 0: lifetime = seconds < 9.2e18 ? Int(seconds) : Int.max
    case (nil, _), (.null?, _): lifetime = nil
    case (let other?, _):
      throw PlatformError.badAnswer(
        url: url, detail: "the 'lifetime' of '\(name)' must be a number of seconds, 0 or more, found \(PlatformClient.describe(other))")
    }
    return ResourceScheme(
      name: name, type: value["type"]?.stringValue ?? "tabular", lifetime: lifetime, outputs: outputs, json: value.json)
  }

  /// What a JSON value is, for messages: `a string ("id")`, `a number (3)`.
  static func describe(_ value: JSONValue) -> String {
    let text = value.json
    let shown = text.count > 60 ? String(text.prefix(60)) + "…" : text
    switch value {
    case .null: return "null"
    case .bool: return "a boolean (\(shown))"
    case .integer, .number: return "a number (\(shown))"
    case .string: return "a string (\(shown))"
    case .array: return "a list (\(shown))"
    case .object: return "an object (\(shown))"
    }
  }

  // MARK: Table data and uniform requests (platform-api.md §3, §4)

  /// What the answer's headers say about its version.
  public struct AnswerHead: Sendable, Equatable {
    public var status: Int
    public var etag: String?
    /// The version this answer brings the table to, e.g. `v6`.
    public var contentVersion: String?
    /// True when the answer is a delta (`Content-Version: "delta v2-v6"`).
    public var isDelta: Bool
    public var cacheHash: String?
    /// The version a delta starts from (`v2`); nil for full data, or for a delta whose
    /// `Content-Version` does not read `delta v<n>-v<m>`.
    public var deltaFrom: String?
    /// What the answer said it is when its `Content-Type` is not JSON (`application/json` or
    /// `…+json`), for messages about an answer that cannot be read: `Content-Type: text/html,
    /// Content-Encoding: gzip` (`HTTPResponse.describedKind`); nil for a JSON answer.
    public var unexpectedKind: String?

    /// Why this delta cannot be applied to tables at version `held`, or nil when it can: it
    /// must start at `held` (the version `X-Delta` named) and end there or later (`v5-v5`
    /// is the empty delta of a resource that did not change). A delta from another base
    /// would change rows the tables do not hold, or miss changes, and still mark them with
    /// its end version; one that runs backwards would set the version back.
    public func deltaProblem(held: String) -> String? {
      let claimed = "\"delta \(deltaFrom ?? "?")-\(contentVersion ?? "?")\""
      guard let from = deltaFrom, let to = contentVersion,
        let start = AnswerHead.versionNumber(from), let end = AnswerHead.versionNumber(to)
      else { return "a delta whose Content-Version does not read \"delta v<n>-v<m>\"" }
      if from != held { return "a delta from \(from) (Content-Version: \(claimed)), not from \(held)" }
      if end < start { return "a delta that runs backwards (Content-Version: \(claimed))" }
      return nil
    }

    /// `6` for `v6`; nil when the text is not `v` and digits.
    static func versionNumber(_ version: String) -> Int? {
      guard version.hasPrefix("v"), version.count > 1, version.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) else {
        return nil
      }
      return Int(version.dropFirst())
    }
  }

  /// Posts `params` to `rpc/<resource>/` and streams the answer into `download`.
  /// - Parameters:
  ///   - delta: the version held (`v6`) to ask for a delta from, or nil for full data.
  ///   - reads: the step knows the resource only reads (`StepRunner.mayChangeData`), so the
  ///     call is retried with or without a transaction id; otherwise a call without one is
  ///     retried only while its attempts changed nothing on the server (`WriteOutcome`).
  ///   - beforeSending: called once, before the first request goes out (`send`).
  /// - Throws: `TransportError`, `PlatformError` (`blankAnswer` for an empty body, whose
  ///   download is removed); `WriteFailure` around a failed call that may change data and
  ///   carries no transaction id.
  public func rpc(
    resource: String, params: JSONValue, delta: String?, transactionID: String?, reads: Bool, download: Download,
    policy: RetryPolicy, record: (Attempt) -> Void, beforeSending: () throws -> Void = {}
  ) throws -> AnswerHead {
    download.endsWhole = { JSONEvents.endsWhole(path: $0) }
    var request = request(
      .post, "rpc/\(PlatformClient.pathSegment(resource))/", body: .bytes(Array(params.json.utf8)), contentType: "application/json")
    if let delta { request.headers.set("X-Delta", "\(delta)-last") }
    request.acceptEncoding = compressedAnswers
    let response = try recordingDownload(download, record) { record in
      try send(request, policy: policy, transactionID: transactionID, reads: reads, record: record, beforeSending: beforeSending) {
        try download.attempt($0, client: http, transactionID: transactionID)
      }
    }
    try download.complete()
    if let blank = BlankAnswer.size(ofFile: download.path) {
      download.removeFinished()
      throw PlatformClient.blankAnswer(blank, response, url: request.url)
    }
    return PlatformClient.head(response)
  }

  /// The error for a 2xx answer whose body is blank (`BlankAnswer`): every platform answer
  /// but a file's bytes is a JSON document (platform-api.md §2–§5), and reading a blank one
  /// as "no rows" would replace tables with nothing. It is not retried (the server answered
  /// in full, and would most likely answer the same); the next run asks again.
  static func blankAnswer(_ blank: Int, _ response: HTTPResponse, url: String) -> PlatformError {
    .badAnswer(
      url: HTTPClient.displayURL(url),
      detail:
        "\(BlankAnswer.describe(bytes: blank)) (HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none")); "
        + "an empty body is not a JSON document, so it was refused and nothing was changed")
  }

  /// The `Accept-Encoding` of the calls whose answers download into a resumable part (table
  /// data, files): `gzip` (unless `platform.compression` is false), because `X-Range` counts
  /// the bytes before compression (platform-api.md §3, "Resumable download"), so a
  /// compressed answer resumes at the part's size. Small JSON answers (schema, listings,
  /// meta) ask for `identity`.
  var compressedAnswers: String { session.settings.compression ? "gzip" : HTTPRequest.identity }

  /// Runs `body` with `record` wrapped so that each of the call's own attempts also
  /// records the bytes its download received (decoded, and on the wire) and the offset it
  /// resumed from.
  private func recordingDownload<T>(
    _ download: Download, _ record: (Attempt) -> Void, _ body: ((Attempt) -> Void) throws -> T
  ) rethrows -> T {
    var seen = download.requests
    return try withoutActuallyEscaping(record) { record in
      try body { attempt in
        var attempt = attempt
        if attempt.call == nil && download.requests != seen {
          attempt.bytes = download.lastBytes
          attempt.wireBytes = download.lastWireBytes
          if download.lastOffset > 0 { attempt.resumedFrom = download.lastOffset }
        }
        seen = download.requests
        record(attempt)
      }
    }
  }

  /// The answer's version headers: `Content-Version: v6` for full data, `"delta v2-v6"` for
  /// a delta (platform-api.md §3), whose start and end are kept apart for the caller to check
  /// (`AnswerHead.deltaProblem`).
  static func head(_ response: HTTPResponse) -> AnswerHead {
    var version = response.headers["Content-Version"]?.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
    var isDelta = false
    var deltaFrom: String?
    if let v = version, v.lowercased().hasPrefix("delta ") {
      isDelta = true
      let range = v.dropFirst("delta ".count).trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
      version = range.count == 2 ? String(range[1]) : nil
      deltaFrom = range.count == 2 ? String(range[0]) : nil
    }
    var head = AnswerHead(
      status: response.status, etag: response.headers["ETag"], contentVersion: version, isDelta: isDelta,
      cacheHash: response.headers["Cache-Hash-Value"], deltaFrom: deltaFrom)
    let type = response.headers["Content-Type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
    if type != "application/json" && !type.hasSuffix("+json") { head.unexpectedKind = response.describedKind }
    return head
  }

  // MARK: Files (platform-api.md §5)

  /// `GET directory/<connection>/?directory=<path>`: the listing's JSON.
  public func listDirectory(connection: String, path: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> JSONValue {
    let request = request(.get, "directory/\(PlatformClient.pathSegment(connection))/?directory=\(Redactor.percentEncoded(path))")
    return try smallJSON(request, what: "directory listing", policy: policy, record: record)
  }

  /// `GET file/<connection>/meta/?file=<path>`: the stat dump's JSON.
  public func fileMeta(connection: String, path: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> JSONValue {
    let request = request(.get, "file/\(PlatformClient.pathSegment(connection))/meta/?file=\(Redactor.percentEncoded(path))")
    return try smallJSON(request, what: "file meta answer", policy: policy, record: record)
  }

  /// `GET file/<connection>/?file=<path>` into `download` (resumable).
  public func getFile(connection: String, path: String, download: Download, policy: RetryPolicy, record: (Attempt) -> Void) throws {
    var request = request(.get, "file/\(PlatformClient.pathSegment(connection))/?file=\(Redactor.percentEncoded(path))")
    request.acceptEncoding = compressedAnswers
    _ = try recordingDownload(download, record) { record in
      try send(request, policy: policy, transactionID: nil, record: record) {
        try download.attempt($0, client: http, transactionID: nil)
      }
    }
    try download.complete()
  }

  /// `PUT file/<connection>/?file=<path>` with the local file streamed as the body.
  public func putFile(connection: String, path: String, localFile: String, policy: RetryPolicy, record: (Attempt) -> Void) throws {
    var request = request(
      .put, "file/\(PlatformClient.pathSegment(connection))/?file=\(Redactor.percentEncoded(path))", body: .file(localFile))
    let name = (path as NSString).lastPathComponent.replacing("\"", with: "")
    request.headers.set("Content-Disposition", "inline; filename=\"\(name)\"")
    request.headers.set("Content-Type", "application/octet-stream")
    _ = try small(request, policy: policy, record: record)
  }

  /// `DELETE file/<connection>/?file=<path>`.
  /// - Returns: nil when the file was deleted; the server's answer when it was 404 (no such
  ///   file), for the caller to report or accept.
  /// - Throws: `TransportError`, `PlatformError` for every other failure.
  public func deleteFile(connection: String, path: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> HTTPStatusError? {
    let request = request(.delete, "file/\(PlatformClient.pathSegment(connection))/?file=\(Redactor.percentEncoded(path))")
    do {
      _ = try small(request, policy: policy, record: record)
      return nil
    } catch TransportError.httpStatus(let e) where e.status == 404 {
      return e
    }
  }

  /// A resource or connection name as one URL path segment.
  static func pathSegment(_ name: String) -> String { Redactor.percentEncoded(name) }
}
