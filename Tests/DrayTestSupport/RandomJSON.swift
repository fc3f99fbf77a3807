public import DrayModel

/// Random JSON values and table answers (platform-api.md §3) for differential tests of JSON
/// readers, drawn from a `SeededRandom` so that a failing case can be made again from its
/// seed.
///
/// Numbers are always `.number` holding the exact text to write (`-0`, `1E+2`,
/// `18446744073709551616`), never `.integer`, so that a reader's numbers can be checked
/// byte for byte. `RandomJSONText` writes the values out.
public enum RandomJSON {
  /// A table answer of 1-3 table objects, each with a `name`, some of `data`, `insert_rows`
  /// and `delete_ids`, and unknown keys holding any JSON, its keys in random order; each list
  /// holds up to `rows` rows (or ids) of 0-6 values.
  public static func tableAnswer(rows: Int = 8, using random: inout SeededRandom) -> JSONValue {
    .array((0..<random.int(in: 1...3)).map { _ in table(rows: rows, using: &random) })
  }

  /// A table object: `name` once, and random lists and unknown keys around it.
  public static func table(rows: Int, using random: inout SeededRandom) -> JSONValue {
    var pairs: [(key: String, value: JSONValue)] = [("name", .string(string(using: &random)))]
    for key in ["data", "insert_rows"] where (random.below(2) == 0) {
      pairs.append((key, .array((0..<random.int(in: 0...rows)).map { _ in row(using: &random) })))
    }
    if (random.below(2) == 0) {
      pairs.append(("delete_ids", .array((0..<random.int(in: 0...rows)).map { _ in id(using: &random) })))
    }
    for _ in 0..<random.int(in: 0...2) {
      pairs.append((unknownKey(using: &random), value(depth: random.int(in: 0...3), using: &random)))
    }
    pairs.shuffle(using: &random)
    return .object(pairs)
  }

  /// A row: 0-6 values of any kind, nested ones 1-6 levels deep.
  public static func row(using random: inout SeededRandom) -> JSONValue {
    .array((0..<random.int(in: 0...6)).map { _ in value(depth: random.int(in: 1...6), using: &random) })
  }

  /// A row id of `delete_ids`: mostly an integer, sometimes a string.
  public static func id(using random: inout SeededRandom) -> JSONValue {
    random.below(8) == 0 ? .string(string(using: &random)) : .number(integer(using: &random))
  }

  /// A key that is none of the table object's (`version`, `"n\"ame"`, `""`, random text).
  public static func unknownKey(using random: inout SeededRandom) -> String {
    let key =
      (random.below(2) == 0)
      ? random.element(of: ["version", "Name", "data ", "n\"ame", "", "rows"]) : string(using: &random)
    return ["name", "data", "insert_rows", "delete_ids"].contains(key) ? key + "_" : key
  }

  /// Any JSON value; arrays and objects (empty ones too) only while `depth` is above 0, one of
  /// their items then `depth - 1` levels deep, so that a value of depth 6 nests 6 levels.
  public static func value(depth: Int, using random: inout SeededRandom) -> JSONValue {
    switch random.below(20) {
    case 0..<5: return .number(number(using: &random))
    case 5..<11: return .string(string(using: &random))
    case 11..<13: return .null
    case 13: return .bool(true)
    case 14: return .bool(false)
    default:
      guard depth > 0 else { return .null }
      var items = (0..<random.below(3)).map { _ in
        value(depth: random.below(depth), using: &random)
      }
      if depth > 1 { items.insert(nested(depth: depth - 1, using: &random), at: random.int(in: 0...items.count)) }
      if (random.below(2) == 0) { return .array(items) }
      return .object(items.map { (string(using: &random), $0) })
    }
  }

  /// An array or object exactly `depth` levels deep.
  static func nested(depth: Int, using random: inout SeededRandom) -> JSONValue {
    var value: JSONValue
    repeat { value = Self.value(depth: depth, using: &random) } while !isContainer(value)
    return value
  }

  static func isContainer(_ value: JSONValue) -> Bool {
    switch value {
    case .array, .object: true
    default: false
    }
  }

  /// Numbers whose text a reader could get wrong: signed zeros, the edges of Int64 and UInt64,
  /// integers past them, fractions and exponents in every spelling, overflowing exponents.
  public static let specialNumbers = [
    "0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999",
    "-12345678901234567890", "1E+2", "1e2", "1E-2", "-0.0e-0", "0.0", "-0.0", "1e999", "-1e999", "1e-999",
    "0e0", "0E+0", "2.5", "-2.5e-3", "3.141592653589793", "1.7976931348623157e308", "5e-324",
    "123456789012345678901234567890.5",
  ]

  /// A JSON number's text: a special one, or random digits with a fraction and an exponent
  /// now and then.
  public static func number(using random: inout SeededRandom) -> String {
    if random.below(3) == 0 { return random.element(of: specialNumbers) }
    var text = integer(using: &random)
    if (random.below(2) == 0) { text += "." + digits(random.int(in: 1...10), using: &random) }
    if random.below(3) == 0 {
      text += random.element(of: ["e", "E"]) + random.element(of: ["", "+", "-"])
      text += digits(random.int(in: 1...3), using: &random)
    }
    return text
  }

  /// An integer's text, 1-20 digits, without leading zeros, negative now and then.
  public static func integer(using random: inout SeededRandom) -> String {
    let count = random.below(4) == 0 ? random.int(in: 1...20) : random.int(in: 1...4)
    var text = String(random.int(in: (count == 1 ? 0 : 1)...9)) + digits(count - 1, using: &random)
    if random.below(4) == 0 { text = "-" + text }
    return text
  }

  static func digits(_ count: Int, using random: inout SeededRandom) -> String {
    String((0..<count).map { _ in Character(String(random.int(in: 0...9))) })
  }

  /// A string: empty (1 in 10), short (1-12 characters), a few hundred characters (1 in
  /// 20), or long (1,000-40,000 characters, up to about 100 KB written; 1 in 5,000), of ASCII, characters JSON must
  /// escape (`"`, `\`, controls), `/`, and 2-, 3- and 4-byte UTF-8 characters.
  public static func string(using random: inout SeededRandom) -> String {
    let length =
      switch random.below(10_000) {
      case 0..<1000: 0
      case 1000..<9498: 1 + random.below(12)
      case 9498..<9998: 13 + random.below(288)
      default: 1_000 + random.below(39_001)
      }
    var scalars = String.UnicodeScalarView()
    // A long string repeats a random part of up to 1,000 characters.
    for _ in 0..<min(length, 1000) { scalars.append(scalar(using: &random)) }
    var text = String(scalars)
    while text.unicodeScalars.count < length {
      let part = text.unicodeScalars.prefix(length - text.unicodeScalars.count)
      text.unicodeScalars.append(contentsOf: part)
    }
    return text
  }

  /// One character: half of them printable ASCII, the rest from the kinds above.
  public static func scalar(using random: inout SeededRandom) -> Unicode.Scalar {
    func from(_ range: ClosedRange<Int>) -> UInt32 { UInt32(range.lowerBound + random.below(range.count)) }
    let value: UInt32 =
      switch random.below(16) {
      case 0..<8: from(0x20...0x7E)
      case 8: [0x22, 0x5C, 0x2F][random.below(3)]
      case 9: random.below(2) == 0 ? from(0...0x1F) : 0x7F
      case 10, 11: from(0x80...0x7FF)
      // 3 bytes, not a UTF-16 surrogate (those are no characters).
      case 12: from(0x800...0xD7FF)
      case 13: from(0xE000...0xFFFF)
      default: from(0x10000...0x10FFFF)
      }
    // The ranges above hold no UTF-16 surrogate, so every value is a scalar.
    return Unicode.Scalar(value) ?? "\u{FFFD}"
  }

  /// A table answer shaped as `Emulator/generated.py` writes it for load tests and benchmarks:
  /// one table `output_table`, its `data` rows of 8 values (id, code, name, amount, quantity,
  /// active, created, note; a null note in every fifth row).
  public static func benchmarkAnswer(rows: Int, using random: inout SeededRandom) -> JSONValue {
    let words = ["alpha", "beta", "gamma", "дельта", "epsilon", "ζήτα", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let data: [JSONValue] = (1...max(1, rows)).map { i in
      // Python's repr of a float rounded to 4 decimals: at least one decimal, no trailing zeros.
      var fraction = String(random.int(in: 0...9999))
      fraction = String(repeating: "0", count: 4 - fraction.count) + fraction
      while fraction.hasSuffix("0") { fraction.removeLast() }
      let amount = "\(random.below(2) == 0 ? "-" : "")\(random.int(in: 0...999_999)).\(fraction.isEmpty ? "0" : fraction)"
      let code = String(i)
      return .array([
        .number(String(i)),
        .string("C" + String(repeating: "0", count: max(0, 7 - code.count)) + code),
        .string("\(words[i % words.count]) \(words[(i * 7) % words.count])"),
        .number(amount),
        .number(String(random.int(in: 0...100_000))),
        .number(String(i % 2)),
        .string("20\(twoDigits(i % 30))-\(twoDigits(1 + i % 12))-\(twoDigits(1 + i % 28))"),
        i % 5 == 0 ? .null : .string("note \"\(i)\" with, comma"),
      ])
    }
    return .array([.object([("name", .string("output_table")), ("data", .array(data))])])
  }
}
