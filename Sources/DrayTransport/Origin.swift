internal import Foundation

/// A URL's origin (RFC 6454 §4): its scheme and host in lower case, and its port, the
/// scheme's default port when the URL writes none, so that `https://a.test/` and
/// `https://A.test:443/` are one origin. Userinfo, path, query and fragment are no part of
/// it. Credentials go only to the origin they were given for: redirects (`RedirectState`)
/// and the `http` step's next-page links compare origins.
///
/// ```swift
/// Origin("HTTPS://user@API.example.com/v2?x=1")?.description  // "https://api.example.com:443"
/// Origin("http://[::1]:8080/")?.description  // "http://[::1]:8080"
/// ```
public struct Origin: Sendable, Hashable, CustomStringConvertible {
  /// The scheme, in lower case.
  public let scheme: String
  /// The host, in lower case; an IPv6 address without its brackets.
  public let host: String
  /// The port written, or the scheme's default port.
  public let port: Int

  /// The origin of `url`; nil when it has no scheme or no host, or writes no port and its
  /// scheme has no default port (`defaultPort(of:)`).
  public init?(_ url: String) {
    guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
      let host = components.host?.lowercased(), !host.isEmpty,
      let port = components.port ?? Origin.defaultPort(of: scheme)
    else { return nil }
    self.scheme = scheme
    self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    self.port = port
  }

  /// 80 for `http` and 443 for `https` (RFC 9110 §4.2.1, §4.2.2); nil for any other scheme.
  /// - Parameter scheme: in lower case.
  public static func defaultPort(of scheme: String) -> Int? {
    switch scheme {
    case "http": 80
    case "https": 443
    default: nil
    }
  }

  /// `scheme://host:port`, an IPv6 address in brackets: `https://api.example.com:443`.
  public var description: String {
    "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
  }
}
