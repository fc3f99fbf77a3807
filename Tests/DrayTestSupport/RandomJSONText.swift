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
    var strings = 0
    var containers = 0
    var commas = 0
    var colons = 0
    var numbers = 0
    var literals = 0
    var tokens = 0

    init(layout: Layout, escaping: Escaping, fault: Fault?, random: SeededRandom) {
      self.layout = layout
      self.escaping = escaping
      self.fault = fault
      self.random = random
    }

    /// Whitespace between tokens (and the `between` fault's text before token `tokens`).
    mutating func gap(level: Int, line: Bool = false) {
      switch layout {
      case .compact: break
      case .spaced:
        for _ in 0..<Int.random(in: 0...3, using: &random) { out.append([0x20, 0x09, 0x0D, 0x0A].randomElement(using: &random)!) }
      case .pretty:
        if line { out += [0x0A] + [UInt8](repeating: 0x20, count: 2 * level) }
      }
    }

    mutating func token(_ text: some Sequence<UInt8>) {
      if case .between(let n, let comment) = fault, n == tokens { out += comment.utf8 }
      tokens += 1
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
          if !writer.faulted(at: writer.colons, \.missingColon) { writer.token(":".utf8) }
          writer.colons += 1
          if writer.layout == .pretty { writer.out.append(0x20) }
          writer.gap(level: level + 1)
          writer.write(pairs[index].value, level: level + 1)
        }
      }
    }

    mutating func container(open: String, close: String, count: Int, level: Int, item: (inout Writer, Int) -> Void) {
      let n = containers
      containers += 1
      token(open.utf8)
      for index in 0..<count {
        if index > 0 {
          gap(level: level + 1)
          if !faulted(at: commas, \.missingComma) { token(",".utf8) }
          commas += 1
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
      if case .literal(let n, let replacement) = fault, n == literals { token(replacement.utf8) } else { token(text.utf8) }
      literals += 1
    }

    mutating func number(_ text: String) {
      if case .number(let n, let replacement) = fault, n == numbers { token(replacement.utf8) } else { token(text.utf8) }
      numbers += 1
    }

    mutating func string(_ text: String) {
      var literal: [UInt8] = [0x22]
      var injected: (at: Int, bytes: [UInt8])?
      if case .inString(let n, let bytes) = fault, n == strings {
        injected = (Int.random(in: 0...text.unicodeScalars.count, using: &random), bytes)
      }
      strings += 1
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
  /// `count` bytes cut into random pieces of 1 byte to 64 KiB, most of them small (1-8 bytes),
  /// so that pieces end inside every kind of token: the ranges, in order, covering `0..<count`.
  public static func pieces(of count: Int, using random: inout SeededRandom) -> [Range<Int>] {
    var pieces: [Range<Int>] = []
    var start = 0
    while start < count {
      let size =
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<4: Int.random(in: 1...8, using: &random)
        case 4..<7: Int.random(in: 9...256, using: &random)
        case 7..<9: Int.random(in: 257...8192, using: &random)
        default: Int.random(in: 8193...65536, using: &random)
        }
      pieces.append(start..<min(count, start + size))
      start += size
    }
    return pieces
  }
}
