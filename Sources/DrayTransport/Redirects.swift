internal import DrayModel
internal import Foundation

/// How dray follows redirects (RFC 9110 §15.4): at most `limit` of them, never around a
/// loop, and never carrying credentials to another origin.
///
/// `HTTPClient` asks libcurl not to follow redirects and uses this value instead, so that
/// the rules are ours and tested rather than a library default:
///
/// - `301`, `302` and `303` turn a `POST` into a `GET` without a body (`303` turns every
///   method but `HEAD` into `GET`), as browsers and libcurl do; `307` and `308` repeat the
///   method and the body; a request that must keep its method (`HTTPRequest.keepsMethod`:
///   a login, a token request) is not followed through a `301`, `302` or `303`;
/// - header fields that carry a secret go only to the origin (`Origin`) of the
///   first request; they are held back from any other origin and sent again if a later
///   redirect comes back. A field carries a secret when its name is a credential's
///   (`HTTPHeader.isSecretName`: `Authorization`, `Cookie`, `X-Api-Key`, `PRIVATE-TOKEN`,
///   `X-Password`, ...) or its value holds one of the job's secrets
///   (`HTTPHeader.holdsSecret`, set when the manifest is loaded);
/// - a body that holds a secret (`HTTPRequest.secretBody`: a login, a token request, a
///   body with one of the job's secrets) is never sent to another origin: a `307` or `308`
///   there throws `TransportError.secretRedirect`;
/// - a target visited before with the same method is a loop; a target that is not
///   `http` or `https` is refused.
///
/// ```swift
/// var redirects = RedirectState(url: request.url)
/// let next = try redirects.follow(request, status: 307, location: "http://other:8080/x")
/// // next.headers["Authorization"] == nil
/// ```
public struct RedirectState: Sendable, Equatable {
  /// Redirects followed before giving up (libcurl's and most browsers' order of magnitude).
  public static let defaultLimit = 5

  public let limit: Int
  /// `METHOD url` of every request sent so far, the first included.
  public private(set) var visited: [String]
  private let origin: Origin?
  private var credentials: [HTTPHeader] = []

  /// - Parameters:
  ///   - url: the first request's URL.
  ///   - limit: the most redirects followed.
  public init(url: String, method: HTTPMethod = .get, limit: Int = RedirectState.defaultLimit) {
    self.limit = limit
    self.visited = ["\(method.rawValue) \(url)"]
    self.origin = Origin(url)
  }

  /// Whether `status` asks to repeat the request elsewhere (RFC 9110 §15.4).
  public static func isRedirect(_ status: Int) -> Bool { [301, 302, 303, 307, 308].contains(status) }

  /// Redirects followed so far.
  public var count: Int { visited.count - 1 }

  /// The request to send after `request` was answered with `status` and `location`.
  /// - Parameters:
  ///   - location: the `Location` field, absolute or relative to `request.url`.
  /// - Throws: `TransportError.redirect` with no `Location`, a target that is not http(s),
  ///   a loop, or more than `limit` redirects.
  ///   `TransportError.secretRedirect` for a body with a secret sent on to another origin.
  public mutating func follow(_ request: HTTPRequest, status: Int, location: String?) throws(TransportError) -> HTTPRequest {
    let from = HTTPClient.displayURL(request.url)
    guard let location, !location.isEmpty,
      let target = URL(string: location, relativeTo: URL(string: request.url))?.absoluteURL.absoluteString
    else {
      throw .redirect(url: from, detail: "the \(status) answer has no usable Location")
    }
    let scheme = target.prefix { $0 != ":" }.lowercased()
    guard scheme == "http" || scheme == "https" else {
      throw .redirect(url: from, detail: "it points to \(HTTPClient.displayURL(target)), which is not http or https")
    }
    guard count < limit else {
      throw .redirect(url: from, detail: "more than \(limit) redirects")
    }
    var next = request
    next.url = target
    if request.keepsMethod, [301, 302, 303].contains(status), request.method != .get && request.method != .head {
      throw .secretRedirect(url: from, status: status, target: HTTPClient.displayURL(target), setting: request.secretBody ?? "the URL")
    }
    let dropsBody = (status == 303 && request.method != .head) || ((status == 301 || status == 302) && request.method == .post)
    if dropsBody {
      next.method = .get
      next.body = .none
      for name in ["Content-Type", "Content-Length", "Content-Disposition"] { next.headers.remove(name) }
    }
    // A body with credentials goes only to the origin it was written for (a 307 or 308
    // repeats it): refused rather than sent, or sent without them.
    if let setting = request.secretBody, next.body != .none, let origin, Origin(target) != origin {
      throw .secretRedirect(
        url: from, status: status, target: Origin(target)?.description ?? HTTPClient.displayURL(target), setting: setting)
    }
    let key = "\(next.method.rawValue) \(target)"
    guard !visited.contains(key) else {
      throw .redirect(url: from, detail: "a redirect loop back to \(HTTPClient.displayURL(target))")
    }
    visited.append(key)
    // Hold secrets back from other origins; give them back on the way home.
    let held = next.headers.fields.filter(\.isSecret)
    if !held.isEmpty { credentials = held }
    next.headers.removeAll(where: \.isSecret)
    if let origin, Origin(target) == origin {
      for field in credentials { next.headers.add(field) }
    }
    return next
  }
}

extension HTTPClient {
  /// `error`, met sending to `target`, as `TransportError.afterRedirect` when a redirect led
  /// there and the error is about reaching it (DNS, connection, timeout, TLS, a cut answer,
  /// libcurl's other errors): their messages name a host or a URL that the manifest does not
  /// hold. Any other error (cancelled, a sink's, a refused header) as it is.
  static func afterRedirect(_ error: any Error, _ redirectedBy: (status: Int, from: String)?, to target: String) -> any Error {
    guard let redirectedBy, let transport = error as? TransportError else { return error }
    switch transport {
    case .dnsFailure, .proxyDNSFailure, .connectionRefused, .connectionReset, .timeout, .tlsFailure, .truncated, .other:
      return TransportError.afterRedirect(
        last: transport, status: redirectedBy.status, from: redirectedBy.from, to: HTTPClient.displayURL(target))
    default:
      return error
    }
  }
}
