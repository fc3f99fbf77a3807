internal import DrayJSON
public import DrayModel
public import DrayTransport
internal import Foundation

/// Calls the platform's API for one thread of work (platform-api.md).
///
/// Every call carries the session's token (signing in first when needed), retries under the
/// step's policy, and meets a 401 with one new token and one repeat (`PlatformSession`). A
/// call that may change data (POST) is retried only when it carries an `X-Transaction-ID`,
/// kept the same on every attempt, or when no byte of it reached the server.
public final class PlatformClient {
  public let session: PlatformSession
  public let http: HTTPClient
  public var cancellation: Cancellation { http.cancellation }
  /// Time limits of this client's calls (a step's `timeouts`); the platform's by default.
  public var timeouts: Timeouts

  public init(session: PlatformSession, cancellation: Cancellation) {
    self.session = session
    self.http = HTTPClient(cancellation: cancellation)
    self.timeouts = session.settings.timeouts
  }

  // MARK: Calls

  /// Sends a request built for the platform and returns the 2xx answer's head.
  /// - Parameters:
  ///   - perform: sends one attempt (to a sink or a download) and returns the answer's head.
  /// - Throws: `TransportError` (the last attempt's, or `.gaveUp` saying why retrying
  ///   stopped), `PlatformError`.
  func send(
    _ request: HTTPRequest, policy: RetryPolicy, transactionID: String?, record: (Attempt) -> Void,
    perform: (HTTPRequest) throws -> HTTPResponse
  ) throws -> HTTPResponse {
    let runner = RetryRunner(policy: policy, cancellation: cancellation)
    var reauthenticated = false
    // The token a 401 refused; the next attempt replaces it first.
    var refused: String?
    var request = request
    request.repeatable = request.method.isIdempotent || transactionID != nil
    if let transactionID { request.headers.set("X-Transaction-ID", transactionID) }
    return try withoutActuallyEscaping(record) { record in
      try runner.run(
        { _ in
          if let stale = refused {
            refused = nil
            _ = try session.renew(stale: stale, because: "the token was refused (401)", client: http, runner: runner, record: record)
          }
          let token = try session.token(client: http, runner: runner, record: record)
          var sent = request
          sent.headers.set("Authorization", "Bearer \(token)")
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
        },
        classify: { [http] error in
          if case .reauthenticated? = error as? PlatformError { return .repeatNow }
          guard (error as? TransportError)?.isTransient == true else { return .fail(reason: nil) }
          if request.repeatable || http.bytesSent == 0 { return .retry }
          return .fail(
            reason: "not retried: a \(request.method.rawValue) may change data on the server, part of it was sent, "
              + "and it carries no X-Transaction-ID")
        },
        record: record)
    }
  }

  private func request(_ method: HTTPMethod, _ path: String, body: HTTPBody = .none, contentType: String? = nil) -> HTTPRequest {
    var headers = HTTPHeaders(session.settings.headers)
    if let contentType { headers.set("Content-Type", contentType) }
    return HTTPRequest(
      method: method, url: session.url(path), headers: headers, body: body, timeouts: timeouts, tls: session.settings.tls)
  }

  /// Sends a call whose answer is small and returns its bytes.
  private func small(_ request: HTTPRequest, policy: RetryPolicy, transactionID: String? = nil, record: (Attempt) -> Void) throws -> (
    HTTPResponse, [UInt8]
  ) {
    let sink = MemorySink()
    let response = try send(request, policy: policy, transactionID: transactionID, record: record) { try http.perform($0, sink: sink) }
    return (response, sink.bytes)
  }

  // MARK: Schemes (platform-api.md §2)

  /// The schemes of every resource the user may read, by name order.
  /// - Throws: `TransportError`, `PlatformError`.
  public func schemes(policy: RetryPolicy, record: (Attempt) -> Void) throws -> [ResourceScheme] {
    let request = request(.get, "schema/")
    let (_, bytes) = try small(request, policy: policy, record: record)
    guard let json = try? JSONValue(parsing: bytes), case .object(let resources) = json else {
      throw PlatformError.badAnswer(url: request.url, detail: "the schema answer is not a JSON object keyed by resource")
    }
    return try resources.map { try PlatformClient.scheme(name: $0.key, $0.value, url: request.url) }.sorted { $0.name < $1.name }
  }

  static func scheme(name: String, _ value: JSONValue, url: String) throws -> ResourceScheme {
    guard case .object = value else { throw PlatformError.badAnswer(url: url, detail: "resource '\(name)' is not an object") }
    var outputs: [ResourceScheme.Table] = []
    for table in value["output"]?.arrayValue ?? [] {
      guard let tableName = table["name"]?.stringValue else {
        throw PlatformError.badAnswer(url: url, detail: "an output table of '\(name)' has no name")
      }
      let columns = (table["columns"]?.arrayValue ?? []).map {
        ResourceScheme.Column(name: $0["name"]?.stringValue ?? "", type: $0["type"]?.stringValue ?? "TEXT")
      }
      outputs.append(ResourceScheme.Table(name: tableName, columns: columns))
    }
    var lifetime: Int?
    switch value["lifetime"] {
    case .integer(let i)?: lifetime = Int(i)
    case .number(let n)?: lifetime = Int(Double(n) ?? 0)
    default: lifetime = nil
    }
    return ResourceScheme(
      name: name, type: value["type"]?.stringValue ?? "tabular", lifetime: lifetime, outputs: outputs, json: value.json)
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
  }

  /// Posts `params` to `rpc/<resource>/` and streams the answer into `download`.
  /// - Parameters:
  ///   - delta: the version held (`v6`) to ask for a delta from, or nil for full data.
  /// - Throws: `TransportError`, `PlatformError`.
  public func rpc(
    resource: String, params: JSONValue, delta: String?, transactionID: String?, download: Download,
    policy: RetryPolicy, record: (Attempt) -> Void
  ) throws -> AnswerHead {
    var request = request(
      .post, "rpc/\(PlatformClient.pathSegment(resource))/", body: .bytes(Array(params.json.utf8)), contentType: "application/json")
    if let delta { request.headers.set("X-Delta", "\(delta)-last") }
    let response = try recordingDownload(download, record) { record in
      try send(request, policy: policy, transactionID: transactionID, record: record) {
        try download.attempt($0, client: http, transactionID: transactionID)
      }
    }
    try download.complete()
    return PlatformClient.head(response)
  }

  /// Runs `body` with `record` wrapped so that each of the call's own attempts also
  /// records the bytes its download received and the offset it resumed from.
  private func recordingDownload<T>(
    _ download: Download, _ record: (Attempt) -> Void, _ body: ((Attempt) -> Void) throws -> T
  ) rethrows -> T {
    var seen = download.requests
    return try withoutActuallyEscaping(record) { record in
      try body { attempt in
        var attempt = attempt
        if attempt.call == nil && download.requests != seen {
          attempt.bytes = download.lastBytes
          if download.lastOffset > 0 { attempt.resumedFrom = download.lastOffset }
        }
        seen = download.requests
        record(attempt)
      }
    }
  }

  static func head(_ response: HTTPResponse) -> AnswerHead {
    var version = response.headers["Content-Version"]?.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
    var isDelta = false
    if let v = version, v.lowercased().hasPrefix("delta ") {
      isDelta = true
      version = v.split(separator: "-").last.map(String.init)
    }
    return AnswerHead(
      status: response.status, etag: response.headers["ETag"], contentVersion: version, isDelta: isDelta,
      cacheHash: response.headers["Cache-Hash-Value"])
  }

  // MARK: Files (platform-api.md §5)

  /// `GET directory/<connection>/?directory=<path>`: the listing's JSON.
  public func listDirectory(connection: String, path: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> JSONValue {
    let request = request(.get, "directory/\(PlatformClient.pathSegment(connection))/?directory=\(Redactor.percentEncoded(path))")
    let (_, bytes) = try small(request, policy: policy, record: record)
    guard let json = try? JSONValue(parsing: bytes) else {
      throw PlatformError.badAnswer(url: request.url, detail: "the directory listing is not JSON")
    }
    return json
  }

  /// `GET file/<connection>/meta/?file=<path>`: the stat dump's JSON.
  public func fileMeta(connection: String, path: String, policy: RetryPolicy, record: (Attempt) -> Void) throws -> JSONValue {
    let request = request(.get, "file/\(PlatformClient.pathSegment(connection))/meta/?file=\(Redactor.percentEncoded(path))")
    let (_, bytes) = try small(request, policy: policy, record: record)
    guard let json = try? JSONValue(parsing: bytes) else {
      throw PlatformError.badAnswer(url: request.url, detail: "the file meta answer is not JSON")
    }
    return json
  }

  /// `GET file/<connection>/?file=<path>` into `download` (resumable).
  public func getFile(connection: String, path: String, download: Download, policy: RetryPolicy, record: (Attempt) -> Void) throws {
    let request = request(.get, "file/\(PlatformClient.pathSegment(connection))/?file=\(Redactor.percentEncoded(path))")
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
