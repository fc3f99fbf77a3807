internal import DrayModel

/// Why an HTTP call failed, in classes a user can act on.
///
/// `code` is stable and goes into run reports; `description` says what to check.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
  public enum TimeoutKind: String, Sendable, Equatable {
    /// No connection within `timeouts.connect`.
    case connect
    /// The whole request took longer than `timeouts.request`.
    case request
    /// No byte arrived for `timeouts.idle`.
    case idle
  }

  case dnsFailure(host: String)
  case connectionRefused(host: String)
  case connectionReset(host: String, detail: String)
  case timeout(TimeoutKind, host: String, limit: Duration)
  case tlsFailure(host: String, detail: String)
  /// A non-2xx answer, with the platform's error body when it sent one.
  case httpStatus(HTTPStatusError)
  /// The connection closed before the whole body arrived.
  case truncated(host: String, received: Int64, detail: String)
  case cancelled
  case bodyTooLarge(limit: Int)
  /// The server said to wait longer than the retry policy allows.
  case retryAfterTooLong(seconds: Double, limit: Duration)
  /// A local file could not be read or written.
  case file(path: String, detail: String)
  /// Anything else libcurl reported.
  case other(host: String, detail: String)

  /// A stable identifier for reports and scripts.
  public var code: String {
    switch self {
    case .dnsFailure: "dns_failure"
    case .connectionRefused: "connection_refused"
    case .connectionReset: "connection_reset"
    case .timeout(let kind, _, _): "timeout_\(kind.rawValue)"
    case .tlsFailure: "tls_failure"
    case .httpStatus(let e): "http_\(e.status)"
    case .truncated: "body_truncated"
    case .cancelled: "cancelled"
    case .bodyTooLarge: "body_too_large"
    case .retryAfterTooLong: "retry_after_too_long"
    case .file: "file_error"
    case .other: "transport_error"
    }
  }

  public var description: String {
    switch self {
    case .dnsFailure(let host):
      "cannot resolve host '\(host)' (DNS failure); check platform.host and the network"
    case .connectionRefused(let host):
      "cannot connect to \(host): connection refused; check that the server is running and the port is right"
    case .connectionReset(let host, let detail):
      "connection to \(host) was reset (\(detail))"
    case .timeout(let kind, let host, let limit):
      switch kind {
      case .connect:
        "could not connect to \(host) within \(limit.formatted) (connect timeout); check the address and firewalls, or raise timeouts.connect"
      case .request: "request to \(host) took longer than \(limit.formatted) (request timeout); raise timeouts.request"
      case .idle: "no data from \(host) for \(limit.formatted) (idle timeout); the server stalled, or raise timeouts.idle"
      }
    case .tlsFailure(let host, let detail):
      "TLS handshake with \(host) failed (\(detail)); check the certificate, or tls.ca_file"
    case .httpStatus(let e): e.description
    case .truncated(let host, let received, let detail):
      "the answer from \(host) was cut short after \(received) bytes (\(detail))"
    case .cancelled: "cancelled"
    case .bodyTooLarge(let limit): "the answer is larger than \(limit) bytes, the most kept in memory"
    case .retryAfterTooLong(let seconds, let limit):
      "the server asked to wait \(Int(seconds.rounded())) s before retrying (Retry-After), longer than retry.max_interval (\(limit.formatted)); giving up"
    case .file(let path, let detail): "cannot use file \(path): \(detail)"
    case .other(let host, let detail): "request to \(host) failed: \(detail)"
    }
  }

  /// Whether another attempt may succeed: connection errors, timeouts, truncated bodies,
  /// and statuses 408, 429, 500, 502, 503, 504.
  public var isTransient: Bool {
    switch self {
    case .dnsFailure, .connectionRefused, .connectionReset, .timeout, .truncated: true
    case .httpStatus(let e): HTTPStatusError.transientStatuses.contains(e.status)
    case .other: true
    default: false
    }
  }
}

/// A non-2xx answer.
public struct HTTPStatusError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Statuses retried by default (RFC 9110 §15.5.9, §15.6; RFC 6585 §4 for 429).
  public static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

  public var status: Int
  public var url: String
  /// The platform's `description`, when the body was an error object.
  public var serverDescription: String?
  /// The data source's own messages (`original_descriptions`, or `original_description`).
  public var originalDescriptions: [String]
  /// The start of a body that was not a platform error object.
  public var bodyExcerpt: String?
  /// Seconds from `Retry-After`, when sent.
  public var retryAfter: Double?

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

  public var description: String {
    var out = "HTTP \(status) \(HTTPStatusError.reason(status)) from \(url)"
    if let serverDescription { out += ": \(serverDescription)" }
    if !originalDescriptions.isEmpty { out += " (data source: \(originalDescriptions.joined(separator: "; ")))" }
    if serverDescription == nil, let bodyExcerpt, !bodyExcerpt.isEmpty { out += ": \(bodyExcerpt)" }
    return out
  }

  static func reason(_ status: Int) -> String {
    switch status {
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
