public import DrayModel

/// Writes a `JSONValue` as JSON text in a random layout and with random escapes, optionally
/// with one fault, for differential tests of JSON readers.
///
/// Numbers are written as their text (`.number`), so a fault can also be an invalid number
/// placed in the tree. Strings and keys are written character by character, each either raw
/// (UTF-8) or escaped (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\uD83D\uDE00`
/// with random hex case).
public enum RandomJSONText {
  /// How tokens are spaced.
  public enum Layout: CaseIterable, Sendable {
    /// No whitespace at all.
    case compact
    /// 0-3 random whitespace bytes (space, tab, CR, LF) before and after every token.
    case spaced
    /// One item a line, indented by two spaces a level.
    case pretty
  }

  /// How strings are escaped.
  public enum Escaping: Sendable {
    /// Each character raw or escaped at random (those JSON requires escaped always escaped).
    case random
    /// Only `"`, `\` and control characters, in their short forms where they have one, as
    /// Python's `json.dumps(ensure_ascii=False)` writes.
    case minimal
  }

  /// One fault in the text; `n` counts from 0 in writing order. A fault whose `n` is past the
  /// last place of its kind leaves the text valid.
  public enum Fault: Sendable {
    /// `bytes` raw inside string literal `n` (keys count), before one of its characters (or at
    /// its end).
    case inString(n: Int, bytes: [UInt8])
    /// A comma after the last item of array or object `n` (an empty one too).
    case trailingComma(n: Int)
    /// Comma `n` between items left out.
    case missingComma(n: Int)
    /// The colon of object member `n` left out.
    case missingColon(n: Int)
    /// `text` instead of number `n`.
    case number(n: Int, text: String)
    /// `text` instead of literal `n` (`true`, `false`, `null`).
    case literal(n: Int, text: String)
    /// `text` (a comment) in the whitespace before token `n`.
    case between(n: Int, text: String)
    /// `text` after the whole value (a second top-level value, say).
    case after(text: String)

    var missingColon: Int? { if case .missingColon(let n) = self { n } else { nil } }
    var missingComma: Int? { if case .missingComma(let n) = self { n } else { nil } }
    var trailingComma: Int? { if case .trailingComma(let n) = self { n } else { nil } }
  }

  /// The text of `value`.
  public static func write(
    _ value: JSONValue, layout: Layout, escaping: Escaping = .random, fault: Fault? = nil, using random: inout SeededRandom
  ) -> [UInt8] {
    var writer = Writer(layout: layout, escaping: escaping, fault: fault, random: random)
    writer.gap(level: 0)
    writer.write(value, level: 0)
    writer.gap(level: 0)
    if case .after(let text) = fault { writer.out += text.utf8 }
    random = writer.random
    return writer.out
  }

  private struct Writer {
    let layout: Layout
    let escaping: Escaping
    let fault: Fault?
    var random: SeededRandom
    var out: [UInt8] = []
    /// The places of each kind written so far.
    var seen = Places()

    init(layout: Layout, escaping: Escaping, fault: Fault?, random: SeededRandom) {
      self.layout = layout
      self.escaping = escaping
      self.fault = fault
      self.random = random
    }

    /// Whitespace between tokens (and the `between` fault's text before token `seen.tokens`).
    mutating func gap(level: Int, line: Bool = false) {
      switch layout {
      case .compact: break
      case .spaced:
        for _ in 0..<random.int(in: 0...3) { out.append(random.element(of: [0x20, 0x09, 0x0D, 0x0A])) }
      case .pretty:
        if line { out += [0x0A] + [UInt8](repeating: 0x20, count: 2 * level) }
      }
    }

    mutating func token(_ text: some Sequence<UInt8>) {
      if case .between(let n, let comment) = fault, n == seen.tokens { out += comment.utf8 }
      seen.tokens += 1
      out += text
    }

    mutating func write(_ value: JSONValue, level: Int) {
      switch value {
      case .null: literal("null")
      case .bool(let flag): literal(flag ? "true" : "false")
      case .integer(let integer): number(String(integer))
      case .number(let text): number(text)
      case .string(let text): string(text)
      case .array(let items):
        container(open: "[", close: "]", count: items.count, level: level) { writer, index in
          writer.write(items[index], level: level + 1)
        }
      case .object(let pairs):
        container(open: "{", close: "}", count: pairs.count, level: level) { writer, index in
          writer.string(pairs[index].key)
          writer.gap(level: level + 1)
          if !writer.faulted(at: writer.seen.colons, \.missingColon) { writer.token(":".utf8) }
          writer.seen.colons += 1
          if writer.layout == .pretty { writer.out.append(0x20) }
          writer.gap(level: level + 1)
          writer.write(pairs[index].value, level: level + 1)
        }
      }
    }

    mutating func container(open: String, close: String, count: Int, level: Int, item: (inout Writer, Int) -> Void) {
      let n = seen.containers
      seen.containers += 1
      token(open.utf8)
      for index in 0..<count {
        if index > 0 {
          gap(level: level + 1)
          if !faulted(at: seen.commas, \.missingComma) { token(",".utf8) }
          seen.commas += 1
        }
        gap(level: level + 1, line: true)
        item(&self, index)
      }
      if faulted(at: n, \.trailingComma) { token(",".utf8) }
      gap(level: level, line: count > 0)
      token(close.utf8)
    }

    /// Whether the fault is of the kind `kind` picks out, at place `n` of that kind.
    func faulted(at n: Int, _ kind: (Fault) -> Int?) -> Bool { fault.flatMap(kind) == n }

    mutating func literal(_ text: String) {
      if case .literal(let n, let replacement) = fault, n == seen.literals { token(replacement.utf8) } else { token(text.utf8) }
      seen.literals += 1
    }

    mutating func number(_ text: String) {
      if case .number(let n, let replacement) = fault, n == seen.numbers { token(replacement.utf8) } else { token(text.utf8) }
      seen.numbers += 1
    }

    mutating func string(_ text: String) {
      var literal: [UInt8] = [0x22]
      var injected: (at: Int, bytes: [UInt8])?
      if case .inString(let n, let bytes) = fault, n == seen.strings {
        injected = (random.int(in: 0...text.unicodeScalars.count), bytes)
      }
      seen.strings += 1
      for (index, scalar) in text.unicodeScalars.enumerated() {
        if let injected, injected.at == index { literal += injected.bytes }
        escape(scalar, into: &literal)
      }
      if let injected, injected.at == text.unicodeScalars.count { literal += injected.bytes }
      literal.append(0x22)
      token(literal)
    }

    mutating func escape(_ scalar: Unicode.Scalar, into literal: inout [UInt8]) {
      let required = scalar == "\"" || scalar == "\\" || scalar.value < 0x20
      // Raw: always when minimal and allowed, otherwise half of the time when allowed.
      let choice = escaping == .minimal ? (required ? 2 : 0) : random.below(4)
      if choice < 2 && !required {
        literal += scalar.utf8
        return
      }
      let short: String? =
        switch scalar {
        case "\"": "\\\""
        case "\\": "\\\\"
        case "/": "\\/"
        case "\u{08}": "\\b"
        case "\u{0C}": "\\f"
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        default: nil
        }
      if choice < 3, let short {
        literal += short.utf8
      } else {
        let upper = escaping == .random && random.below(2) == 0
        for unit in scalar.utf16 { literal += Self.unicodeEscape(unit, upper: upper) }
      }
    }

    static func unicodeEscape(_ unit: UInt16, upper: Bool) -> [UInt8] {
      let hex = String(unit, radix: 16, uppercase: upper)
      return Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
    }
  }
}

extension RandomJSONText {
  /// How many places of each kind the text of a value has, for a fault's `n`.
  struct Places {
    var strings = 0
    var containers = 0
    var commas = 0
    var colons = 0
    var numbers = 0
    var literals = 0
    var tokens = 0

    init() {}
    init(_ value: JSONValue) { add(value) }

    mutating func add(_ value: JSONValue) {
      tokens += 1
      switch value {
      case .null, .bool: literals += 1
      case .integer, .number: numbers += 1
      case .string: strings += 1
      case .array(let items):
        containers += 1
        commas += max(0, items.count - 1)
        tokens += 1 + max(0, items.count - 1)
        for item in items { add(item) }
      case .object(let pairs):
        containers += 1
        commas += max(0, pairs.count - 1)
        colons += pairs.count
        strings += pairs.count
        tokens += 1 + max(0, pairs.count - 1) + 2 * pairs.count
        for pair in pairs { add(pair.value) }
      }
    }
  }

  /// Numbers JSON does not allow (RFC 8259 §6), some of which servers write.
  public static let badNumbers = [
    "01", "-01", "00", "1.", "-1.", ".5", "-.5", "+1", "1e", "1E+", "1e-", "-", "--1", "NaN", "Infinity", "-Infinity",
    "nan", "inf", "0x10", "1.5.2", "1e5.5", "1_000", "- 1", "1ee2", "١",
  ]

  /// Misspelt literals.
  public static let badLiterals = ["tru", "nul", "fals", "True", "NULL", "nulll", "truee", "t", "n", "undefined", "None"]

  /// Bytes that make a string literal invalid where they stand (or, for the last ones, that
  /// yajl read leniently): UTF-8 no reader may accept, UTF-8 yajl let through (overlong
  /// forms, encoded UTF-16 surrogates, code points past U+10FFFF), raw control characters,
  /// bad escapes, `\u` escapes of UTF-16 surrogates outside a pair, and `\u0000`, which is
  /// valid.
  public static let badInString: [[UInt8]] =
    [
      [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFC, 0x84, 0x80, 0x80, 0x80, 0x80], [0xFE], [0xFF], [0x80], [0xBF], [0xC3],
      [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x28], [0xE2, 0x28, 0xA1],
      [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xF0, 0x80, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],
      [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF],
    ] + (0...0x1F).map { [UInt8($0)] }
    + [
      "\\x", "\\u12G4", "\\u", "\\u1", "\\u12", "\\u123", "\\U00e9", "\\a", "\\0", "\\'", "\\ ", "\\",
      "\\ud800", "\\udc00", "\\uDBFF\\u0041", "\\ud83d", "\\u0000",
    ].map { Array($0.utf8) }

  /// Comments (JSON has none), whitespace JSON does not allow (vertical tab, form feed), and
  /// stray text (a string never ended among it).
  public static let badBetween = [
    "/* c */", "// c\n", "#", "\u{0B}", "\u{0C}", ",", ":", "[", "]", "{", "}", "\"x\"", "\"x", "1", "null",
  ]

  /// A random fault for the text of `value`, at one of its places.
  public static func randomFault(in value: JSONValue, using random: inout SeededRandom) -> Fault {
    let places = Places(value)
    func at(_ count: Int) -> Int { random.below(max(1, count)) }
    switch random.below(8) {
    case 0: return .inString(n: at(places.strings), bytes: random.element(of: badInString))
    case 1: return .trailingComma(n: at(places.containers))
    case 2: return .missingComma(n: at(places.commas))
    case 3: return .missingColon(n: at(places.colons))
    case 4: return .number(n: at(places.numbers), text: random.element(of: badNumbers))
    case 5: return .literal(n: at(places.literals), text: random.element(of: badLiterals))
    case 6: return .between(n: at(places.tokens), text: random.element(of: badBetween))
    default: return .after(text: random.element(of: badBetween))
    }
  }

  /// `count` bytes cut into random pieces of 1 byte to 64 KiB, most of them small (1-8 bytes),
  /// so that pieces end inside every kind of token: the ranges, in order, covering `0..<count`.
  public static func pieces(of count: Int, using random: inout SeededRandom) -> [Range<Int>] {
    var pieces: [Range<Int>] = []
    var start = 0
    while start < count {
      let size =
        switch random.below(10) {
        case 0..<4: random.int(in: 1...8)
        case 4..<7: random.int(in: 9...256)
        case 7..<9: random.int(in: 257...8192)
        default: random.int(in: 8193...65536)
        }
      pieces.append(start..<min(count, start + size))
      start += size
    }
    return pieces
  }
}
