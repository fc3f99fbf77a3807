internal import DrayModel
internal import Glibc

/// Receives what a `JSONLexer` reads, token by token; the bytes are borrowed for the call
/// only. A throw stops the lexer: it throws `JSONLexer.Failure.stopped` with the error and
/// the byte of the token.
protocol JSONLexerEvents {
  mutating func null() throws
  mutating func bool(_ flag: Bool) throws
  /// A number exactly as written.
  mutating func number(_ text: UnsafeBufferPointer<UInt8>) throws
  /// A string's UTF-8 bytes, unescaped.
  mutating func string(_ text: UnsafeBufferPointer<UInt8>) throws
  /// An object member's key, unescaped.
  mutating func key(_ text: UnsafeBufferPointer<UInt8>) throws
  mutating func startArray() throws
  mutating func endArray() throws
  mutating func startObject() throws
  mutating func endObject() throws
}

/// dray's one JSON reader: table answers (the loader's hot path), the `http` step's records,
/// and every whole document read into a `JSONValue` (schemes, tokens, `--params`, reports).
/// One JSON text (RFC 8259)
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
    /// The events threw `error` at the token starting at byte `byte` (counted from 0).
    case stopped(byte: Int, by: any Error)
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
  var scratch: UnsafeMutablePointer<UInt8>
  var scratchCapacity: Int

  /// Arrays and objects nested deeper are refused (`Failure.tooDeep`).
  let maxDepth: Int

  /// - Parameters:
  ///   - maxDepth: the deepest nesting read; deeper is refused (`Failure.tooDeep`).
  ///   - scratchCapacity: the bytes first set aside for a string with escapes (it grows as
  ///     needed): 64 KiB for answers, less for small documents.
  init(maxDepth: Int = JSONValue.maxDepth, scratchCapacity: Int = 64 * 1024) {
    self.maxDepth = maxDepth
    self.scratchCapacity = scratchCapacity
    containers = .allocate(capacity: maxDepth + 1)
    scratch = .allocate(capacity: scratchCapacity)
  }

  deinit {
    containers.deallocate()
    scratch.deallocate()
  }

  /// Reads the next chunk of the text.
  /// - Throws: `Failure`.
  func feed(_ bytes: UnsafeRawBufferPointer, _ events: inout some JSONLexerEvents) throws {
    guard bytes.count > 0, let raw = bytes.baseAddress else { return }
    let base = raw.assumingMemoryBound(to: UInt8.self)
    let end = base + bytes.count
    var start = base
    if carrying != .none { start = try completeCarry(base, end, &events) }
    if start < end { try lex(start, end, origin: offset + (start - base), final: false, &events) }
    offset += bytes.count
  }

  /// Says the text is whole.
  /// - Throws: `Failure`: `.truncated` when the value is not complete, `.empty` when none began.
  func finish(_ events: inout some JSONLexerEvents) throws {
    // A literal or number the text stops inside (`tru`, `-`, `1.`, `2e`) is cut short.
    if carrying == .bare && Self.isCutShort(carry) { throw Failure.truncated(bytes: offset) }
    if carrying == .bare { try lexCarry(&events) }
    if carrying == .string { throw Failure.truncated(bytes: offset) }
    guard expect == .done else {
      throw expect == .value && depth == 0 ? Failure.empty(bytes: offset) : Failure.truncated(bytes: offset)
    }
  }

  // MARK: Tokens cut by a chunk's end

  /// Adds the bytes of `chunk` that belong to the cut token; once it is whole, reads it.
  /// - Returns: where the rest of the chunk starts (`end` while the token goes on).
  private func completeCarry(_ base: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, _ events: inout some JSONLexerEvents) throws
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
    try lexCarry(&events)
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
  private func lexCarry(_ events: inout some JSONLexerEvents) throws {
    var token = spareCarry
    swap(&token, &carry)
    carrying = .none
    carryEscaped = false
    defer {
      token.removeAll(keepingCapacity: true)
      spareCarry = token
    }
    try token.withUnsafeBufferPointer { buffer in
      // A cut token holds at least its first byte (`cut`), so the buffer has an address.
      guard let start = buffer.baseAddress else { return }
      try lex(start, start + buffer.count, origin: carryStart, final: true, &events)
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
    _ base: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, final: Bool, _ events: inout some JSONLexerEvents
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
      try isArray ? events.endArray() : events.endObject()
      afterValue()
      p += 1
    }

    // A `/` out of place that ends the chunk may start a comment: kept (as a cut token) until
    // the next byte says, so that the message does not depend on where the chunks end.
    func slashAtEnd() -> Bool {
      guard p.pointee == JSONByte.slash, p + 1 == end, !final else { return false }
      cut(.bare, p, end, at: position(p))
      return true
    }

    // The loop is not in a nested function, so that `p`, `expect` and `depth` stay in registers;
    // an error of the events leaves `p` at the token they were given.
    do {
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
            if slashAtEnd() { return }
            throw Self.unexpected("expected \(after), found", p, end, byte: position(p))
          }
          try close(isArray: isArray)

        case .value, .firstItem:
          switch c {
          case JSONByte.quote:
            guard let (text, next) = try string(p, end, origin: origin, base: base, final: final) else {
              cut(.string, p, end, at: origin + (p - base))
              return
            }
            try events.string(text)
            p = next
            afterValue()
          case JSONByte.openBracket, JSONByte.openBrace:
            guard depth < maxDepth else { throw Failure.tooDeep(byte: position(p)) }
            let isArray = c == JSONByte.openBracket
            containers[depth] = isArray
            depth += 1
            try isArray ? events.startArray() : events.startObject()
            expect = isArray ? .firstItem : .firstKey
            p += 1
          case JSONByte.closeBracket where expect == .firstItem:
            try close(isArray: true)
          case JSONByte.closeBracket, JSONByte.closeBrace, JSONByte.comma, JSONByte.colon:
            throw Self.unexpected("expected a value, found", p, end, byte: position(p))
          default:
            guard let next = try bare(p, end, origin: origin, base: base, final: final, &events) else {
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
            if slashAtEnd() { return }
            throw Self.unexpected("expected a key (a string) in an object, found", p, end, byte: position(p))
          }
          guard let (text, next) = try string(p, end, origin: origin, base: base, final: final) else {
            cut(.string, p, end, at: origin + (p - base))
            return
          }
          try events.key(text)
          p = next
          expect = .colon

        case .colon:
          guard c == JSONByte.colon else {
            if slashAtEnd() { return }
            throw Self.unexpected("expected ':' after a key, found", p, end, byte: position(p))
          }
          expect = .value
          p += 1

        case .done:
          if slashAtEnd() { return }
          throw Self.unexpected("more text after the end of the JSON value:", p, end, byte: position(p))
        }
      }
    } catch let failure as Failure {
      throw failure
    } catch {
      throw Failure.stopped(byte: position(p), by: error)
    }
  }

  // MARK: Numbers and literals

  /// Reads the number, `true`, `false` or `null` at `p` and hands it over.
  /// - Returns: the byte after it; nil when it reaches `end` and the next chunk may go on with it.
  private func bare(
    _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, base: UnsafePointer<UInt8>, final: Bool,
    _ events: inout some JSONLexerEvents
  ) throws -> UnsafePointer<UInt8>? {
    if p.pointee == JSONByte.minus || JSONByte.isDigit(p.pointee) {
      let length = Self.numberLength(p, end)
      if length >= 0 && (p + length == end ? final : JSONByte.isDelimiter(p[length])) {
        try events.number(UnsafeBufferPointer(start: p, count: length))
        return p + length
      }
    }
    if Self.isLiteral("null", p, end, final) {
      try events.null()
      return p + 4
    }
    if Self.isLiteral("true", p, end, final) {
      try events.bool(true)
      return p + 4
    }
    if Self.isLiteral("false", p, end, final) {
      try events.bool(false)
      return p + 5
    }
    // Wrong, or cut: read to its end, for the message.
    var q = p
    while q < end && !JSONByte.isDelimiter(q.pointee) { q += 1 }
    if q == end && !final { return nil }
    let token = UnsafeBufferPointer(start: p, count: q - p)
    let byte = origin + (p - base)
    if let comment = Self.comment(p, end) { throw Failure.invalid(comment, byte: byte) }
    let head = String(decoding: token.prefix(16), as: UTF8.self)
    if let name = Self.nonNumbers.first(where: { head.hasPrefix($0) }) { throw Failure.nonNumber(name, byte: byte) }
    let what = JSONByte.isDigit(p.pointee) || p.pointee == JSONByte.minus ? "not a JSON number" : "not a JSON value"
    throw Failure.invalid(Self.describe(token: token, what, atStart: byte == 0), byte: byte)
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
  static let asterisk: UInt8 = 0x2A
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
