internal import DrayModel

// MARK: What the lexer says of text that is not JSON

extension JSONLexer {
  /// A wrong token for a message: `'tru' is not a JSON value`, its first 24 characters
  /// quoted when they are printable text; else its first 8 bytes in hexadecimal (`the bytes
  /// 1F 8B 08 00 … are not a JSON value`), followed by what they are when they start as a
  /// known kind of bytes does (a byte order mark, gzip, a PNG image) or with a NUL byte, as
  /// UTF-16 text's ASCII characters do. Replacement characters or invisible ones (a byte
  /// order mark, U+200B) would show the user nothing of what the server sent.
  static func describe(token: UnsafeBufferPointer<UInt8>, _ what: String, atStart: Bool) -> String {
    let scalars = String(decoding: token.prefix(100), as: UTF8.self).unicodeScalars.prefix(24)
    if scalars.allSatisfy(isPrintable) { return "'\(String(String.UnicodeScalarView(scalars)))' is \(what)" }
    let shown = token.prefix(8).map(hexDigits).joined(separator: " ") + (token.count > 8 ? " …" : "")
    let described = token.count == 1 ? "the byte \(shown) is \(what)" : "the bytes \(shown) are \(what)"
    func starts(_ signature: [UInt8]) -> Bool { atStart && token.starts(with: signature) }
    let utf8 = "JSON between systems is UTF-8 (RFC 8259 §8.1)"
    let kind: String? =
      if starts([0xEF, 0xBB, 0xBF]) {
        "a UTF-8 byte order mark, which JSON text does not start with (RFC 8259 §8.1)"
      } else if starts([0xFF, 0xFE]) || starts([0xFE, 0xFF]) {
        "a UTF-16 byte order mark; \(utf8)"
      } else if starts([0x1F, 0x8B]) {
        "gzip-compressed data the server did not declare (Content-Encoding)"
      } else if starts([0x89, 0x50, 0x4E, 0x47]) {
        "a PNG image"
      } else if token.first == 0 {
        "a NUL byte; text with NUL bytes between its characters is UTF-16 or UTF-32, and \(utf8)"
      } else {
        nil
      }
    return kind.map { described + ": " + $0 } ?? described
  }

  /// Whether `scalar` shows as itself: not a control, format (U+FEFF, U+200B), separator,
  /// private-use or unassigned character, nor U+FFFD, which stands for bytes that are not UTF-8.
  static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
    guard scalar.value > 0x20 && scalar.value != 0x7F && scalar != "\u{FFFD}" else { return false }
    switch scalar.properties.generalCategory {
    case .control, .format, .surrogate, .privateUse, .unassigned, .spaceSeparator, .lineSeparator, .paragraphSeparator: return false
    default: return true
    }
  }

  static func controlCharacter(_ c: UInt8, byte: Int) -> Failure {
    .invalid(
      "a string holds the control character \(describeByte(c)) unescaped (JSON needs it escaped, as \\u00\(hexDigits(c)))", byte: byte)
  }

  static func notUTF8(byte: Int) -> Failure { .invalid("a string holds bytes that are not UTF-8", byte: byte) }

  static func loneSurrogate(_ value: UInt32, byte: Int) -> Failure {
    .invalid(
      "a string holds \\u\(String(value, radix: 16, uppercase: true)), half of a UTF-16 surrogate pair without its other half (not a character)",
      byte: byte)
  }

  /// The escape at `q` is wrong at its byte `length`: it is quoted up to that byte.
  static func badEscape(_ q: UnsafePointer<UInt8>, length: Int, byte: Int) -> Failure {
    let shown = String(decoding: UnsafeBufferPointer(start: q, count: length), as: UTF8.self)
    return .invalid("'\(PrintableText.escaped(shown))' is not a JSON escape (\\u takes four hexadecimal digits)", byte: byte)
  }

  static func hexDigits(_ c: UInt8) -> String {
    let digits = String(c, radix: 16, uppercase: true)
    return c < 16 ? "0" + digits : digits
  }

  /// One byte for a message: `'x'`, or `0x1F` when it is not printable ASCII.
  static func describeByte(_ c: UInt8) -> String {
    c > JSONByte.space && c < 0x7F ? String(UnicodeScalar(c)) : "0x" + hexDigits(c)
  }

  /// What is found at `p`, for a message.
  static func describe(_ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> String {
    let c = p.pointee
    if c > JSONByte.space && c < 0x7F {
      var q = p + 1
      if !JSONByte.isDelimiter(c) {
        while q < end && q - p < 24 && !JSONByte.isDelimiter(q.pointee) && q.pointee > JSONByte.space && q.pointee < 0x7F { q += 1 }
      }
      return "'" + String(decoding: UnsafeBufferPointer(start: p, count: q - p), as: UTF8.self) + "'"
    }
    return "the byte " + describeByte(c)
  }
  /// `message` followed by what is found at `p` (`expected ':' after a key, found 'x'`), or
  /// the refusal of a comment when one starts there.
  static func unexpected(_ message: String, _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, byte: Int) -> Failure {
    .invalid(comment(p, end) ?? "\(message) \(describe(p, end))", byte: byte)
  }

  /// The refusal of a comment (`//` or `/*`) starting at `p`; nil when none starts there.
  /// JSON has no comments (RFC 8259, section 2's grammar); dray reads none, in answers,
  /// schemes, tokens and `--params` alike (docs/store.md, "One JSON grammar").
  static func comment(_ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> String? {
    guard p.pointee == JSONByte.slash, end - p >= 2, p[1] == JSONByte.slash || p[1] == JSONByte.asterisk else { return nil }
    return "'\(p[1] == JSONByte.slash ? "//" : "/*")' starts a comment, and JSON has no comments: remove it"
  }
}
