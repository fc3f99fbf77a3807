internal import DrayModel
internal import Glibc

/// Receives what a `JSONLexer` reads, token by token; the bytes are borrowed for the call
/// only. Returning false stops the lexer (the receiver keeps its reason).
protocol JSONLexerEvents {
  func null() -> Bool
  func bool(_ flag: Bool) -> Bool
  /// A number exactly as written.
  func number(_ text: UnsafeBufferPointer<UInt8>) -> Bool
  /// A string's UTF-8 bytes, unescaped.
  func string(_ text: UnsafeBufferPointer<UInt8>) -> Bool
  /// An object member's key, unescaped.
  func key(_ text: UnsafeBufferPointer<UInt8>) -> Bool
  func startArray() -> Bool
  func endArray() -> Bool
  func startObject() -> Bool
  func endObject() -> Bool
}

/// dray's JSON reader for table answers and the `http` step's records (the loader's hot
/// path, where yajl's callbacks were the load's longest thread): one JSON text (RFC 8259)
/// fed in chunks of bytes as they arrive, checked against the grammar and handed over token
/// by token, with no copy of a string that holds no escape.
///
/// What it checks (RFC 8259): the grammar of values, arrays and objects (§2-5); numbers
/// (§6: no leading zero, no `+`, no `.5` or `1.`, no NaN or Infinity); strings (§7: no
/// control character below U+0020 unescaped, only the escapes `\" \\ \/ \b \f \n \r \t
/// \uXXXX`, a UTF-16 surrogate escape only as a pair) and their UTF-8 (§8.1, per RFC 3629:
/// no overlong form, no encoded surrogate, nothing past U+10FFFF). Arrays and objects
/// nested deeper than `maxDepth` levels are refused. Whitespace is RFC 8259's four bytes.
///
/// A token cut by the end of a chunk is kept (its bytes so far) and read whole once the
/// next chunk completes it, so chunks may end anywhere, in a string, an escape, a UTF-8
/// character or a number. The answer's loader spends most of its time here: the parse runs
/// on the bytes of the chunk, plain ASCII of a string eight bytes at a time.
final class JSONLexer {
  /// Why the lexer stopped.
  enum Failure: Error {
    /// The events returned false at the token starting at byte `byte` (counted from 0).
    case stopped(byte: Int)
    /// Not JSON: what was wrong, at byte `byte` (counted from 0 in the whole text).
    case invalid(String, byte: Int)
    /// One of the tokens servers write for a number JSON does not have (`NaN`, `Infinity`).
    case nonNumber(String, byte: Int)
    /// Arrays and objects nested deeper than `maxDepth`, at byte `byte` (from 0).
    case tooDeep(byte: Int)
    /// The text ended, after `bytes` bytes, before its JSON value was complete.
    case truncated(bytes: Int)
    /// The text held no JSON value: `bytes` bytes of whitespace (or none).
    case empty(bytes: Int)
  }

  /// What the lexer expects next (whitespace aside).
  private enum Expect: UInt8 {
    /// A value: at the start, after `:`, or after `,` in an array.
    case value
    /// A value or `]`, after `[`.
    case firstItem
    /// `,` or `]`, after an array's item.
    case nextItem
    /// A key or `}`, after `{`.
    case firstKey
    /// A key, after `,` in an object.
    case key
    /// `:`, after a key.
    case colon
    /// `,` or `}`, after a member's value.
    case nextMember
    /// Nothing but whitespace, after the top-level value.
    case done
  }

  /// The kind of token cut by the end of a chunk.
  private enum Carry { case none, string, bare }

  private var expect = Expect.value
  /// Arrays and objects open.
  private var depth = 0
  /// Per open container, from the outermost: whether it is an array.
  private let containers: UnsafeMutablePointer<Bool>
  /// Bytes fed before the current chunk.
  private var offset = 0
  /// The bytes so far of a token cut by the end of a chunk, from its first byte.
  private var carry: [UInt8] = []
  private var spareCarry: [UInt8] = []
  private var carrying = Carry.none
  /// Where the cut token starts in the whole text (counted from 0).
  private var carryStart = 0
  /// A cut string's last byte is a backslash that escapes the next one.
  private var carryEscaped = false
  /// The unescaped text of a string that holds escapes.
  private var scratch: UnsafeMutablePointer<UInt8>
  private var scratchCapacity = 64 * 1024

  /// Arrays and objects nested deeper are refused (`Failure.tooDeep`).
  let maxDepth: Int

  /// - Parameter maxDepth: the deepest nesting read; deeper is refused (`Failure.tooDeep`).
  init(maxDepth: Int = JSONValue.maxDepth) {
    self.maxDepth = maxDepth
    containers = .allocate(capacity: maxDepth + 1)
    scratch = .allocate(capacity: scratchCapacity)
  }

  deinit {
    containers.deallocate()
    scratch.deallocate()
  }

  /// Reads the next chunk of the text.
  /// - Throws: `Failure`.
  func feed(_ bytes: UnsafeRawBufferPointer, _ events: some JSONLexerEvents) throws {
    guard bytes.count > 0, let raw = bytes.baseAddress else { return }
    let base = raw.assumingMemoryBound(to: UInt8.self)
    let end = base + bytes.count
    var start = base
    if carrying != .none { start = try completeCarry(base, end, events) }
    if start < end { try lex(start, end, origin: offset + (start - base), final: false, events) }
    offset += bytes.count
  }

  /// Says the text is whole.
  /// - Throws: `Failure`: `.truncated` when the value is not complete, `.empty` when none began.
  func finish(_ events: some JSONLexerEvents) throws {
    // A literal or number the text stops inside (`tru`, `-`, `1.`, `2e`) is cut short.
    if carrying == .bare && Self.isCutShort(carry) { throw Failure.truncated(bytes: offset) }
    if carrying == .bare { try lexCarry(events) }
    if carrying == .string { throw Failure.truncated(bytes: offset) }
    guard expect == .done else {
      throw expect == .value && depth == 0 ? Failure.empty(bytes: offset) : Failure.truncated(bytes: offset)
    }
  }

  // MARK: Tokens cut by a chunk's end

  /// Adds the bytes of `chunk` that belong to the cut token; once it is whole, reads it.
  /// - Returns: where the rest of the chunk starts (`end` while the token goes on).
  private func completeCarry(_ base: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, _ events: some JSONLexerEvents) throws
    -> UnsafePointer<UInt8>
  {
    var q = base
    if carrying == .string {
      var escaped = carryEscaped
      while q < end {
        let c = q.pointee
        if escaped {
          escaped = false
        } else if c == JSONByte.backslash {
          escaped = true
        } else if c == JSONByte.quote {
          break
        }
        q += 1
      }
      guard q < end else {
        carry.append(contentsOf: UnsafeBufferPointer(start: base, count: end - base))
        carryEscaped = escaped
        return end
      }
      q += 1  // the closing quote belongs to the string
    } else {
      while q < end && !JSONByte.isDelimiter(q.pointee) { q += 1 }
    }
    carry.append(contentsOf: UnsafeBufferPointer(start: base, count: q - base))
    if q == end && carrying == .bare { return end }
    try lexCarry(events)
    return q
  }

  /// Whether `token` is a literal's beginning, or a number's that needs more digits.
  private static func isCutShort(_ token: [UInt8]) -> Bool {
    for literal in ["true", "false", "null"] where token.count < literal.utf8.count && literal.utf8.starts(with: token) {
      return true
    }
    guard let last = token.last, token.allSatisfy({ JSONByte.isDigit($0) || "-+.eE".utf8.contains($0) }) else { return false }
    return [JSONByte.minus, JSONByte.plus, JSONByte.dot, JSONByte.lowerE, JSONByte.upperE].contains(last)
  }

  /// Reads the cut token, now whole.
  private func lexCarry(_ events: some JSONLexerEvents) throws {
    var token = spareCarry
    swap(&token, &carry)
    carrying = .none
    carryEscaped = false
    defer {
      token.removeAll(keepingCapacity: true)
      spareCarry = token
    }
    try token.withUnsafeBufferPointer { buffer in
      try lex(buffer.baseAddress!, buffer.baseAddress! + buffer.count, origin: carryStart, final: true, events)
    }
  }

  /// Keeps the bytes from `start` to `end` as a token to be completed by the next chunk.
  private func cut(_ kind: Carry, _ start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, at position: Int) {
    carrying = kind
    carryStart = position
    carry.removeAll(keepingCapacity: true)
    carry.append(contentsOf: UnsafeBufferPointer(start: start, count: end - start))
    guard kind == .string else { return }
    var escaped = false
    for c in carry.dropFirst() {
      if escaped { escaped = false } else if c == JSONByte.backslash { escaped = true }
    }
    carryEscaped = escaped
  }

  // MARK: The grammar

  /// Reads the bytes from `base` to `end`, the first at `origin` (from 0) in the whole text.
  /// With `final`, `end` ends the last token (the whole text, or a cut token made whole);
  /// without, a token reaching `end` is kept for the next chunk.
  private func lex(
    _ base: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, final: Bool, _ events: some JSONLexerEvents
  ) throws {
    var expect = self.expect
    var depth = self.depth
    defer {
      self.expect = expect
      self.depth = depth
    }
    var p = base
    func position(_ q: UnsafePointer<UInt8>) -> Int { origin + (q - base) }
    func afterValue() {
      expect = depth == 0 ? .done : containers[depth - 1] ? .nextItem : .nextMember
    }
    // The `]` or `}` at `p` closes the innermost container.
    func close(isArray: Bool) throws {
      depth -= 1
      guard isArray ? events.endArray() : events.endObject() else { throw Failure.stopped(byte: position(p)) }
      afterValue()
      p += 1
    }

    while p < end {
      let c = p.pointee
      if c <= JSONByte.space && (c == JSONByte.space || c == JSONByte.lineFeed || c == JSONByte.carriageReturn || c == JSONByte.tab) {
        p += 1
        continue
      }
      switch expect {
      case .nextItem, .nextMember:
        let isArray = expect == .nextItem
        if c == JSONByte.comma {
          expect = isArray ? .value : .key
          p += 1
          continue
        }
        guard c == (isArray ? JSONByte.closeBracket : JSONByte.closeBrace) else {
          let after = isArray ? "',' or ']' after an item of a list" : "',' or '}' after a member of an object"
          throw Failure.invalid("expected \(after), found \(Self.describe(p, end))", byte: position(p))
        }
        try close(isArray: isArray)

      case .value, .firstItem:
        switch c {
        case JSONByte.quote:
          guard let (text, next) = try string(p, end, origin: origin, base: base, final: final) else {
            cut(.string, p, end, at: origin + (p - base))
            return
          }
          guard events.string(text) else { throw Failure.stopped(byte: position(p)) }
          p = next
          afterValue()
        case JSONByte.openBracket, JSONByte.openBrace:
          guard depth < maxDepth else { throw Failure.tooDeep(byte: position(p)) }
          let isArray = c == JSONByte.openBracket
          containers[depth] = isArray
          depth += 1
          guard isArray ? events.startArray() : events.startObject() else { throw Failure.stopped(byte: position(p)) }
          expect = isArray ? .firstItem : .firstKey
          p += 1
        case JSONByte.closeBracket where expect == .firstItem:
          try close(isArray: true)
        case JSONByte.closeBracket, JSONByte.closeBrace, JSONByte.comma, JSONByte.colon:
          throw Failure.invalid("expected a value, found \(Self.describe(p, end))", byte: position(p))
        default:
          guard let next = try bare(p, end, origin: origin, base: base, final: final, events) else {
            cut(.bare, p, end, at: origin + (p - base))
            return
          }
          p = next
          afterValue()
        }

      case .firstKey, .key:
        if c == JSONByte.closeBrace && expect == .firstKey {
          try close(isArray: false)
          continue
        }
        guard c == JSONByte.quote else {
          throw Failure.invalid("expected a key (a string) in an object, found \(Self.describe(p, end))", byte: position(p))
        }
        guard let (text, next) = try string(p, end, origin: origin, base: base, final: final) else {
          cut(.string, p, end, at: origin + (p - base))
          return
        }
        guard events.key(text) else { throw Failure.stopped(byte: position(p)) }
        p = next
        expect = .colon

      case .colon:
        guard c == JSONByte.colon else {
          throw Failure.invalid("expected ':' after a key, found \(Self.describe(p, end))", byte: position(p))
        }
        expect = .value
        p += 1

      case .done:
        throw Failure.invalid("more text after the end of the JSON value: \(Self.describe(p, end))", byte: position(p))
      }
    }
  }

  // MARK: Numbers and literals

  /// Reads the number, `true`, `false` or `null` at `p` and hands it over.
  /// - Returns: the byte after it; nil when it reaches `end` and the next chunk may go on with it.
  private func bare(
    _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, base: UnsafePointer<UInt8>, final: Bool,
    _ events: some JSONLexerEvents
  ) throws -> UnsafePointer<UInt8>? {
    if p.pointee == JSONByte.minus || JSONByte.isDigit(p.pointee) {
      let length = Self.numberLength(p, end)
      if length >= 0 && (p + length == end ? final : JSONByte.isDelimiter(p[length])) {
        guard events.number(UnsafeBufferPointer(start: p, count: length)) else { throw Failure.stopped(byte: origin + (p - base)) }
        return p + length
      }
    }
    if Self.isLiteral("null", p, end, final) {
      guard events.null() else { throw Failure.stopped(byte: origin + (p - base)) }
      return p + 4
    }
    if Self.isLiteral("true", p, end, final) {
      guard events.bool(true) else { throw Failure.stopped(byte: origin + (p - base)) }
      return p + 4
    }
    if Self.isLiteral("false", p, end, final) {
      guard events.bool(false) else { throw Failure.stopped(byte: origin + (p - base)) }
      return p + 5
    }
    // Wrong, or cut: read to its end, for the message.
    var q = p
    while q < end && !JSONByte.isDelimiter(q.pointee) { q += 1 }
    if q == end && !final { return nil }
    let token = UnsafeBufferPointer(start: p, count: q - p)
    let byte = origin + (p - base)
    let head = String(decoding: token.prefix(16), as: UTF8.self)
    if let name = Self.nonNumbers.first(where: { head.hasPrefix($0) }) { throw Failure.nonNumber(name, byte: byte) }
    let what = JSONByte.isDigit(p.pointee) || p.pointee == JSONByte.minus ? "not a JSON number" : "not a JSON value"
    throw Failure.invalid(Self.describe(token: token, what, atStart: byte == 0), byte: byte)
  }

  /// A wrong token for a message: `'tru' is not a JSON value`, its first 24 characters
  /// quoted when they are printable text; else its first 8 bytes in hexadecimal (`the bytes
  /// 1F 8B 08 00 … are not a JSON value`), followed by what they are when they start as a
  /// known kind of bytes does (a byte order mark, gzip, a PNG image) or with a NUL byte, as
  /// UTF-16 text's ASCII characters do. Replacement characters or invisible ones (a byte
  /// order mark, U+200B) would show the user nothing of what the server sent.
  private static func describe(token: UnsafeBufferPointer<UInt8>, _ what: String, atStart: Bool) -> String {
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
  private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
    guard scalar.value > 0x20 && scalar.value != 0x7F && scalar != "\u{FFFD}" else { return false }
    switch scalar.properties.generalCategory {
    case .control, .format, .surrogate, .privateUse, .unassigned, .spaceSeparator, .lineSeparator, .paragraphSeparator: return false
    default: return true
    }
  }

  /// Whether `literal` is at `p`, ended by a delimiter (or by `end` when `final`).
  @inline(__always)
  private static func isLiteral(_ literal: StaticString, _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, _ final: Bool)
    -> Bool
  {
    let n = literal.utf8CodeUnitCount
    guard end - p >= n, memcmp(p, literal.utf8Start, n) == 0 else { return false }
    return p + n == end ? final : JSONByte.isDelimiter(p[n])
  }

  /// The tokens servers write for a number JSON does not have (no NaN or Infinity).
  private static let nonNumbers = ["NaN", "-Infinity", "Infinity", "-NaN", "nan", "inf", "-inf"]

  /// The length of the number at `p` by RFC 8259 §6
  /// (`-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`), up to the first byte that cannot
  /// go on with it (or `end`); -1 when the bytes are not a number or stop where a digit is due.
  @inline(__always)
  private static func numberLength(_ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> Int {
    var q = p
    @inline(__always) func digits() -> Bool {
      guard q < end, JSONByte.isDigit(q.pointee) else { return false }
      q += 1
      while q < end && JSONByte.isDigit(q.pointee) { q += 1 }
      return true
    }
    if q.pointee == JSONByte.minus { q += 1 }
    if q < end && q.pointee == JSONByte.zero {
      q += 1
    } else if !digits() {
      return -1
    }
    if q < end && q.pointee == JSONByte.dot {
      q += 1
      guard digits() else { return -1 }
    }
    if q < end && (q.pointee == JSONByte.lowerE || q.pointee == JSONByte.upperE) {
      q += 1
      if q < end && (q.pointee == JSONByte.plus || q.pointee == JSONByte.minus) { q += 1 }
      guard digits() else { return -1 }
    }
    return q - p
  }

  // MARK: Strings

  /// Reads the string whose opening quote is at `p`.
  /// - Returns: its bytes (the chunk's own when it holds no escape, else unescaped into
  ///   `scratch`) and the byte after its closing quote; nil when it reaches `end` before its
  ///   end and the next chunk may go on with it.
  @inline(__always)
  private func string(
    _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, base: UnsafePointer<UInt8>, final: Bool
  ) throws -> (UnsafeBufferPointer<UInt8>, UnsafePointer<UInt8>)? {
    let first = p + 1
    var q = first
    while q < end {
      if end - q >= 8 {
        let special = Self.specialBytes(UnsafeRawPointer(q).loadUnaligned(as: UInt64.self))
        if special == 0 {
          q += 8
          continue
        }
        q += special.trailingZeroBitCount >> 3
      }
      let c = q.pointee
      if c == JSONByte.quote { return (UnsafeBufferPointer(start: first, count: q - first), q + 1) }
      if c == JSONByte.backslash { return try unescaped(p, from: q, end, origin: origin, base: base, final: final) }
      if c < JSONByte.space { throw Self.controlCharacter(c, byte: origin + (q - base)) }
      if c < 0x80 {
        q += 1
        continue
      }
      let length = Self.utf8Length(q, end)
      if length > 0 {
        q += length
      } else if length == 0 && !final {
        return nil
      } else {
        throw Self.notUTF8(byte: origin + (q - base))
      }
    }
    if final { throw Failure.truncated(bytes: origin + (end - base)) }
    return nil
  }

  /// Reads the rest of a string that holds an escape at `q`, unescaping it into `scratch`.
  private func unescaped(
    _ p: UnsafePointer<UInt8>, from start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int,
    base: UnsafePointer<UInt8>, final: Bool
  ) throws -> (UnsafeBufferPointer<UInt8>, UnsafePointer<UInt8>)? {
    let first = p + 1
    reserve(start - first + 16, used: 0)
    var out = scratch
    out.update(from: first, count: start - first)
    out += start - first
    var q = start
    func byte(_ at: UnsafePointer<UInt8>) -> Int { origin + (at - base) }
    while q < end {
      // One step writes at most 12 bytes (a plain run of 7, then a 4-byte character).
      if out - scratch + 16 > scratchCapacity {
        let used = out - scratch
        reserve(used + 16, used: used)
        out = scratch + used
      }
      if end - q >= 8 {
        let word = UnsafeRawPointer(q).loadUnaligned(as: UInt64.self)
        let special = Self.specialBytes(word)
        if special == 0 {
          UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
          out += 8
          q += 8
          continue
        }
        let plain = special.trailingZeroBitCount >> 3
        out.update(from: q, count: plain)
        out += plain
        q += plain
      }
      let c = q.pointee
      if c == JSONByte.quote { return (UnsafeBufferPointer(start: scratch, count: out - scratch), q + 1) }
      if c == JSONByte.backslash {
        guard end - q >= 2 else { break }
        let escape = q[1]
        switch escape {
        case JSONByte.quote, JSONByte.backslash, JSONByte.slash: out.pointee = escape
        case JSONByte.lowerB: out.pointee = 0x08
        case JSONByte.lowerF: out.pointee = 0x0C
        case JSONByte.lowerN: out.pointee = JSONByte.lineFeed
        case JSONByte.lowerR: out.pointee = JSONByte.carriageReturn
        case JSONByte.lowerT: out.pointee = JSONByte.tab
        case JSONByte.lowerU:
          guard let (scalar, length) = try Self.unicodeEscape(q, end, byte: byte(q), final: final) else { return nil }
          out += Self.writeUTF8(scalar, to: out)
          q += length
          continue
        default:
          throw Failure.invalid(
            "'\\\(Self.describeByte(escape))' is not a JSON escape (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)", byte: byte(q))
        }
        out += 1
        q += 2
        continue
      }
      if c < JSONByte.space { throw Self.controlCharacter(c, byte: byte(q)) }
      if c < 0x80 {
        out.pointee = c
        out += 1
        q += 1
        continue
      }
      let length = Self.utf8Length(q, end)
      guard length > 0 else {
        if length == 0 && !final { return nil }
        throw Self.notUTF8(byte: byte(q))
      }
      out.update(from: q, count: length)
      out += length
      q += length
    }
    if final { throw Failure.truncated(bytes: origin + (end - base)) }
    return nil
  }

  /// Makes `scratch` hold at least `capacity` bytes, keeping its first `used`.
  private func reserve(_ capacity: Int, used: Int) {
    guard scratchCapacity < capacity else { return }
    let (larger, size) = RowStaging.grow(scratch, used: used, capacity: scratchCapacity, more: capacity - used)
    scratch = larger
    scratchCapacity = size
  }

  /// The scalar of the `\uXXXX` escape at `q` (a surrogate pair's two escapes read as one)
  /// and the escape's length in bytes; nil when it reaches `end` and the next chunk may go on.
  private static func unicodeEscape(_ q: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, byte: Int, final: Bool) throws
    -> (UInt32, Int)?
  {
    // The four digits of the escape at `at` (its backslash and `u` already seen), nil when
    // they are cut by `end` and every digit present is one.
    func hex(_ at: UnsafePointer<UInt8>) throws -> UInt32? {
      var value: UInt32 = 0
      for i in 2..<6 {
        guard at + i < end else {
          if final { throw badEscape(at, length: i, byte: byte + (at - q)) }
          return nil
        }
        guard let digit = hexValue(at[i]) else { throw badEscape(at, length: i + 1, byte: byte + (at - q)) }
        value = value << 4 | digit
      }
      return value
    }
    guard let high = try hex(q) else { return nil }
    switch high {
    case 0xD800...0xDBFF:
      // A high surrogate: the low one must follow as the next escape (RFC 8259 §7). Bytes
      // cut by `end` wait for the next chunk only while those present fit.
      if q + 6 == end || q + 7 == end && q[6] == JSONByte.backslash {
        if final { throw loneSurrogate(high, byte: byte) }
        return nil
      }
      guard q[6] == JSONByte.backslash, q[7] == JSONByte.lowerU else { throw loneSurrogate(high, byte: byte) }
      guard let low = try hex(q + 6) else { return nil }
      guard (0xDC00...0xDFFF).contains(low) else { throw loneSurrogate(high, byte: byte) }
      return (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12)
    case 0xDC00...0xDFFF:
      throw loneSurrogate(high, byte: byte)
    default:
      return (high, 6)
    }
  }

  @inline(__always)
  private static func hexValue(_ c: UInt8) -> UInt32? {
    switch c {
    case JSONByte.zero...JSONByte.nine: UInt32(c - JSONByte.zero)
    case 0x61...0x66: UInt32(c - 0x61 + 10)
    case 0x41...0x46: UInt32(c - 0x41 + 10)
    default: nil
    }
  }

  /// Writes `scalar` as UTF-8 at `out`; returns its length in bytes.
  private static func writeUTF8(_ scalar: UInt32, to out: UnsafeMutablePointer<UInt8>) -> Int {
    switch scalar {
    case 0..<0x80:
      out[0] = UInt8(scalar)
      return 1
    case 0x80..<0x800:
      out[0] = UInt8(0xC0 | scalar >> 6)
      out[1] = UInt8(0x80 | scalar & 0x3F)
      return 2
    case 0x800..<0x10000:
      out[0] = UInt8(0xE0 | scalar >> 12)
      out[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[2] = UInt8(0x80 | scalar & 0x3F)
      return 3
    default:
      out[0] = UInt8(0xF0 | scalar >> 18)
      out[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
      out[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[3] = UInt8(0x80 | scalar & 0x3F)
      return 4
    }
  }

  /// The length of the UTF-8 character starting with the byte (at least 0x80) at `q`, by
  /// RFC 3629 §4; 0 when it is cut by `end` (valid so far), -1 when it is not UTF-8.
  @inline(__always)
  private static func utf8Length(_ q: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> Int {
    let lead = q.pointee
    let length: Int
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    switch lead {
    case 0xC2...0xDF: length = 2
    case 0xE0:
      length = 3
      low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED:
      length = 3
      high = 0x9F
    case 0xF0:
      length = 4
      low = 0x90
    case 0xF1...0xF3: length = 4
    case 0xF4:
      length = 4
      high = 0x8F
    default: return -1
    }
    // Only the second byte has a narrower range.
    for i in 1..<length {
      guard q + i < end else { return 0 }
      let c = q[i]
      if i == 1 ? (c < low || c > high) : (c & 0xC0 != 0x80) { return -1 }
    }
    return length
  }

  /// Bytes of `word` (eight bytes of text, the first in the lowest byte) that a string's
  /// plain run stops at: `"`, `\`, below U+0020, or at least 0x80. The lowest set bit is the
  /// first such byte's top bit (a borrow only ever marks bytes after a real one).
  @inline(__always)
  private static func specialBytes(_ word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let quotes = word ^ (ones &* UInt64(JSONByte.quote))
    let backslashes = word ^ (ones &* UInt64(JSONByte.backslash))
    let zeroQuote = (quotes &- ones) & ~quotes
    let zeroBackslash = (backslashes &- ones) & ~backslashes
    let control = (word &- ones &* UInt64(JSONByte.space)) & ~word
    return (zeroQuote | zeroBackslash | control | word) & highs
  }

  // MARK: Messages

  private static func controlCharacter(_ c: UInt8, byte: Int) -> Failure {
    .invalid(
      "a string holds the control character \(describeByte(c)) unescaped (JSON needs it escaped, as \\u00\(hexDigits(c)))", byte: byte)
  }

  private static func notUTF8(byte: Int) -> Failure { .invalid("a string holds bytes that are not UTF-8", byte: byte) }

  private static func loneSurrogate(_ value: UInt32, byte: Int) -> Failure {
    .invalid(
      "a string holds \\u\(String(value, radix: 16, uppercase: true)), half of a UTF-16 surrogate pair without its other half (not a character)",
      byte: byte)
  }

  /// The escape at `q` is wrong at its byte `length`: it is quoted up to that byte.
  private static func badEscape(_ q: UnsafePointer<UInt8>, length: Int, byte: Int) -> Failure {
    let shown = String(decoding: UnsafeBufferPointer(start: q, count: length), as: UTF8.self)
    return .invalid("'\(PrintableText.escaped(shown))' is not a JSON escape (\\u takes four hexadecimal digits)", byte: byte)
  }

  private static func hexDigits(_ c: UInt8) -> String {
    let digits = String(c, radix: 16, uppercase: true)
    return c < 16 ? "0" + digits : digits
  }

  /// One byte for a message: `'x'`, or `0x1F` when it is not printable ASCII.
  private static func describeByte(_ c: UInt8) -> String {
    c > JSONByte.space && c < 0x7F ? String(UnicodeScalar(c)) : "0x" + hexDigits(c)
  }

  /// What is found at `p`, for a message.
  private static func describe(_ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> String {
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
}

@available(*, unavailable)
extension JSONLexer: Sendable {}

/// The ASCII bytes of JSON's grammar.
enum JSONByte {
  static let tab: UInt8 = 0x09
  static let lineFeed: UInt8 = 0x0A
  static let carriageReturn: UInt8 = 0x0D
  static let space: UInt8 = 0x20
  static let quote: UInt8 = 0x22
  static let plus: UInt8 = 0x2B
  static let comma: UInt8 = 0x2C
  static let minus: UInt8 = 0x2D
  static let dot: UInt8 = 0x2E
  static let slash: UInt8 = 0x2F
  static let zero: UInt8 = 0x30
  static let nine: UInt8 = 0x39
  static let colon: UInt8 = 0x3A
  static let upperE: UInt8 = 0x45
  static let openBracket: UInt8 = 0x5B
  static let backslash: UInt8 = 0x5C
  static let closeBracket: UInt8 = 0x5D
  static let lowerB: UInt8 = 0x62
  static let lowerE: UInt8 = 0x65
  static let lowerF: UInt8 = 0x66
  static let lowerN: UInt8 = 0x6E
  static let lowerR: UInt8 = 0x72
  static let lowerT: UInt8 = 0x74
  static let lowerU: UInt8 = 0x75
  static let openBrace: UInt8 = 0x7B
  static let closeBrace: UInt8 = 0x7D

  @inline(__always)
  static func isDigit(_ c: UInt8) -> Bool { c &- zero < 10 }

  /// Whether `c` ends a number or a literal: whitespace, a structural character or a quote.
  @inline(__always)
  static func isDelimiter(_ c: UInt8) -> Bool {
    switch c {
    case comma, closeBracket, closeBrace, space, lineFeed, carriageReturn, tab, colon, openBracket, openBrace, quote: true
    default: false
    }
  }
}
