/// A number compared by its exact value: an integer within 64 bits stays an integer, any
/// other number is a double.
///
/// Comparing through doubles alone would call 9223372036854775806 and 9223372036854775807
/// equal (both round to 2^63); here integers compare as integers, and an integer with a
/// double compares exactly too (9007199254740993 is more than 9007199254740992.0).
public enum ExactNumber: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
  case integer(Int64)
  case real(Double)

  public init(integerLiteral value: Int64) { self = .integer(value) }
  public init(floatLiteral value: Double) { self = .real(value) }

  /// The number a JSON value holds: integers and numbers (text that reads as an integer
  /// within 64 bits stays one), booleans as 1 and 0; nil for anything else.
  public init?(_ json: JSONValue) {
    switch json {
    case .integer(let i): self = .integer(i)
    case .number(let text):
      if let i = Int64(text) {
        self = .integer(i)
      } else if let d = Double(text) {
        self = .real(d)
      } else {
        return nil
      }
    case .bool(let b): self = .integer(b ? 1 : 0)
    default: return nil
    }
  }

  /// The number `text` spells when it is exactly a JSON number (RFC 8259 §6: an optional
  /// `-`, digits without a leading zero, an optional fraction and exponent): `12`, `-0.5`,
  /// `1e3`; nil for anything else, such as `inf`, `0x10`, `+1`, `.5`, `1.` or ` 12`.
  /// An integer within 64 bits stays an integer; any other number is the nearest double.
  public init?(jsonNumber text: String) {
    guard ExactNumber.isJSONNumber(text) else { return nil }
    self.init(.number(text))
  }

  /// Whether `text` matches RFC 8259's `number` production exactly.
  public static func isJSONNumber(_ text: String) -> Bool {
    var bytes = Substring(text).utf8[...]
    func digits() -> Int {
      let count = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }.count
      bytes = bytes.dropFirst(count)
      return count
    }
    if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
    let first = bytes.first
    let whole = digits()
    guard whole > 0, !(first == UInt8(ascii: "0") && whole > 1) else { return false }
    if bytes.first == UInt8(ascii: ".") {
      bytes = bytes.dropFirst()
      guard digits() > 0 else { return false }
    }
    if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
      bytes = bytes.dropFirst()
      if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
      guard digits() > 0 else { return false }
    }
    return bytes.isEmpty
  }

  /// The nearest double, for display and for places that only need an approximation.
  public var doubleValue: Double {
    switch self {
    case .integer(let i): Double(i)
    case .real(let d): d
    }
  }

  /// `12`, `0.5`, `9007199254740992` (a whole double below 10^17 with all its digits),
  /// `1e+20`, `Infinity`, `-Infinity`, `NaN`.
  public var description: String {
    switch self {
    case .integer(let i): return String(i)
    case .real(let d):
      if d.isNaN { return "NaN" }
      if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
      if d == d.rounded() && abs(d) < 1e17 { return String(Int64(d)) }
      return String(d)
    }
  }

  /// -1, 0 or 1 as `a` is less than, equal to or greater than `b`; nil when either is NaN.
  public static func compare(_ a: ExactNumber, _ b: ExactNumber) -> Int? {
    switch (a, b) {
    case (.integer(let x), .integer(let y)):
      return x < y ? -1 : x > y ? 1 : 0
    case (.real(let x), .real(let y)):
      if x.isNaN || y.isNaN { return nil }
      return x < y ? -1 : x > y ? 1 : 0
    case (.integer(let i), .real(let d)):
      return compare(d, i).map { -$0 }
    case (.real(let d), .integer(let i)):
      return compare(d, i)
    }
  }

  /// Compares a double with an integer without rounding either.
  private static func compare(_ d: Double, _ i: Int64) -> Int? {
    if d.isNaN { return nil }
    // 2^63 is exact as a double; every Int64 is below it and at or above -2^63.
    if d >= 9_223_372_036_854_775_808.0 { return 1 }
    if d < -9_223_372_036_854_775_808.0 { return -1 }
    let whole = d.rounded(.towardZero)
    let integer = Int64(whole)  // exact: -2^63 <= whole < 2^63
    if integer != i { return integer < i ? -1 : 1 }
    let fraction = d - whole
    return fraction > 0 ? 1 : fraction < 0 ? -1 : 0
  }
}
