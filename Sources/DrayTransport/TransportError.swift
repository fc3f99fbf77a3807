public import DrayModel

/// An error with a stable code for run reports, and a message for people.
///
/// Adopted by `TransportError` here and by the platform client's errors, so that the retry
/// runner records any of them the same way.
public protocol ReportableError: Error, CustomStringConvertible {
  /// A stable identifier for reports and scripts (`connection_refused`, `http_503`, ...).
  var code: String { get }
  /// The HTTP status behind the error, when an answer came.
  var httpStatus: Int? { get }
}

extension ReportableError {
  public var httpStatus: Int? { nil }
}

/// Why an HTTP call failed, in classes a user can act on.
///
/// `code` is stable and goes into run reports; `description` says what failed, where (the
/// host or the URL, never with credentials), and what to check. URLs in messages come from
/// `HTTPClient.displayURL(_:)`, which drops any `user:password@`.
public enum TransportError: ReportableError, Sendable, Equatable {
  public enum TimeoutKind: String, Sendable, Equatable {
    /// No connection within `timeouts.connect`.
    case connect
    /// The whole request took longer than `timeouts.request`.
    case request
    /// No byte arrived for `timeouts.idle`.
    case idle
  }

  /// The host name did not resolve.
  case dnsFailure(host: String)
  /// The proxy's host name, from the environment (`http_proxy`, `https_proxy`,
  /// `all_proxy`), did not resolve: libcurl's message, which names it.
  case proxyDNSFailure(detail: String)
  /// Nothing listens at the address (`host:port`).
  case connectionRefused(host: String)
  /// The connection closed or was reset before an answer's head arrived.
  case connectionReset(url: String, detail: String)
  /// A time limit passed; `limit` is the limit that fired.
  case timeout(TimeoutKind, url: String, limit: Duration)
  /// The TLS handshake or the certificate check failed.
  case tlsFailure(host: String, detail: String)
  /// A non-2xx answer, with the platform's error body when it sent one.
  case httpStatus(HTTPStatusError)
  /// The connection closed before the whole body arrived (`received` body bytes came).
  case truncated(url: String, received: Int64, detail: String)
  /// A resumed answer did not fit the part held (another ETag, a range that starts after
  /// the part's end, a size that does not add up); the part was discarded.
  case resumeMismatch(url: String, detail: String)
  /// A resume the server refused (`status`: `412` to `If-Match`, or `416` to a range that
  /// does not end the answer); the part was discarded and the call is asked again from
  /// byte 0 at once, without using a retry.
  case resumeRestart(url: String, status: Int, detail: String)
  /// A redirect could not be followed: too many, a loop, or an unusable `Location`.
  case redirect(url: String, detail: String)
  /// A `307` or `308` asked to send a body that holds a secret (`HTTPRequest.secretBody`)
  /// to `target`, another origin than the one the secret was written for; or a `301`,
  /// `302` or `303` would turn a request that must keep its method
  /// (`HTTPRequest.keepsMethod`: a login, a token request) into a `GET` to `target` (its
  /// whole address): not followed. `setting` names the manifest setting that gives the
  /// address.
  case secretRedirect(url: String, status: Int, target: String, setting: String)
  /// `last` met the target of a redirect: the `status` answer of `from` named `to`, and
  /// reaching `to` failed (a host that does not resolve, a refused connection, a timeout,
  /// TLS, a cut answer), so that the message says the failing address is the redirect's,
  /// not the manifest's. Keeps `last`'s code, status and retry class (`underlying`).
  indirect case afterRedirect(last: TransportError, status: Int, from: String, to: String)
  /// The run was cancelled (a signal, or the engine).
  case cancelled
  /// An answer kept in memory grew past `limit` bytes.
  case bodyTooLarge(limit: Int)
  /// The server said to wait (`Retry-After`, `seconds`) longer than `retry.max_retry_after`.
  case retryAfterTooLong(HTTPStatusError, seconds: Double, limit: Duration)
  /// Retrying stopped (`reason` says why: retries used up, `max_elapsed`, or a call that
  /// may not be repeated); `last` is the last attempt's error.
  indirect case gaveUp(last: TransportError, reason: String)
  /// The call was not tried again although `last` is transient: the caller's rule refused
  /// (`RetryDecision.fail(reason:)`; `reason` says why, e.g. a `POST` that may have changed
  /// data on the server). A later run would send it again too: no service outage to wait out.
  indirect case notRepeated(last: TransportError, reason: String)
  /// A local file could not be read or written.
  case file(path: String, detail: String)
  /// The server's answer could not be read as HTTP allows: `detail` says how (a response
  /// header longer than libcurl's `CURL_MAX_HTTP_HEADER`, 100 KB). Not retried: the same
  /// server sends the same answer again.
  case badAnswer(url: String, detail: String)
  /// libcurl refused an option of the request before sending it (a feature it was built
  /// without). Not retried: the next attempt would be refused the same way.
  case setup(url: String, detail: String)
  /// A header field of the request holds what a header cannot carry (`found`: "a line
  /// break", "a NUL character", `HTTPHeader.unsafeCharacter(in:)`), so it was not sent:
  /// the last line of defence against header injection, for a value validation could not
  /// see (a token from an answer). Not retried: the value would be the same.
  case headerRefused(url: String, name: String, found: String)
  /// Anything else libcurl reported.
  case other(url: String, detail: String)
  /// A replay (`dray run --replay DIR`) met a request its recording does not hold:
  /// `request` is its method and URL, `body` its body's start, `nearest` the recorded
  /// request closest to it. Not retried: the recording answers the same way again.
  case notRecorded(request: String, body: String?, nearest: String?, recording: String)

  /// A stable identifier for reports and scripts. `gaveUp` keeps its last error's code.
  public var code: String {
    switch self {
    case .dnsFailure, .proxyDNSFailure: "dns_failure"
    case .connectionRefused: "connection_refused"
    case .connectionReset: "connection_reset"
    case .timeout(let kind, _, _): "timeout_\(kind.rawValue)"
    case .tlsFailure: "tls_failure"
    case .httpStatus(let e): "http_\(e.status)"
    case .truncated: "body_truncated"
    case .resumeMismatch: "resume_mismatch"
    case .resumeRestart: "resume_restart"
    case .redirect, .secretRedirect: "redirect_failed"
    case .cancelled: "cancelled"
    case .bodyTooLarge: "body_too_large"
    case .retryAfterTooLong: "retry_after_too_long"
    case .gaveUp(let last, _), .notRepeated(let last, _), .afterRedirect(let last, _, _, _): last.code
    case .file: "file_error"
    case .badAnswer: "bad_answer"
    case .setup: "transport_setup"
    case .headerRefused: "header_refused"
    case .other: "transport_error"
    case .notRecorded: "not_recorded"
    }
  }

  public var httpStatus: Int? {
    switch self {
    case .httpStatus(let e), .retryAfterTooLong(let e, _, _): e.status
    case .resumeRestart(_, let status, _): status
    case .gaveUp(let last, _), .notRepeated(let last, _), .afterRedirect(let last, _, _, _): last.httpStatus
    default: nil
    }
  }

  /// The error below any `gaveUp`, `notRepeated` or `afterRedirect`.
  public var underlying: TransportError {
    switch self {
    case .gaveUp(let last, _), .notRepeated(let last, _), .afterRedirect(let last, _, _, _): last.underlying
    default: self
    }
  }

  /// A number of up to 40 digits as it is; a longer one as its first 20 digits and its length.
  static func shortDigits(_ digits: String) -> String {
    digits.count <= 40 ? digits : "\(digits.prefix(20))… (a number of \(digits.count) digits)"
  }

  public var description: String {
    switch self {
    case .dnsFailure(let host):
      "cannot resolve host '\(host)' (DNS failure); check the host name in the manifest (platform.host or base_url) and the network"
    case .proxyDNSFailure(let detail):
      "cannot reach the proxy (\(detail)); check http_proxy, https_proxy and all_proxy in dray's environment, "
        + "or list the host in no_proxy to reach it directly"
    case .connectionRefused(let host):
      "cannot connect to \(host): connection refused; check that the server is running and the port is right"
    case .connectionReset(let url, let detail):
      "the connection to \(HTTPClient.hostAndPort(url)) closed before an answer to \(url) (\(detail)); "
        + "check the server's log and any proxy or load balancer in between"
    case .timeout(let kind, let url, let limit):
      switch kind {
      case .connect:
        "could not connect to \(HTTPClient.hostAndPort(url)) within \(limit.formatted) (connect timeout); "
          + "check the address and firewalls, or raise timeouts.connect"
      case .request:
        "\(url) took longer than \(limit.formatted) (request timeout); raise timeouts.request, or check why the server is slow"
      case .idle:
        "no data from \(url) for \(limit.formatted) (idle timeout); the server stalled, or raise timeouts.idle"
      }
    case .tlsFailure(let host, let detail):
      "TLS with \(host) failed (\(detail)); check the server's certificate, or set tls.ca_file to the CA that signed it"
    case .httpStatus(let e): e.description
    case .truncated(let url, let received, let detail):
      "the answer from \(url) was cut short after \(received) bytes (\(detail)); the connection dropped mid-answer"
    case .resumeMismatch(let url, let detail):
      "cannot resume the download from \(url): \(detail); the partial file was discarded"
    case .resumeRestart(let url, let status, let detail):
      "HTTP \(status) \(HTTPStatusError.reason(status)) from \(url): \(detail); the partial file was discarded and the answer asked again from byte 0"
    case .redirect(let url, let detail):
      "cannot follow the redirect from \(url): \(detail); check the address in the manifest (platform.host or base_url)"
    case .secretRedirect(let url, let status, let target, let setting) where [301, 302, 303].contains(status):
      "refused to follow the \(status) redirect from \(url) to \(target): a \(status) would send the request again as a GET, "
        + "without its body and the credentials in it; point \(setting) at the final address, which takes the POST"
    case .secretRedirect(let url, let status, let target, let setting):
      "refused to follow the \(status) redirect from \(url) to another origin, \(target): the request's body holds credentials, "
        + "which a \(status) would send there again; point \(setting) at the final address (on \(target)) if that server is meant to have them"
    case .cancelled: "cancelled"
    case .bodyTooLarge(let limit): "the answer is larger than \(limit) bytes, the most kept in memory"
    case .retryAfterTooLong(let e, let seconds, let limit):
      // The server's own digits: `Retry-After: 9223372036854775808` is past Int and would
      // show as a Double (9.223372036854776e+18); a date shows the seconds until it.
      "\(e); the server asked to wait \(e.retryAfterDigits.map(Self.shortDigits) ?? String(Int(min(seconds, 9e18).rounded()))) s before retrying (Retry-After), "
        + "longer than retry.max_retry_after (\(limit.formatted)); giving up. Raise retry.max_retry_after to wait that long"
    case .gaveUp(let last, let reason), .notRepeated(let last, let reason): "\(last); \(reason)"
    case .afterRedirect(let last, let status, let from, let to):
      "after following the \(status) redirect from \(from) to \(to): \(last) (the address that failed is the redirect's target, "
        + "not the one in the manifest; check the server that sent the redirect, or point the manifest at the final address)"
    case .file(let path, let detail): "cannot use file \(path): \(detail)"
    case .badAnswer(let url, let detail):
      "the answer from \(url) is not one dray can read: \(detail); not retried, as the server would send the same again. Fix the server, or the proxy in between"
    case .setup(let url, let detail): "cannot send the request to \(url): \(detail); this libcurl lacks a feature dray needs"
    case .headerRefused(let url, let name, let found):
      "refused to send the request to \(url): the header field '\(name)' holds \(found), which would end the field and start "
        + "another one (header injection); nothing was sent. Check where its value comes from (a token file, a sign-in's answer)"
    case .other(let url, let detail): "request to \(url) failed: \(detail)"
    case .notRecorded(let request, let body, let nearest, let recording):
      "the recording \(recording) holds no answer to \(request)" + (body.map { " with body \(PrintableText.oneLine($0))" } ?? "")
        + (nearest.map { "; the nearest recorded request is \($0)" } ?? "")
        + "; the manifest changed since it was recorded: record it again (dray run JOB.yaml --record \(recording))"
    }
  }

  /// Whether another attempt may succeed: DNS and connection errors, timeouts, truncated
  /// bodies, a discarded resume, libcurl's other errors, and the statuses 408, 429, 500,
  /// 502, 503, 504.
  public var isTransient: Bool {
    switch self {
    case .dnsFailure, .proxyDNSFailure, .connectionRefused, .connectionReset, .timeout, .truncated, .resumeMismatch, .resumeRestart,
      .other:
      true
    case .httpStatus(let e): HTTPStatusError.transientStatuses.contains(e.status)
    case .afterRedirect(let last, _, _, _): last.isTransient
    default: false
    }
  }
}

/// A non-2xx answer.
public struct HTTPStatusError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Statuses retried by default (RFC 9110 §15.5.9, §15.6; RFC 6585 §4 for 429).
  public static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

  public var status: Int
  /// The URL asked, without credentials.
  public var url: String
  /// The platform's `description`, when the body was an error object.
  public var serverDescription: String?
  /// The data source's own messages (`original_descriptions`, or `original_description`).
  public var originalDescriptions: [String]
  /// The start of a body that was not a platform error object.
  public var bodyExcerpt: String?
  /// Seconds from `Retry-After`, when sent.
  public var retryAfter: Double?
  /// `Retry-After`'s delay-seconds digits as the server sent them (nil for an HTTP-date),
  /// so that a message repeats the server's number instead of a rounded Double.
  public var retryAfterDigits: String?

  public init(
    status: Int, url: String, serverDescription: String? = nil, originalDescriptions: [String] = [], bodyExcerpt: String? = nil,
    retryAfter: Double? = nil
  ) {
    self.status = status
    self.url = url
    self.serverDescription = serverDescription
    self.originalDescriptions = originalDescriptions
    self.bodyExcerpt = bodyExcerpt
    self.retryAfter = retryAfter
  }

  /// The start of an error answer's body for a message (`bodyExcerpt`): one line without
  /// control characters (`PrintableText.oneLine`), at most `limit` characters. An HTML page
  /// (`Content-Type: text/html`, or a body that starts like one) is given as its text: no
  /// tags, scripts, styles or comments, entities decoded, whitespace collapsed; its markup
  /// would fill the message. Nil for an empty body.
  public static func excerpt(of response: HTTPResponse, limit: Int) -> String? {
    var text = String(decoding: response.errorBody, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    let contentType = response.headers["Content-Type"]?.lowercased() ?? ""
    let start = text.prefix(15).lowercased()
    if contentType.hasPrefix("text/html") || start.hasPrefix("<!doctype html") || start.hasPrefix("<html") {
      text = "(an HTML page) " + htmlText(text)
    }
    text = PrintableText.oneLine(text)
    if text.count > limit { text = String(text.prefix(limit)) + "…" }
    return text.isEmpty ? nil : text
  }

  /// The text of an HTML page: what its tags enclose, without scripts, styles and comments,
  /// the common entities decoded, runs of whitespace as one space.
  static func htmlText(_ html: String) -> String {
    var rest = Substring(html)
    var out = ""
    while let open = rest.firstIndex(of: "<") {
      out += rest[..<open]
      rest = rest[open...]
      let lower = rest.prefix(8).lowercased()
      let close = lower.hasPrefix("<!--") ? "-->" : lower.hasPrefix("<script") ? "</script>" : lower.hasPrefix("<style") ? "</style>" : ">"
      guard let end = rest.range(of: close, options: .caseInsensitive) else { return collapse(out) }
      rest = rest[end.upperBound...]
      out += " "
    }
    out += rest
    for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&nbsp;", " "), ("&amp;", "&")] {
      out = out.replacingOccurrences(of: entity, with: character)
    }
    return collapse(out)
  }

  private static func collapse(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
  }

  /// Reads `header`, the answer's `Retry-After` field, into `retryAfter` and
  /// `retryAfterDigits` (`RetryRunner.retryAfterSeconds`); nil leaves both nil.
  public mutating func readRetryAfter(_ header: String?) {
    guard let header else { return }
    retryAfter = RetryRunner.retryAfterSeconds(header)
    let digits = header.trimmingCharacters(in: .whitespaces)
    if retryAfter != nil, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
      retryAfterDigits = digits
    }
  }

  /// This error with every secret of `redactor` masked in what the server said (a careless
  /// server may echo the request's `Authorization` header or form fields).
  public func redacted(by redactor: Redactor) -> HTTPStatusError {
    var out = self
    out.serverDescription = serverDescription.map(redactor.redact)
    out.originalDescriptions = originalDescriptions.map(redactor.redact)
    out.bodyExcerpt = bodyExcerpt.map(redactor.redact)
    return out
  }

  /// What the server said is shown as one line without control characters
  /// (`PrintableText.oneLine`), so that it can neither pass for lines of dray's own nor
  /// drive a terminal.
  public var description: String {
    let reason = HTTPStatusError.reason(status)
    var out = "HTTP \(status)\(reason.isEmpty ? "" : " " + reason) from \(url)"
    if let serverDescription { out += ": \(PrintableText.oneLine(serverDescription))" }
    if !originalDescriptions.isEmpty {
      out += " (data source: \(originalDescriptions.map(PrintableText.oneLine).joined(separator: "; ")))"
    }
    if serverDescription == nil, let bodyExcerpt, !bodyExcerpt.isEmpty { out += ": \(PrintableText.oneLine(bodyExcerpt))" }
    return out
  }

  /// The reason phrase of `status` (RFC 9110 §15), empty for a status dray has no words for.
  public static func reason(_ status: Int) -> String {
    switch status {
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 412: "Precondition Failed"
    case 416: "Range Not Satisfiable"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 500: "Internal Server Error"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    default: ""
    }
  }
}
