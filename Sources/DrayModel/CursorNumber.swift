/// A JSON number as a cursor value (docs/http.md, "Precision"), read by its decimal
/// digits: compared exactly at any length and with any exponent (`1e3` equals `1000`,
/// `0.1234567890123456789` is above `0.1234567890123456788`), never through a double.
struct CursorNumber: Sendable, Hashable {
  let negative: Bool
  /// The significant digits (ASCII), without leading or trailing zeros; empty for zero.
  let digits: [UInt8]
  /// Where the point is: the value is 0.`digits` × 10^`point`.
  let point: Int
  /// The fraction digits of the number's plain decimal form as written: 2 for
  /// `1701600000.25`, 4 for `1.5e-3`, 0 for `1e3`, 1 for `100000000000000000000.0`.
  let writtenFraction: Int
  /// Whether it is written with a fraction or an exponent.
  let hasFractionOrExponent: Bool
  /// The nearest double, for the check that a predecessor reads as another double.
  let double: Double

  /// The largest exponent read; a number written with a larger one (`1e999999`) is not a
  /// cursor value.
  static let maxExponent = 100_000

  /// The number `text` spells (RFC 8259 §6: `-1`, `1701600000.25`, `1e3`, `1.5E-3`); nil
  /// for anything else, or an exponent beyond ±`maxExponent`.
  init?(_ text: String) {
    var bytes = Array(text.utf8)[...]
    let negative = bytes.first == UInt8(ascii: "-")
    if negative { bytes = bytes.dropFirst() }
    func digits() -> ArraySlice<UInt8> {
      let run = bytes.prefix { (48...57).contains($0) }
      bytes = bytes.dropFirst(run.count)
      return run
    }
    let whole = digits()
    guard !whole.isEmpty, !(whole.first == 48 && whole.count > 1) else { return nil }
    var fraction: ArraySlice<UInt8> = []
    var exponent = 0
    if bytes.first == UInt8(ascii: ".") {
      bytes = bytes.dropFirst()
      fraction = digits()
      guard !fraction.isEmpty else { return nil }
    }
    let marked = bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E")
    if marked {
      bytes = bytes.dropFirst()
      let sign = bytes.first
      if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
      let written = digits()
      let run = written.drop { $0 == 48 }
      guard !written.isEmpty, run.count <= 6 else { return nil }
      exponent = run.reduce(0) { $0 * 10 + Int($1 - 48) } * (sign == UInt8(ascii: "-") ? -1 : 1)
      guard abs(exponent) <= CursorNumber.maxExponent else { return nil }
    }
    guard bytes.isEmpty else { return nil }
    // value = (whole fraction as one integer) × 10^(exponent - fraction.count)
    let all = Array(whole) + Array(fraction)
    let scale = exponent - fraction.count
    let significant = all.drop { $0 == 48 }
    var trimmed = Array(significant)
    while trimmed.last == 48 { trimmed.removeLast() }
    self.negative = negative
    self.digits = trimmed
    point = trimmed.isEmpty ? 0 : significant.count + scale
    writtenFraction = max(0, -scale)
    hasFractionOrExponent = !fraction.isEmpty || marked
    double = Double(text) ?? .nan
  }

  var isZero: Bool { digits.isEmpty }

  /// -1, 0 or 1 as `a` is below, equal to or above `b`, exactly.
  static func compare(_ a: CursorNumber, _ b: CursorNumber) -> Int {
    let signA = a.isZero ? 0 : (a.negative ? -1 : 1)
    let signB = b.isZero ? 0 : (b.negative ? -1 : 1)
    if signA != signB { return signA < signB ? -1 : 1 }
    if signA == 0 { return 0 }
    let magnitude: Int
    if a.point != b.point {
      magnitude = a.point < b.point ? -1 : 1
    } else if a.digits == b.digits {
      magnitude = 0
    } else {
      magnitude = a.digits.lexicographicallyPrecedes(b.digits) ? -1 : 1
    }
    return signA * magnitude
  }

  /// The value a step sends for an API that answers only what is above it
  /// (`boundary: exclusive`), for a number written with a fraction or an exponent
  /// (docs/http.md, "Cursor boundaries"): the number less one unit of its last written
  /// digit (`1701600000.25` → `1701600000.24`, `1e3` → `999`, `1.5e-3` → `0.0014`), or of a
  /// higher digit when an API reading both as doubles could not tell them apart
  /// (`100000000000000000000.0` → `99999999999999990000.0`): always strictly below it, as a
  /// double too. Written in plain decimal form with the written fraction digits. Nil for a
  /// number a double cannot hold (beyond about 1.8e308, or non-zero below about 4.9e-324).
  var predecessor: (negative: Bool, text: String)? {
    guard double.isFinite, double != 0 || isZero else { return nil }
    // |value| × 10^writtenFraction, an integer.
    let zeros = point + writtenFraction - digits.count
    guard zeros >= 0 || isZero else { return nil }
    let scaled: [UInt8] = isZero ? [48] : digits + Array(repeating: 48, count: zeros)
    for unit in 0..<(scaled.count + 2) {
      let step: [UInt8] = [49] + Array(repeating: 48, count: unit)
      // value - 10^(unit - writtenFraction)
      let resultNegative: Bool
      let magnitude: [UInt8]
      if negative && !isZero {
        (resultNegative, magnitude) = (true, CursorNumber.add(scaled, step))
      } else if CursorNumber.lessThan(scaled, step) {
        (resultNegative, magnitude) = (true, CursorNumber.subtract(step, scaled))
      } else {
        (resultNegative, magnitude) = (false, CursorNumber.subtract(scaled, step))
      }
      let text = CursorNumber.plain(negative: resultNegative, magnitude, fractionDigits: writtenFraction)
      if let candidate = Double(text), candidate < double { return (resultNegative, text) }
    }
    return nil
  }

  /// `magnitude` (an integer's digits) divided by 10^`fractionDigits`, written with that many
  /// fraction digits and a sign.
  static func plain(negative: Bool, _ magnitude: [UInt8], fractionDigits: Int) -> String {
    var digits = Array(magnitude.drop { $0 == 48 })
    if digits.count <= fractionDigits { digits = Array(repeating: 48, count: fractionDigits + 1 - digits.count) + digits }
    let wholeCount = digits.count - fractionDigits
    var text = negative ? "-" : ""
    text += String(decoding: digits[..<wholeCount], as: UTF8.self)
    if fractionDigits > 0 { text += "." + String(decoding: digits[wholeCount...], as: UTF8.self) }
    return text
  }

  /// Whether the integer `a` is below `b` (digits without leading zeros, or "0").
  static func lessThan(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    let a = normalized(a)
    let b = normalized(b)
    return a.count != b.count ? a.count < b.count : a.lexicographicallyPrecedes(b)
  }

  static func normalized(_ a: [UInt8]) -> [UInt8] {
    let trimmed = Array(a.drop { $0 == 48 })
    return trimmed.isEmpty ? [48] : trimmed
  }

  /// `a` + `b`, integers by their digits.
  static func add(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
    var result: [UInt8] = []
    var carry = 0
    var i = a.count - 1
    var j = b.count - 1
    while i >= 0 || j >= 0 || carry > 0 {
      let sum = (i >= 0 ? Int(a[i] - 48) : 0) + (j >= 0 ? Int(b[j] - 48) : 0) + carry
      result.append(UInt8(48 + sum % 10))
      carry = sum / 10
      i -= 1
      j -= 1
    }
    return normalized(result.reversed())
  }

  /// `a` - `b` for `a` >= `b`, integers by their digits.
  static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
    var result: [UInt8] = []
    var borrow = 0
    var i = a.count - 1
    var j = b.count - 1
    while i >= 0 {
      var difference = Int(a[i] - 48) - (j >= 0 ? Int(b[j] - 48) : 0) - borrow
      borrow = difference < 0 ? 1 : 0
      if difference < 0 { difference += 10 }
      result.append(UInt8(48 + difference))
      i -= 1
      j -= 1
    }
    return normalized(result.reversed())
  }
}
