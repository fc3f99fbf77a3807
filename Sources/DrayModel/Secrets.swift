internal import Glibc
internal import Synchronization

/// The secret values of a job, and the one place that masks them.
///
/// Every value from `auth`, from `${file:...}`, and from variables named in the manifest's
/// `secrets` list is registered here; every line printed, every report, journal row and
/// error message passes through `redact(_:)` before it leaves the process.
public struct Redactor: Sendable {
  /// What a secret is replaced with.
  public static let mask = "***"

  /// Secret values and their wire forms (see `add(_:)`), longest first so that a secret
  /// containing another is masked whole.
  public private(set) var secrets: [String] = []
  /// `secrets` as UTF-8 bytes, in the same order: `redact(_:)` searches bytes.
  private var patterns: [[UInt8]] = []

  public init(_ secrets: some Sequence<String> = []) {
    for s in secrets { add(s) }
  }

  /// Registers `secret` and the forms it takes on the wire and in servers' echoes of it.
  ///
  /// Values shorter than 3 characters are not registered: masking every `a` in every log
  /// line would destroy the logs without protecting anything. The forms, for `Päss/wörd 1`:
  ///
  /// - JSON-escaped: as dray writes it (`"` and `\` escaped, non-ASCII kept), as Python's
  ///   `json.dumps` writes it (non-ASCII as `\u00e4`, or `\u00E4` as other encoders do),
  ///   and each of those with `/` escaped as `\/` (PHP's `json_encode`);
  /// - percent-encoded: RFC 3986's unreserved characters kept (a form body, a URL), or `/`
  ///   kept too (Python's `quote`), or `!'()*` kept too (JavaScript's
  ///   `encodeURIComponent`); a space as `%20` or `+` (`quote_plus`, HTML forms); escapes in
  ///   upper or lower case; and as an `http` step's `path` holds it (`HTTPStep.encodePath`:
  ///   every printable ASCII character but `"<>\^`{|}` kept, RFC 3986 §3.3), escapes in
  ///   upper or lower case;
  /// - HTML-escaped (`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;`);
  /// - its UTF-8 bytes read as Latin-1 (`PÃ¤ss/wÃ¶rd 1`: a server that decodes a header that
  ///   way and echoes it), as is and JSON-escaped.
  ///
  /// Only forms that differ from the value are kept, so an ASCII secret without special
  /// characters is one pattern, and even `Päss/wörd 1` is a few dozen; `redact(_:)` looks
  /// for each with `memmem(3)`, so a 64 KiB error body costs well under a millisecond.
  public mutating func add(_ secret: String) {
    guard secret.count >= 3 else { return }
    var forms = Redactor.forms(of: secret)
    if secret.unicodeScalars.contains(where: { !$0.isASCII }) {
      let latin1 = String(String.UnicodeScalarView(secret.utf8.map { Unicode.Scalar($0) }))
      forms += [latin1] + Redactor.jsonForms(of: latin1)
    }
    insert(forms)
  }

  /// Registers every secret of `other`, with the forms it registered.
  public mutating func add(contentsOf other: Redactor) {
    insert(other.secrets)
  }

  private mutating func insert(_ forms: [String]) {
    var added = false
    for form in forms where form.utf8.count >= 3 && !secrets.contains(form) {
      secrets.append(form)
      added = true
    }
    guard added else { return }
    secrets.sort { $0.utf8.count > $1.utf8.count }
    patterns = secrets.map { Array($0.utf8) }
  }

  /// The value, its JSON, percent-encoded and HTML forms (see `add(_:)`).
  static func forms(of secret: String) -> [String] {
    var forms = [secret] + jsonForms(of: secret)
    let space = UInt8(ascii: " ")
    for kept in ["", "/", "!'()*"] {
      let keep = Set(kept.utf8)
      for plus in [false, true] where !plus || secret.utf8.contains(space) {
        let upper = percentEncoded(secret, keeping: keep, spaceAsPlus: plus)
        forms += [upper, lowerCasingEscapes(upper)]
      }
    }
    // As an `http` step's `path` writes it: RFC 3986 §3.3 pchar and `/` kept, with the
    // same encoder, so the form matches what the URL holds byte for byte.
    let path = HTTPStep.encodePath(secret)
    forms += [path, lowerCasingEscapes(path)]
    var html = ""
    for c in secret.unicodeScalars {
      switch c {
      case "&": html += "&amp;"
      case "<": html += "&lt;"
      case ">": html += "&gt;"
      case "\"": html += "&quot;"
      case "'": html += "&#39;"
      default: html.unicodeScalars.append(c)
      }
    }
    forms.append(html)
    return forms
  }

  /// `text` JSON-escaped as dray writes it, with non-ASCII as `\uXXXX` (lower- and
  /// upper-case hex, UTF-16 units), and each of those with `/` as `\/`.
  static func jsonForms(of text: String) -> [String] {
    let plain = String(JSONValue.quoted(text).dropFirst().dropLast())
    var lower = ""
    var upper = ""
    for unit in plain.utf16 {
      if unit < 0x80 {
        let c = String(Unicode.Scalar(UInt8(unit)))
        lower += c
        upper += c
      } else {
        let hex = String(unit, radix: 16)
        let padded = String(repeating: "0", count: 4 - hex.count) + hex
        lower += "\\u" + padded
        upper += "\\u" + padded.uppercased()
      }
    }
    let forms = [plain, lower, upper]
    return forms + forms.map { $0.replacing("/", with: "\\/") }
  }

  /// `text` with every registered secret replaced by `***`, and the password of every URL
  /// that carries one (`https://user:password@host/`, RFC 3986 §3.2.1) masked too, whether
  /// or not it was registered.
  ///
  /// Secrets are matched byte for byte in the UTF-8 text, longest first.
  public func redact(_ text: String) -> String {
    var out = text
    if !patterns.isEmpty {
      var bytes = Array(text.utf8)
      var changed = false
      for pattern in patterns {
        if let replaced = Redactor.replacing(pattern, in: bytes) {
          bytes = replaced
          changed = true
        }
      }
      if changed { out = String(decoding: bytes, as: UTF8.self) }
    }
    return Redactor.maskingURLPasswords(out)
  }

  /// `bytes` with every occurrence of `pattern` replaced by `***`, or nil when it has none.
  private static func replacing(_ pattern: [UInt8], in bytes: [UInt8]) -> [UInt8]? {
    bytes.withUnsafeBytes { haystack -> [UInt8]? in
      pattern.withUnsafeBytes { needle -> [UInt8]? in
        guard var hit = find(needle, in: haystack, from: 0) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(haystack.count)
        var start = 0
        while true {
          out += haystack[start..<hit]
          out += Array(Redactor.mask.utf8)
          start = hit + needle.count
          guard let next = find(needle, in: haystack, from: start) else { break }
          hit = next
        }
        out += haystack[start...]
        return out
      }
    }
  }

  /// The offset of the first `needle` in `haystack` at or after `start`: `memchr(3)` finds
  /// each candidate first byte, `memcmp(3)` checks the rest (glibc's `memmem` is not in
  /// Swift's Glibc module).
  private static func find(_ needle: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer, from start: Int) -> Int? {
    guard let base = haystack.baseAddress, let first = needle.first, needle.count > 0 else { return nil }
    var offset = start
    while haystack.count - offset >= needle.count {
      guard let found = memchr(base + offset, Int32(first), haystack.count - offset - needle.count + 1) else { return nil }
      let at = base.distance(to: UnsafeRawPointer(found))
      if memcmp(base + at, needle.baseAddress!, needle.count) == 0 { return at }
      offset = at + 1
    }
    return nil
  }

  /// `text` with the password part of each URL's user information replaced by `***`:
  /// `http://user:pw@host/` becomes `http://user:***@host/`.
  public static func maskingURLPasswords(_ text: String) -> String {
    guard text.contains("://") else { return text }
    var out = ""
    var rest = Substring(text)
    while let scheme = rest.firstRange(of: "://") {
      out += rest[..<scheme.upperBound]
      rest = rest[scheme.upperBound...]
      // The authority ends at the path, query or fragment, or where the URL itself ends.
      let end = rest.firstIndex { "/?#".contains($0) || $0.isWhitespace || "\"'<>`".contains($0) } ?? rest.endIndex
      let authority = rest[..<end]
      if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":"),
        authority[authority.index(after: colon)..<at] != Substring(mask)
      {
        out += authority[...colon] + mask
        rest = rest[at...]
      }
    }
    return out + rest
  }

  /// Percent-encoding as `application/x-www-form-urlencoded` writes it (RFC 3986 unreserved
  /// characters kept, everything else `%XX`).
  public static func percentEncoded(_ s: String) -> String {
    percentEncoded(s, keeping: [], spaceAsPlus: false)
  }

  /// Percent-encoding with RFC 3986's unreserved characters and the ASCII characters of
  /// `keep` kept, a space as `+` when `spaceAsPlus`, and escapes in capitals.
  static func percentEncoded(_ s: String, keeping keep: Set<UInt8>, spaceAsPlus: Bool) -> String {
    var out = ""
    for byte in s.utf8 {
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "_"), UInt8(ascii: "~"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      case UInt8(ascii: " ") where spaceAsPlus:
        out += "+"
      case _ where keep.contains(byte):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return out
  }

  /// `%2F` as `%2f`: the escapes of `text` in lower case, the rest as it is.
  static func lowerCasingEscapes(_ text: String) -> String {
    var out = ""
    var pending = 0
    for c in text.unicodeScalars {
      if c == "%" {
        pending = 2
        out.unicodeScalars.append(c)
      } else if pending > 0 {
        pending -= 1
        out += String(c).lowercased()
      } else {
        out.unicodeScalars.append(c)
      }
    }
    return out
  }
}

/// The job's `Redactor`, shared by every output of a run and able to learn secrets while the
/// run goes on.
///
/// Some secrets only exist at run time (the bearer token the platform hands out at sign-in);
/// the console, the report files and error messages all read this one object, so a secret
/// added from any thread masks every line written after it.
public final class SharedRedactor: Sendable {
  private let redactor: Mutex<Redactor>

  public init(_ redactor: Redactor = Redactor()) {
    self.redactor = Mutex(redactor)
  }

  /// Registers `secret` (see `Redactor.add(_:)`).
  public func add(_ secret: String) {
    redactor.withLock { $0.add(secret) }
  }

  /// Registers every secret of `other`.
  public func add(contentsOf other: Redactor) {
    redactor.withLock { $0.add(contentsOf: other) }
  }

  /// `text` with every secret known so far masked.
  public func redact(_ text: String) -> String {
    let current = redactor.withLock { $0 }
    return current.redact(text)
  }

  /// The secrets known so far.
  public var current: Redactor { redactor.withLock { $0 } }
}
