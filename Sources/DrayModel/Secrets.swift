internal import Glibc
internal import Synchronization

/// The secret values of a job, and the one place that masks them.
///
/// Every value from `auth.password`, from `${file:...}`, from secret header fields and from
/// the manifest's `secrets` list is registered here, and so is the platform's token when it
/// arrives; every line printed, every report and every error message passes through
/// `redact(_:)` before it leaves the process. Masking works on text, before that text is
/// encoded into an output format (a JSON string, an XML attribute): a secret echoed by a
/// server is found in the forms the server wrote, never in an escaping of dray's own.
///
/// Names dray writes itself (the job, step ids, the run id, report paths) are registered with
/// `keep(_:)` and never altered, even when a secret happens to be part of one.
public struct Redactor: Sendable {
  /// What a secret is replaced with.
  public static let mask = "***"

  /// The fewest characters a secret of the manifest may have (validation refuses shorter
  /// ones, naming the key). Masking a shorter value would hide ordinary words in every line
  /// (a password `test` turns `contest` into `con***`) while telling a reader what it is; 8
  /// is the least length NIST SP 800-63B (§5.1.1.1) allows for a memorized secret.
  public static let minimumLength = 8

  /// Secret values and their wire forms (see `add(_:)`), longest first.
  public private(set) var secrets: [String] = []
  /// `secrets` as UTF-8 bytes, in the same order: `redact(_:)` searches bytes.
  private var patterns: [[UInt8]] = []
  /// Names never altered (see `keep(_:)`), as UTF-8 bytes.
  private var kept: [[UInt8]] = []

  public init(_ secrets: some Sequence<String> = []) {
    for s in secrets { add(s) }
  }

  /// Registers `secret` and the forms it takes on the wire and in servers' echoes of it.
  ///
  /// Values shorter than 3 characters are not registered: masking every `a` in every log
  /// line would destroy the logs without protecting anything (the manifest's secrets have
  /// `minimumLength` at least; only a server's token could be that short). The forms, for
  /// `Päss/wörd 1`:
  ///
  /// - JSON-escaped: as dray writes it (`"` and `\` escaped, non-ASCII kept), as Python's
  ///   `json.dumps` writes it (non-ASCII as UTF-16 `\u00e4`, a character beyond U+FFFF as its
  ///   surrogate pair, or `\u00E4` as other encoders do), and each of those with `/` escaped
  ///   as `\/` (PHP's `json_encode`);
  /// - percent-encoded: RFC 3986's unreserved characters kept (a form body, a URL), or `/`
  ///   kept too (Python's `quote`), or `!'()*` kept too (JavaScript's
  ///   `encodeURIComponent`); a space as `%20` or `+` (`quote_plus`, HTML forms); escapes in
  ///   upper or lower case; and as an `http` step's `path` holds it (`HTTPStep.encodePath`:
  ///   every printable ASCII character but `"<>\^`{|}` kept, RFC 3986 §3.3), escapes in
  ///   upper or lower case;
  /// - HTML and XML character references (`htmlForms(of:)`): `&"'<>` as named (`&amp;`),
  ///   decimal (`&#38;`) or hexadecimal (`&#x26;`, `&#X26;` digits either case) references,
  ///   non-ASCII kept, or written with HTML 4's Latin-1 names (`&auml;`, PHP's
  ///   `htmlentities`), decimal or hexadecimal references (`&#228;`, Python's
  ///   `xmlcharrefreplace`);
  /// - base64 of its UTF-8 bytes (RFC 4648 §4, and the URL-safe alphabet of §5), whole with
  ///   its padding, and the characters that encode only its bytes at each of the three
  ///   alignments it can have inside a longer text (`base64Forms(of:)`): a password inside
  ///   `Authorization: Basic base64(user:password)` (RFC 7617) is one such;
  /// - its UTF-8 bytes read as Latin-1 (`PÃ¤ss/wÃ¶rd 1`: a server that decodes a header that
  ///   way and echoes it), in each of the forms above;
  /// - each form holding a control character as `PrintableText.oneLine` shows it (`\u{9F}`),
  ///   since server text is made printable where an error is built.
  ///
  /// Only forms that differ from the value are kept, so an ASCII secret without special
  /// characters is 5 patterns, and `Säcret/1 wörd+1` 47; `redact(_:)` looks for each with
  /// `memchr(3)`: a 64 KiB error body of JSON text costs about 3 ms against 8 such secrets
  /// (376 patterns) in a debug build, the worst case (a body of `S...` lines, every `S` a
  /// candidate) about 50 ms.
  public mutating func add(_ secret: String) {
    guard secret.count >= 3 else { return }
    var forms = Redactor.forms(of: secret)
    if secret.unicodeScalars.contains(where: { !$0.isASCII }) {
      forms += Redactor.forms(of: String(String.UnicodeScalarView(secret.utf8.map { Unicode.Scalar($0) })))
    }
    insert(forms)
  }

  /// Registers every secret of `other`, with the forms it registered, and the names it keeps.
  public mutating func add(contentsOf other: Redactor) {
    insert(other.secrets)
    for name in other.kept where !kept.contains(name) { kept.append(name) }
  }

  /// Registers names dray writes itself (the job, step ids, the run id, report paths): a
  /// secret found inside one of them, in any text, is left as it is, so that the names a
  /// reader looks for and the paths they open are the real ones.
  public mutating func keep(_ names: some Sequence<String>) {
    for name in names where !name.isEmpty && !kept.contains(Array(name.utf8)) { kept.append(Array(name.utf8)) }
  }

  private mutating func insert(_ forms: [String]) {
    var added = false
    // Server text is made one printable line where an error is built (`PrintableText`), so a
    // form holding a control character (a C1 control in a Latin-1 reading) is looked for as
    // that line shows it too.
    for form in forms + forms.map(PrintableText.oneLine) where form.utf8.count >= 3 && !secrets.contains(form) {
      secrets.append(form)
      added = true
    }
    guard added else { return }
    secrets.sort { $0.utf8.count > $1.utf8.count }
    patterns = secrets.map { Array($0.utf8) }
  }

  /// The value, its JSON, percent-encoded, HTML and base64 forms (see `add(_:)`).
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
    return forms + htmlForms(of: secret) + base64Forms(of: Array(secret.utf8))
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

  /// HTML 4's names for U+00A0 through U+00FF (HTML 4.01 §24.2, "Character entity
  /// references for ISO 8859-1 characters"), in code point order.
  static let latin1EntityNames = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf", "laquo", "not", "shy", "reg", "macr",
    "deg", "plusmn", "sup2", "sup3", "acute", "micro", "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12",
    "frac34", "iquest", "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute", "Ecirc",
    "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute", "Ocirc", "Otilde", "Ouml", "times", "Oslash",
    "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute", "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig",
    "ccedil", "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde", "ograve", "oacute", "ocirc",
    "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc", "uuml", "yacute", "thorn", "yuml",
  ]

  /// `text` as HTML and XML escapers write it: the markup characters `&"'<>` as named,
  /// decimal or hexadecimal references (`'` named `&#39;`, `&#x27;` or `&apos;`), each
  /// with non-ASCII characters kept, named (Latin-1; others kept, as PHP's `htmlentities`
  /// does), decimal or hexadecimal
  /// (code points, not UTF-16 units); hexadecimal digits in either case.
  static func htmlForms(of text: String) -> [String] {
    enum Style: CaseIterable { case kept, named, decimal, hex, upperHex }
    let markupNames: [Unicode.Scalar: String] = ["&": "amp", "<": "lt", ">": "gt", "\"": "quot"]
    let apostrophes = text.contains("'") ? ["&#39;", "&#x27;", "&apos;"] : ["&#39;"]
    func reference(_ c: Unicode.Scalar, _ style: Style) -> String {
      switch style {
      case .kept: String(c)
      case .named:
        if let name = markupNames[c] {
          "&\(name);"
        } else if (0xA0...0xFF).contains(c.value) {
          "&\(latin1EntityNames[Int(c.value) - 0xA0]);"
        } else {
          String(c)
        }
      case .decimal: "&#\(c.value);"
      case .hex: "&#x\(String(c.value, radix: 16));"
      case .upperHex: "&#x\(String(c.value, radix: 16, uppercase: true));"
      }
    }
    var forms: [String] = []
    for markup in Style.allCases where markup != .kept {
      for apostrophe in apostrophes where markup == .named || apostrophe == apostrophes[0] {
        for other in Style.allCases {
          var out = ""
          for c in text.unicodeScalars {
            if "&<>\"'".unicodeScalars.contains(c) {
              out += c == "'" && markup == .named ? apostrophe : reference(c, markup)
            } else if !c.isASCII {
              out += reference(c, other)
            } else {
              out.unicodeScalars.append(c)
            }
          }
          forms.append(out)
        }
      }
    }
    return forms
  }

  /// `bytes` in base64 (RFC 4648 §4) and its URL-safe alphabet (§5): whole, with padding,
  /// and, for each of the 3 byte offsets modulo 3 it can have inside longer data, the
  /// characters that encode only its own bits (the first and last characters of its run
  /// also carry bits of its neighbours, so they are left out).
  static func base64Forms(of bytes: [UInt8]) -> [String] {
    guard !bytes.isEmpty else { return [] }
    var standard = [base64(bytes)]
    for offset in 0..<3 {
      let encoded = Array(base64([UInt8](repeating: 0, count: offset) + bytes).utf8)
      // Character i holds bits 6i..<6i+6; the secret's bits are 8·offset..<8·(offset+count).
      let first = (8 * offset + 5) / 6
      let end = 8 * (offset + bytes.count) / 6
      if end > first { standard.append(String(decoding: encoded[first..<end], as: UTF8.self)) }
    }
    let urlSafe = standard.map { $0.replacing("+", with: "-").replacing("/", with: "_") }
    return standard + urlSafe
  }

  /// `bytes` in base64 with padding (RFC 4648 §4).
  static func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
      let chunk = bytes[index..<min(index + 3, bytes.count)]
      let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
      for position in 0..<4 {
        out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * position) & 0x3F)] : UInt8(ascii: "="))
      }
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// `text` with every registered secret replaced by `***`, and the password of every URL
  /// that carries one (`https://user:password@host/`, RFC 3986 §3.2.1) masked too, whether
  /// or not it was registered.
  ///
  /// Secrets are matched byte for byte in the UTF-8 text; every byte any form of any secret
  /// covers is masked (overlapping secrets are masked together), each run of masked bytes
  /// becoming one `***`. A match that lies inside a name registered with `keep(_:)` is left.
  public func redact(_ text: String) -> String {
    guard !patterns.isEmpty else { return Redactor.maskingURLPasswords(text) }
    let bytes = Array(text.utf8)
    var covered: [Bool]? = nil
    bytes.withUnsafeBytes { haystack in
      var keptRanges: [Range<Int>] = []
      for name in kept {
        name.withUnsafeBytes { needle in
          var start = 0
          while let hit = Redactor.find(needle, in: haystack, from: start) {
            keptRanges.append(hit..<hit + needle.count)
            start = hit + 1
          }
        }
      }
      for pattern in patterns {
        pattern.withUnsafeBytes { needle in
          var start = 0
          while let hit = Redactor.find(needle, in: haystack, from: start) {
            let range = hit..<hit + needle.count
            start = hit + 1
            if keptRanges.contains(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) { continue }
            if covered == nil { covered = [Bool](repeating: false, count: bytes.count) }
            for index in range { covered![index] = true }
          }
        }
      }
    }
    guard let covered else { return Redactor.maskingURLPasswords(text) }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    for index in bytes.indices {
      if !covered[index] {
        out.append(bytes[index])
      } else if index == 0 || !covered[index - 1] {
        out += Redactor.mask.utf8
      }
    }
    return Redactor.maskingURLPasswords(String(decoding: out, as: UTF8.self))
  }
  /// `value` with every string in it masked (`redact(_:)`), before it is encoded: the
  /// secrets are found as the text holds them, never in JSON's escaping of it. Keys are
  /// names and are kept.
  public func redact(_ value: JSONValue) -> JSONValue {
    switch value {
    case .string(let text): .string(redact(text))
    case .array(let items): .array(items.map(redact))
    case .object(let pairs): .object(pairs.map { ($0.key, redact($0.value)) })
    default: value
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

  /// Registers every secret of `other`, and the names it keeps.
  public func add(contentsOf other: Redactor) {
    redactor.withLock { $0.add(contentsOf: other) }
  }

  /// Registers names never altered (see `Redactor.keep(_:)`).
  public func keep(_ names: [String]) {
    redactor.withLock { $0.keep(names) }
  }

  /// `text` with every secret known so far masked.
  public func redact(_ text: String) -> String {
    let current = redactor.withLock { $0 }
    return current.redact(text)
  }

  /// The secrets known so far.
  public var current: Redactor { redactor.withLock { $0 } }
}
