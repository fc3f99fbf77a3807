internal import Glibc

/// Text with one layer of escapes undone, each byte knowing the bytes of the original text it
/// stands for: what `Redactor.redact(_:)` searches, so that one form of a secret is found in
/// whatever escaping a server applied, once or several times, and the original bytes are
/// masked.
///
/// Undone wherever they stand (a server's text mixes them):
///
/// - percent-encoding, `%XX` (RFC 3986 §2.1, hex digits in either case): one byte each, so
///   any set of characters kept (a form body, Python's `quote`, JavaScript's `encodeURI`);
/// - JSON escapes (RFC 8259 §7): `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` and `\uXXXX`
///   (hex either case; a surrogate pair as the one character it encodes; a lone surrogate
///   is left), and JavaScript's `\'`;
/// - dray's own notation for a control character, `\u{9F}` (`PrintableText`);
/// - HTML and XML character references (HTML 5 §13.1.4): decimal `&#228;` and hexadecimal
///   `&#xE4;` or `&#Xe4;` (leading zeros allowed), and the names `&amp;`, `&lt;`, `&gt;`,
///   `&quot;`, `&apos;` and HTML 4's Latin-1 names (`&auml;`, HTML 4.01 §24.2), each
///   closed by `;`.
///
/// Every `+` reads as a space, in the text and in the patterns alike (`canonical(_:)`): a
/// form body writes a space as `+` (the URL Standard, §5, "application/x-www-form-urlencoded";
/// Python's `quote_plus`), and a secret's `+` written as is must still match.
struct DecodedText {
  /// The text's UTF-8 bytes, escapes undone, `+` read as a space.
  private(set) var bytes: [UInt8]
  /// The escapes this layer undid, in order (empty for the original text): what maps a range
  /// of `bytes` back to the text it was decoded from.
  private var escapes: [Escape] = []

  /// One escape undone: `decoded` bytes of `bytes` that stand for `source` bytes of the text
  /// decoded from.
  private struct Escape {
    var decoded: Range<Int>
    var source: Range<Int>
  }

  /// The original text, nothing undone but `+` read as a space.
  init(_ original: [UInt8]) {
    bytes = DecodedText.canonical(original)
  }

  private init(bytes: [UInt8], escapes: [Escape]) {
    self.bytes = bytes
    self.escapes = escapes
  }

  /// `bytes` with every `+` as a space.
  static func canonical(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    bytes.withUnsafeMutableBufferPointer { buffer in
      guard let base = buffer.baseAddress else { return }
      var offset = 0
      while let found = memchr(base + offset, Int32(UInt8(ascii: "+")), buffer.count - offset) {
        let at = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        buffer[at] = UInt8(ascii: " ")
        offset = at + 1
      }
    }
    return bytes
  }

  /// The bytes of the text this one was decoded from that `range` of `bytes` stands for.
  func source(_ range: Range<Int>) -> Range<Int> {
    guard !escapes.isEmpty, !range.isEmpty else { return range }
    return source(of: range.lowerBound).lowerBound..<source(of: range.upperBound - 1).upperBound
  }

  /// The bytes of the text decoded from that byte `offset` of `bytes` stands for.
  private func source(of offset: Int) -> Range<Int> {
    // The last escape starting at or before `offset` (binary search).
    var low = 0
    var high = escapes.count
    while low < high {
      let middle = (low + high) / 2
      if escapes[middle].decoded.lowerBound <= offset { low = middle + 1 } else { high = middle }
    }
    guard low > 0 else { return offset..<offset + 1 }
    let escape = escapes[low - 1]
    if escape.decoded.contains(offset) { return escape.source }
    let copied = escape.source.upperBound + offset - escape.decoded.upperBound
    return copied..<copied + 1
  }

  /// This text with one more layer of escapes undone, or nil when it holds none.
  ///
  /// Every escape is longer than what it stands for, so the result is never longer than
  /// the text; runs between escapes are copied whole (`memcpy(3)`).
  func decodedOnce() -> DecodedText? {
    var escapes: [Escape] = []
    let out = bytes.withUnsafeBufferPointer { text in
      [UInt8](unsafeUninitializedCapacity: text.count) { out, count in
        guard let base = text.baseAddress, let outBase = out.baseAddress else { return }
        // The next `%`, `\` and `&` at or after an offset, found by `memchr(3)`.
        func next(_ mark: UInt8, from offset: Int) -> Int {
          guard offset < text.count, let found = memchr(base + offset, Int32(mark), text.count - offset) else { return text.count }
          return UnsafeRawPointer(base).distance(to: found)
        }
        let marks: [UInt8] = [0x25, 0x5C, 0x26]  // % \ &
        var nextMark = marks.map { next($0, from: 0) }
        var copied = 0
        while true {
          let which = nextMark[0] <= nextMark[1] ? (nextMark[0] <= nextMark[2] ? 0 : 2) : (nextMark[1] <= nextMark[2] ? 1 : 2)
          let index = nextMark[which]
          guard index < text.count else { break }
          guard let (value, length) = DecodedText.escape(in: text, at: index) else {
            nextMark[which] = next(marks[which], from: index + 1)
            continue
          }
          if index > copied { memcpy(outBase + count, base + copied, index - copied) }
          count += index - copied
          let start = count
          switch value {
          case .byte(let byte):
            out[count] = byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte
            count += 1
          case .scalar(let scalar):
            for unit in scalar.utf8 {
              out[count] = unit == UInt8(ascii: "+") ? UInt8(ascii: " ") : unit
              count += 1
            }
          }
          escapes.append(Escape(decoded: start..<count, source: index..<index + length))
          copied = index + length
          for m in marks.indices where nextMark[m] < copied { nextMark[m] = next(marks[m], from: copied) }
        }
        if !escapes.isEmpty, text.count > copied {
          memcpy(outBase + count, base + copied, text.count - copied)
          count += text.count - copied
        }
      }
    }
    return escapes.isEmpty ? nil : DecodedText(bytes: out, escapes: escapes)
  }

  /// What an escape stands for.
  private enum Decoded {
    case byte(UInt8)
    case scalar(Unicode.Scalar)
  }

  /// The escape starting at `index` of `text`, and its length in bytes, or nil when none
  /// starts there.
  private static func escape(in text: UnsafeBufferPointer<UInt8>, at index: Int) -> (Decoded, Int)? {
    switch text[index] {
    case UInt8(ascii: "%"):
      guard let high = digit(text, index + 1, radix: 16), let low = digit(text, index + 2, radix: 16) else { return nil }
      return (.byte(UInt8(high << 4 | low)), 3)
    case UInt8(ascii: "\\"):
      guard index + 1 < text.count else { return nil }
      switch text[index + 1] {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "'"): return (.byte(text[index + 1]), 2)
      case UInt8(ascii: "b"): return (.byte(0x08), 2)
      case UInt8(ascii: "f"): return (.byte(0x0C), 2)
      case UInt8(ascii: "n"): return (.byte(0x0A), 2)
      case UInt8(ascii: "r"): return (.byte(0x0D), 2)
      case UInt8(ascii: "t"): return (.byte(0x09), 2)
      case UInt8(ascii: "u"): return unicodeEscape(in: text, at: index)
      default: return nil
      }
    default:
      return reference(in: text, at: index)
    }
  }

  /// `\uXXXX` (a surrogate pair as `\uD83D\uDD11`) or `\u{9F}` at `index`.
  private static func unicodeEscape(in text: UnsafeBufferPointer<UInt8>, at index: Int) -> (Decoded, Int)? {
    if index + 2 < text.count, text[index + 2] == UInt8(ascii: "{") {
      guard let (value, end) = number(text, from: index + 3, radix: 16, maxDigits: 6), end < text.count,
        text[end] == UInt8(ascii: "}"), let scalar = Unicode.Scalar(value)
      else { return nil }
      return (.scalar(scalar), end + 1 - index)
    }
    guard let unit = unit(text, at: index + 2) else { return nil }
    if (0xD800..<0xDC00).contains(unit), index + 7 < text.count, text[index + 6] == UInt8(ascii: "\\"),
      text[index + 7] == UInt8(ascii: "u"), let low = self.unit(text, at: index + 8), (0xDC00..<0xE000).contains(low),
      let scalar = Unicode.Scalar(0x10000 + (unit - 0xD800) << 10 + (low - 0xDC00))
    {
      return (.scalar(scalar), 12)
    }
    guard let scalar = Unicode.Scalar(unit) else { return nil }
    return (.scalar(scalar), 6)
  }

  /// The 4 hex digits of a `\uXXXX` escape at `index`.
  private static func unit(_ text: UnsafeBufferPointer<UInt8>, at index: Int) -> UInt32? {
    guard let (value, end) = number(text, from: index, radix: 16, maxDigits: 4), end == index + 4 else { return nil }
    return value
  }

  /// `&#228;`, `&#xE4;` or `&auml;` at `index`.
  private static func reference(in text: UnsafeBufferPointer<UInt8>, at index: Int) -> (Decoded, Int)? {
    var start = index + 1
    guard start < text.count else { return nil }
    if text[start] == UInt8(ascii: "#") {
      start += 1
      var radix: UInt32 = 10
      if start < text.count, text[start] | 0x20 == UInt8(ascii: "x") {
        radix = 16
        start += 1
      }
      guard let (value, end) = number(text, from: start, radix: radix, maxDigits: 10), end < text.count,
        text[end] == UInt8(ascii: ";"), let scalar = Unicode.Scalar(value)
      else { return nil }
      return (.scalar(scalar), end + 1 - index)
    }
    var end = start
    while end < text.count, end - start < 6, isASCIIWordByte(text[end]) { end += 1 }
    guard end < text.count, text[end] == UInt8(ascii: ";"),
      let scalar = namedReferences[String(decoding: UnsafeBufferPointer(rebasing: text[start..<end]), as: UTF8.self)]
    else { return nil }
    return (.scalar(scalar), end + 1 - index)
  }

  /// The digits from `index` on (at least one, at most `maxDigits`) and where they end; nil
  /// when there is none or the value exceeds U+10FFFF.
  private static func number(_ text: UnsafeBufferPointer<UInt8>, from index: Int, radix: UInt32, maxDigits: Int) -> (UInt32, Int)? {
    var value: UInt32 = 0
    var end = index
    while end < text.count, end - index < maxDigits, let d = digit(text, end, radix: radix) {
      value = value * radix + d
      guard value <= 0x10FFFF else { return nil }
      end += 1
    }
    return end > index ? (value, end) : nil
  }

  /// The value of the digit at `index` in `radix` (10 or 16, either case).
  private static func digit(_ text: UnsafeBufferPointer<UInt8>, _ index: Int, radix: UInt32) -> UInt32? {
    guard index < text.count else { return nil }
    let byte = text[index]
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: return UInt32(byte - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: return UInt32(byte - UInt8(ascii: "A") + 10)
    default: return nil
    }
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

  /// The named references undone: XML's five and HTML 4's Latin-1 names.
  static let namedReferences: [String: Unicode.Scalar] = {
    var names: [String: Unicode.Scalar] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
    for (offset, name) in latin1EntityNames.enumerated() { names[name] = Unicode.Scalar(UInt8(0xA0 + offset)) }
    return names
  }()

  /// Whether the character ending just before `index` is part of a word: a letter, a digit
  /// or `_` (what `\w` matches in a Unicode regular expression).
  func isWordCharacter(endingAt index: Int) -> Bool {
    guard index > 0 else { return false }
    var start = index - 1
    while start > 0, index - start < 4, bytes[start] & 0xC0 == 0x80 { start -= 1 }
    return DecodedText.isWord(bytes[start..<index])
  }

  /// Whether the character starting at `index` is part of a word (see
  /// `isWordCharacter(endingAt:)`).
  func isWordCharacter(startingAt index: Int) -> Bool {
    guard index < bytes.count else { return false }
    var end = index + 1
    while end < bytes.count, end - index < 4, bytes[end] & 0xC0 == 0x80 { end += 1 }
    return DecodedText.isWord(bytes[index..<end])
  }

  private static func isWord(_ character: ArraySlice<UInt8>) -> Bool {
    guard character.count > 1 else { return character.first.map(isASCIIWordByte) ?? false }
    var iterator = character.makeIterator()
    var decoder = UTF8()
    guard case .scalarValue(let scalar) = decoder.decode(&iterator) else { return false }
    return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
  }

  private static func isASCIIWordByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
      UInt8(ascii: "_"):
      true
    default: false
    }
  }
}
