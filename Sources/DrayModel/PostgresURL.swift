/// A PostgreSQL connection URL, parsed and checked: `database.url` of a manifest.
///
/// The shape is libpq's connection URI (PostgreSQL 15 documentation, §34.1.1.2 "Connection
/// URIs"):
///
/// ```
/// postgresql://[user[:password]@][host][:port][/dbname][?name=value[&...]]
/// ```
///
/// `postgres://` is accepted too. Every part may be percent-encoded (`%40` for `@`); a host
/// in square brackets is an IPv6 address (`[::1]:5432`); an empty host with
/// `?host=/run/postgresql` names the folder of a unix-domain socket. Query parameters are
/// libpq's connection keywords (§34.1.2 "Parameter Key Words", `PostgresURL.keywords`), such
/// as `sslmode`, `connect_timeout` or `application_name`; `user`, `password`, `host`, `port`
/// and `dbname` may be given there instead of in the URL, but not in both places.
///
/// The parser is ours, in pure Swift, so that manifest validation can check a URL without
/// libpq and say precisely what is wrong; `DrayPostgres` hands libpq the parsed keywords, so
/// libpq never reads the text again. One host per URL: libpq's lists of hosts
/// (`host1,host2`) are refused.
///
/// ```swift
/// let url = try PostgresURL("postgresql://loader:s%40cret@[::1]:5433/warehouse?sslmode=require")
/// url.host       // "::1"
/// url.password   // "s@cret"
/// url.redacted   // "postgresql://loader:***@[::1]:5433/warehouse?sslmode=require"
/// ```
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
  /// A query parameter other than the five parts above, in the order written.
  public struct Parameter: Sendable, Hashable {
    /// A libpq connection keyword, e.g. `sslmode`.
    public var name: String
    /// Its value, percent-decoded.
    public var value: String
    public init(name: String, value: String) {
      self.name = name
      self.value = value
    }
  }

  /// The role to connect as; nil for libpq's default (`PGUSER`, else the operating-system
  /// user).
  public var user: String?
  /// The password; nil when the URL has none (libpq then reads `PGPASSWORD`, `PGPASSFILE` or
  /// `~/.pgpass`). A secret: `redacted` and `description` never show it.
  public var password: String?
  /// A host name, an IPv4 or IPv6 address (without brackets), or a socket folder (an
  /// absolute path); nil for libpq's default.
  public var host: String?
  /// TCP port, 1...65535; nil for libpq's default (5432).
  public var port: Int?
  /// The database name; nil for libpq's default (the user name).
  public var database: String?
  /// Every other query parameter, percent-decoded, in the order written.
  public var parameters: [Parameter]

  /// Parses and checks `text`.
  ///
  /// - Throws: `PostgresURLError` naming the first problem and what to write instead; the
  ///   message never quotes the password.
  public init(_ text: String) throws(PostgresURLError) {
    var rest = Substring(text)
    guard let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") else {
      throw PostgresURLError("a PostgreSQL URL starts with postgresql:// or postgres://, such as \(Self.example)")
    }
    let scheme = rest[..<colon]
    guard scheme == "postgresql" || scheme == "postgres" else {
      let shown =
        scheme.count <= 20 && scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) ? "'\(scheme)://'" : "the scheme"
      throw PostgresURLError("\(shown) is not a PostgreSQL URL; write postgresql://user@host:port/database, such as \(Self.example)")
    }
    rest = rest[colon...].dropFirst(3)
    if rest.contains("#") {
      throw PostgresURLError("a PostgreSQL URL has no '#' part; percent-encode a '#' in a password or name as %23")
    }
    var query = Substring("")
    if let q = rest.firstIndex(of: "?") {
      query = rest[rest.index(after: q)...]
      rest = rest[..<q]
    }
    var path: Substring?
    if let slash = rest.firstIndex(of: "/") {
      path = rest[rest.index(after: slash)...]
      rest = rest[..<slash]
    }
    var hostPort = rest
    user = nil
    password = nil
    host = nil
    port = nil
    database = nil
    parameters = []
    if let at = rest.lastIndex(of: "@") {
      let userInfo = rest[..<at]
      hostPort = rest[rest.index(after: at)...]
      if let colon = userInfo.firstIndex(of: ":") {
        user = try Self.decode(userInfo[..<colon], "user name")
        password = try Self.decode(userInfo[userInfo.index(after: colon)...], "password")
      } else {
        user = try Self.decode(userInfo, "user name")
      }
    }
    if hostPort.contains(",") {
      throw PostgresURLError(
        "a list of hosts is not supported; name one host (a load balancer or DNS name in front of several servers works)")
    }
    try readHostPort(hostPort)
    if let path {
      database = try Self.decode(path, "database name")
    }
    try readQuery(query)
    if user == "" { user = nil }
    if host == "" { host = nil }
    if database == "" { database = nil }
  }

  /// `postgresql://loader@db.example.com:5432/warehouse`, the example messages show.
  public static let example = "postgresql://loader@db.example.com:5432/warehouse"

  private mutating func readHostPort(_ text: Substring) throws(PostgresURLError) {
    var portText: Substring?
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else {
        throw PostgresURLError("the IPv6 address '\(text)' has no closing ']'; write it as [::1] or [::1]:5432")
      }
      let address = text[text.index(after: text.startIndex)..<close]
      guard !address.isEmpty, address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" }) else {
        throw PostgresURLError("'\(text[...close])' is not an IPv6 address; write one in brackets, such as [::1] or [2001:db8::5]")
      }
      host = try Self.decode(address, "host")
      let after = text[text.index(after: close)...]
      if after.hasPrefix(":") {
        portText = after.dropFirst()
      } else if !after.isEmpty {
        throw PostgresURLError("'\(after)' after the IPv6 address '[\(address)]' is not a port; write [\(address)]:5432")
      }
    } else if let colon = text.lastIndex(of: ":") {
      host = try Self.decode(text[..<colon], "host")
      portText = text[text.index(after: colon)...]
    } else {
      host = try Self.decode(text, "host")
    }
    if let portText, !portText.isEmpty {
      port = try Self.port(String(portText))
    }
  }

  private mutating func readQuery(_ query: Substring) throws(PostgresURLError) {
    guard !query.isEmpty else { return }
    var seen: Set<String> = []
    for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
      guard let equals = pair.firstIndex(of: "=") else {
        throw PostgresURLError("the query parameter '\(pair)' has no value; write \(pair)=value")
      }
      let name = try Self.decode(pair[..<equals], "name of a query parameter")
      let isPassword = name == "password"
      let value = try Self.decode(pair[pair.index(after: equals)...], isPassword ? "password" : "value of '\(name)'")
      guard Self.keywords.contains(name) else {
        var message = "unknown query parameter '\(name)'"
        if let s = EditDistance.closest(to: name, among: Self.keywords) { message += " (did you mean '\(s)'?)" }
        message += "; the parameters are libpq's connection keywords: \(Self.keywordsDocument)"
        throw PostgresURLError(message)
      }
      guard seen.insert(name).inserted else {
        throw PostgresURLError("the query parameter '\(name)' is given twice; give it once")
      }
      try Self.check(name, value)
      func once(_ field: String?, _ part: String) throws(PostgresURLError) {
        if field != nil && field != "" {
          throw PostgresURLError("the \(part) is given twice, in the URL and as ?\(name)=; give it once")
        }
      }
      switch name {
      case "user":
        try once(user, "user name")
        user = value
      case "password":
        try once(password, "password")
        password = value
      case "host":
        try once(host, "host")
        host = value
      case "port":
        try once(port.map(String.init), "port")
        port = try Self.port(value)
      case "dbname":
        try once(database, "database name")
        database = value
      default:
        parameters.append(Parameter(name: name, value: value))
      }
    }
  }

  /// Values libpq would refuse only at connect time, and keywords dray cannot work with.
  private static func check(_ name: String, _ value: String) throws(PostgresURLError) {
    func oneOf(_ choices: [String]) throws(PostgresURLError) {
      guard choices.contains(value) else {
        throw PostgresURLError("\(name) '\(value)' is not one of \(choices.joined(separator: ", "))")
      }
    }
    switch name {
    case "sslmode": try oneOf(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"])
    case "gssencmode": try oneOf(["disable", "prefer", "require"])
    case "channel_binding": try oneOf(["disable", "prefer", "require"])
    case "target_session_attrs": try oneOf(["any", "read-write", "read-only", "primary", "standby", "prefer-standby"])
    case "connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout":
      guard let n = Int(value), n >= 0 else {
        throw PostgresURLError(
          "\(name) '\(value)' must be a whole number, 0 or more (\(name == "tcp_user_timeout" ? "milliseconds" : name == "keepalives_count" ? "a count" : "seconds"))"
        )
      }
    case "keepalives": try oneOf(["0", "1"])
    case "client_encoding":
      guard value.uppercased() == "UTF8" || value.uppercased() == "UTF-8" else {
        throw PostgresURLError("client_encoding '\(value)' is not supported: dray sends and reads UTF-8; remove the parameter")
      }
    case "replication":
      throw PostgresURLError("a replication connection cannot load tables; remove the 'replication' parameter")
    default: break
    }
  }

  private static func port(_ text: String) throws(PostgresURLError) -> Int {
    guard text.allSatisfy(\.isASCII), let n = Int(text), n >= 1, n <= 65535 else {
      throw PostgresURLError("the port '\(text)' is not a number from 1 to 65535")
    }
    return n
  }

  /// Percent-decodes one part of the URL (RFC 3986 §2.1), which must be UTF-8 afterwards.
  private static func decode(_ text: Substring, _ part: String) throws(PostgresURLError) -> String {
    guard text.contains("%") else { return String(text) }
    var bytes: [UInt8] = []
    var utf8 = text.utf8[...]
    while let byte = utf8.popFirst() {
      guard byte == UInt8(ascii: "%") else {
        bytes.append(byte)
        continue
      }
      let digits = utf8.prefix(2)
      guard digits.count == 2, let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16) else {
        if part == "password" {
          throw PostgresURLError("the password has a '%' that is not followed by two hex digits; write a literal % as %25")
        }
        throw PostgresURLError(
          "the \(part) has '%\(String(decoding: digits, as: UTF8.self))', which is not a percent-escape (% and two hex digits); write a literal % as %25"
        )
      }
      bytes.append(value)
      utf8 = utf8.dropFirst(2)
    }
    guard let decoded = String(validating: bytes, as: UTF8.self) else {
      throw PostgresURLError("the \(part) is not UTF-8 once percent-decoded; percent-encode its UTF-8 bytes")
    }
    guard !decoded.utf8.contains(0) else {
      throw PostgresURLError("the \(part) holds a NUL character (%00), which PostgreSQL cannot take; remove it")
    }
    return decoded
  }

  /// The URL with its password masked as `***` (in the user part and as `?password=`): the
  /// only form of a URL dray prints.
  public var redacted: String {
    var text = "postgresql://"
    if let user {
      text += Self.encode(user)
      if password != nil { text += ":\(Redactor.mask)" }
      text += "@"
    } else if password != nil {
      text += ":\(Redactor.mask)@"
    }
    var query = parameters.map { "\(Self.encode($0.name))=\(Self.encode($0.value))" }
    if let host {
      if host.hasPrefix("/") {
        query.insert("host=\(Self.encode(host, keeping: "/"))", at: 0)
      } else if host.contains(":") {
        text += "[\(host)]"
      } else {
        text += Self.encode(host)
      }
    }
    if let port { text += ":\(port)" }
    if let database { text += "/\(Self.encode(database))" }
    if !query.isEmpty { text += "?" + query.joined(separator: "&") }
    return text
  }

  public var description: String { redacted }

  /// The password written in the user part of `text`, a URL that may not parse
  /// (`user:password@` before the host), or nil: what to mask before a malformed URL is
  /// shown.
  public static func passwordText(in text: String) -> String? {
    guard let start = text.range(of: "://")?.upperBound else { return nil }
    let authority = text[start...].prefix { $0 != "/" && $0 != "?" }
    guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return nil }
    let password = authority[authority.index(after: colon)..<at]
    return password.isEmpty ? nil : String(password)
  }

  /// Every password written in `text`, a URL that may not parse: the user part's
  /// (`passwordText(in:)`) and the value of each `password=` query parameter, as written.
  /// What to register for masking before the line holding a malformed URL is quoted.
  public static func passwordTexts(in text: String) -> [String] {
    var found = passwordText(in: text).map { [$0] } ?? []
    guard let query = text.firstIndex(of: "?") else { return found }
    for pair in text[text.index(after: query)...].split(separator: "&") where pair.hasPrefix("password=") {
      found.append(String(pair.dropFirst("password=".count)))
    }
    return found
  }

  /// `text`, a URL that may not parse, as it may be shown: its user-part password and the
  /// value of a `password=` parameter masked as `***`.
  public static func masked(_ text: String) -> String {
    var shown = text
    if let password = passwordText(in: text) { shown = shown.replacingOccurrences(of: password, with: Redactor.mask) }
    guard let query = shown.firstIndex(of: "?") else { return shown }
    let pairs = shown[shown.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
      pair.hasPrefix("password=") ? "password=\(Redactor.mask)" : String(pair)
    }
    return shown[..<query] + "?" + pairs.joined(separator: "&")
  }

  /// The libpq keyword/value pairs of this URL, ready for `PQconnectdbParams`: `user`,
  /// `password`, `host`, `port`, `dbname` where given, then the query parameters.
  public var keywordValues: [(keyword: String, value: String)] {
    var pairs: [(keyword: String, value: String)] = []
    if let user { pairs.append(("user", user)) }
    if let password { pairs.append(("password", password)) }
    if let host { pairs.append(("host", host)) }
    if let port { pairs.append(("port", String(port))) }
    if let database { pairs.append(("dbname", database)) }
    for p in parameters { pairs.append((p.name, p.value)) }
    return pairs
  }

  /// Where the keywords are documented.
  public static let keywordsDocument = "https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-PARAMKEYWORDS"

  /// libpq 15's connection keywords (§34.1.2), the only query parameters a URL may hold.
  /// A test compares this list with `PQconndefaults()` of the libpq dray links.
  public static let keywords = [
    "service", "user", "password", "passfile", "channel_binding", "connect_timeout", "dbname", "host", "hostaddr",
    "port", "client_encoding", "options", "application_name", "fallback_application_name", "keepalives",
    "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "sslmode", "sslcompression",
    "sslcert", "sslkey", "sslpassword", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "gssencmode", "krbsrvname", "gsslib",
    "replication", "target_session_attrs",
  ]

  /// Percent-encodes everything but RFC 3986's unreserved characters (and `keeping`).
  private static func encode(_ text: String, keeping: String = "") -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    for byte in text.utf8 {
      let c = Character(Unicode.Scalar(byte))
      if byte < 0x80 && (c.isLetter || c.isNumber || "-._~".contains(c) || keeping.contains(c)) {
        out.append(byte)
      } else {
        out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// A malformed `postgresql://` URL: what is wrong and what to write instead; never the
/// password.
public struct PostgresURLError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
