internal import DrayModel

/// The rules for addresses and header fields, shared by `platform` and the `http` step, so
/// that a value that validates never fails later with libcurl's wording.
extension ManifestValidator {
  /// The characters of an HTTP field name besides letters and digits (`tchar`, RFC 9110 §5.6.2).
  static let headerNameSymbols = Set("!#$%&'*+-.^_`|~".unicodeScalars)

  /// Why `name` is not an HTTP field name (a `token` of RFC 9110 §5.1), or nil when it is.
  static func headerNameProblem(_ name: String) -> String? {
    let isToken =
      !name.isEmpty
      && name.unicodeScalars.allSatisfy {
        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || headerNameSymbols.contains($0))
      }
    if isToken { return nil }
    let shown = name.unicodeScalars.map { $0.value < 32 || $0.value == 127 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
      .joined()
    return "'\(shown)' is not an HTTP header name; a name holds ASCII letters, digits and !#$%&'*+-.^_`|~ only"
  }

  /// The problem with a header's value, or nil (`HTTPHeader.unsafeCharacter(in:)`): a line
  /// break would end the field and start another one (header injection), so a value is one
  /// line without control characters. The message never shows the value.
  static func headerValueProblem(_ value: String, path: String) -> String? {
    guard let found = HTTPHeader.unsafeCharacter(in: value) else { return nil }
    if found == "a line break" { return "'\(path)' must be one line; a header value cannot hold a line break" }
    return "'\(path)' holds \(found), which a header value cannot carry (RFC 9110 §5.5); remove it"
  }

  /// Why the authority (`host[:port]`) of `url`, an `http://` or `https://` address, is not
  /// one libcurl can use, or nil when it is: a port must be a number from 1 to 65535 (an
  /// empty one, `h:/`, means the scheme's default, RFC 3986 §3.2.3); an IPv6 address is
  /// written in brackets, `http://[::1]:8080/` (RFC 3986 §3.2.2).
  static func authorityProblem(_ url: String, path: String) -> String? {
    guard let scheme = url.range(of: "://") else { return nil }
    let authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    var host = authority
    if let at = host.lastIndex(of: "@") { host = host[host.index(after: at)...] }
    var port: Substring?
    if host.hasPrefix("[") {
      guard let close = host.firstIndex(of: "]") else {
        return "'\(path)' has a '[' without its ']'; write an IPv6 address in brackets, such as http://[::1]:8080/"
      }
      let literal = host[host.index(after: host.startIndex)..<close]
      let isIPv6 =
        literal.contains(":") && literal.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit || ":.%".unicodeScalars.contains($0) }
      guard isIPv6 else {
        return "'\(path)': '[\(literal)]' is not an IPv6 address; brackets hold an IPv6 address, such as http://[::1]:8080/"
      }
      let rest = host[host.index(after: close)...]
      if !rest.isEmpty {
        guard rest.hasPrefix(":") else {
          return "'\(path)': after ']' comes ':' and a port, or the path; found '\(rest)'"
        }
        port = rest.dropFirst()
      }
    } else if let colon = host.firstIndex(of: ":") {
      let after = host[host.index(after: colon)...]
      if after.contains(":") {
        return "'\(path)' holds an IPv6 address without brackets; write it in brackets, such as http://[::1]:8080/"
      }
      port = after
    }
    if let port, !port.isEmpty {
      let valid = port.count <= 5 && port.allSatisfy { $0.isASCII && $0.isNumber } && (1...65535).contains(Int(port) ?? 0)
      if !valid { return "'\(path)' has port '\(port)'; a port is a number from 1 to 65535" }
    }
    return nil
  }
}
