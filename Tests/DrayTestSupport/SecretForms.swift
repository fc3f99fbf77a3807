public import Foundation

/// The forms a secret can take in dray's outputs, for tests that search every stream and
/// file for them (`SecretScan`).
public enum SecretForms {
  /// The forms a secret takes on the wire and in files: as is, percent-encoded (a form body,
  /// a URL; upper- or lower-case escapes; a space as `+`, as Python's `quote_plus` writes
  /// it), JSON-escaped (non-ASCII kept, or escaped as Python's `json.dumps` does, and `/`
  /// escaped too, as PHP's `json_encode` does), XML-escaped, and its UTF-8 bytes read as
  /// Latin-1 (a server decoding a header that way and echoing it, as is or in JSON).
  public static func wire(_ value: String) -> [String] {
    var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    allowed.insert(charactersIn: "-._~")
    let percent = value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    let lowerPercent = percent.replacing(/%[0-9A-F]{2}/) { $0.output.lowercased() }
    let plus = (value.replacing(" ", with: "_SPACE_").addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
      .replacing("_SPACE_", with: "+")
    let json = value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
    let latin1 = String(value.utf8.map { Character(UnicodeScalar($0)) })
    let xml = value.replacing("&", with: "&amp;").replacing("\"", with: "&quot;")
    return Array(
      Set([
        value, percent, lowerPercent, plus, json, asciiJSON(value), asciiJSON(value).replacing("/", with: "\\/"), xml, latin1,
        asciiJSON(latin1),
      ]))
  }

  /// `text` as a JSON string's contents with non-ASCII escaped (UTF-16 `\u00e4`), as
  /// Python's `json.dumps` writes it.
  static func asciiJSON(_ text: String) -> String {
    text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").utf16.map { unit in
      unit < 0x80 ? String(UnicodeScalar(UInt8(unit))) : String(format: "\\u%04x", unit)
    }.joined()
  }

  /// Every form of `wire(_:)` and more: HTML and XML character references (named, decimal,
  /// hexadecimal; every character, ASCII letters too, as decimal or hexadecimal references
  /// with and without leading zeros, hex digits in either case), JavaScript's `encodeURI`,
  /// base64 (standard and URL-safe, alone and at each alignment inside longer base64), and
  /// each form escaped again as a JSON string, XML text, percent-encoding (all but RFC 3986's
  /// unreserved characters, or as `encodeURI`) would (a server quoting an echo it escaped
  /// already, or a mask applied after encoding).
  public static func every(_ value: String) -> [String] {
    let latin1 = String(value.utf8.map { Character(UnicodeScalar($0)) })
    let forms = encodings(value) + (latin1 == value ? [] : encodings(latin1) + undecoded(latin1)) + undecoded(value)
    // As dray shows server text: control characters (C1 ones in a Latin-1 reading) escaped.
    let printable = forms.map { form in
      form.unicodeScalars.map { (0x80...0x9F).contains($0.value) ? "\\u{\(String($0.value, radix: 16, uppercase: true))}" : String($0) }
        .joined()
    }
    return Array(Set(forms + printable))
  }

  /// `value` in every encoding of `every(_:)`.
  static func encodings(_ value: String) -> [String] {
    func references(_ markup: (Unicode.Scalar) -> String, _ other: (Unicode.Scalar) -> String?) -> String {
      value.unicodeScalars.map { c in
        "&<>\"'".unicodeScalars.contains(c) ? markup(c) : c.isASCII ? String(c) : other(c) ?? String(c)
      }.joined()
    }
    // `markup` is called for these five characters alone.
    let names: [Unicode.Scalar: String] = ["&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"]
    let named = { (c: Unicode.Scalar) in names[c, default: String(c)] }
    let latin1: [Unicode.Scalar: String] = ["ä": "&auml;", "ö": "&ouml;", "Ã": "&Atilde;", "¤": "&curren;", "¶": "&para;", "ð": "&eth;"]
    let decimal = { (c: Unicode.Scalar) in "&#\(c.value);" }
    let hex = { (c: Unicode.Scalar) in "&#x\(String(c.value, radix: 16));" }
    let upperHex = { (c: Unicode.Scalar) in "&#x\(String(c.value, radix: 16, uppercase: true));" }
    var html = [
      references(named, { latin1[$0] }), references(named, decimal),
      references({ $0 == "'" ? "&#x27;" : named($0) }, decimal), references(decimal, decimal), references(hex, hex),
      references(upperHex, upperHex),
    ]
    html += html.map { $0.replacing("&#39;", with: "&apos;") }
    func allReferences(_ reference: (Unicode.Scalar) -> String) -> String { value.unicodeScalars.map(reference).joined() }
    func padded(_ digits: String, _ width: Int) -> String { String(repeating: "0", count: max(0, width - digits.count)) + digits }
    html += [
      allReferences(decimal), allReferences(hex), allReferences(upperHex), allReferences { "&#\(padded(String($0.value), 7));" },
      allReferences { "&#x\(padded(String($0.value, radix: 16), 4));" },
      allReferences { "&#X\(String($0.value, radix: 16, uppercase: true));" },
    ]
    var base64: [String] = []
    for filler in ["", "a", "ab"] {
      // Past the first 4 characters and before the last 4, every character encodes the
      // secret's bits only, wherever it starts.
      let encoded = Data((filler + value).utf8).base64EncodedString()
      base64 += [encoded, String(encoded.dropFirst(4).dropLast(4))]
    }
    base64 += base64.map { $0.replacing("+", with: "-").replacing("/", with: "_") }
    var unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    unreserved.insert(charactersIn: "-._~")
    // JavaScript's encodeURI keeps the reserved characters and `#` too.
    var uriKept = unreserved
    uriKept.insert(charactersIn: ";,/?:@&=+$!*'()#")
    func encodeURI(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: uriKept) ?? text }
    let once = wire(value) + html + base64 + [encodeURI(value)]
    let again = once.flatMap { form in
      [
        form.replacing("\\", with: "\\\\").replacing("\"", with: "\\\""), asciiJSON(form),
        form.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing("\"", with: "&quot;"),
        form.addingPercentEncoding(withAllowedCharacters: unreserved) ?? form, encodeURI(form),
      ]
    }
    return (once + again).filter { $0.utf8.count >= 6 }
  }
}

extension SecretForms {
  /// The forms of `value` no escape produces beyond base64: base32 (RFC 4648 §6) whole and,
  /// inside longer base32, the characters past the first and before the last 8 (5 bytes);
  /// hex; quoted-printable; the value lower-cased and in capitals, as is and on the wire.
  static func undecoded(_ value: String) -> [String] {
    var base32: [String] = []
    for filler in ["", "a", "ab", "abc", "abcd"] {
      let encoded = Self.base32(Array((filler + value).utf8))
      base32 += [encoded, encoded.lowercased(), String(encoded.dropFirst(8).dropLast(8))]
    }
    let hexDigits = value.utf8.map { String(format: "%02x", $0) }.joined()
    var unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    unreserved.insert(charactersIn: "-._~")
    // Case-folded, as is and percent-encoded (escapes in capitals or lower case, a space as +).
    let folded: [String] = [value.lowercased(), value.uppercased()].flatMap { text in
      let percent = text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
      return [text, percent, percent.replacing(/%[0-9A-F]{2}/) { $0.output.lowercased() }, percent.replacing("%20", with: "+")]
    }
    return (base32 + [hexDigits, hexDigits.uppercased()] + quotedPrintable(value) + folded).filter { $0.utf8.count >= 6 }
  }

  /// `bytes` in base32 (RFC 4648 §6), capitals, with `=` padding to a multiple of 8.
  public static func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    let bits = bytes.map { byte in (0..<8).map { byte >> (7 - $0) & 1 } }.joined()
    var out = ""
    var chunk = Array(bits)
    while !chunk.isEmpty {
      let five = Array(chunk.prefix(5)) + Array(repeating: 0, count: max(0, 5 - chunk.count))
      out.append(alphabet[Int(five.reduce(0) { $0 << 1 | $1 })])
      chunk = Array(chunk.dropFirst(5))
    }
    return out + String(repeating: "=", count: (8 - out.count % 8) % 8)
  }

  /// `value`'s UTF-8 bytes in quoted-printable (RFC 2045 §6.7: `=`, controls and bytes over
  /// 126 as `=XX`), a space kept, as `=20`, and as `_` (RFC 2047's "Q").
  public static func quotedPrintable(_ value: String) -> [String] {
    func encoded(_ space: String?, _ escaped: String) -> String {
      value.utf8.map { byte in
        if byte == 32, let space { return space }
        return byte < 33 || byte > 126 || escaped.utf8.contains(byte) ? String(format: "=%02X", byte) : String(UnicodeScalar(byte))
      }.joined()
    }
    return [encoded(" ", "="), encoded(nil, "="), encoded("_", "=_?")]
  }
}

/// Sentinel forms of secrets searched for in outputs: each form found is a hit naming the
/// secret and the place.
public struct SecretScan {
  public init() {}

  public var sentinels: [(name: String, form: String)] = []
  public var hits: [String] = []

  public mutating func look(in data: Data, _ place: String) {
    for sentinel in sentinels where data.range(of: Data(sentinel.form.utf8)) != nil {
      hits.append("\(sentinel.name) in \(place)")
    }
  }
}
