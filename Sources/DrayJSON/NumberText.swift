public import Foundation

/// Reading JSON number text (as the answer's lexer hands it over, not NUL-terminated) without going
/// through a Double where that would lose digits: the loads' one reading of numbers, SQLite's
/// row binder and PostgreSQL's binary COPY alike. Inlinable, as it runs once per value.
public enum NumberText {
  /// True when the text has no fraction and no exponent (an integer token).
  @inlinable @inline(__always)
  public static func isInteger(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    var i = 0
    while i < n {
      let c = p[i]
      if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { return false }
      i += 1
    }
    return true
  }

  /// The integer token as Int64, or nil when it does not fit 64 bits.
  @inlinable @inline(__always)
  public static func int64(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int64? {
    var i = 0
    let negative = n > 0 && p[0] == UInt8(ascii: "-")
    if negative { i = 1 }
    guard i < n else { return nil }
    // 18 digits always fit; only longer tokens need overflow checks.
    if n - i <= 18 {
      var value: Int64 = 0
      while i < n {
        value = value &* 10 &+ Int64(p[i] &- 48)
        i += 1
      }
      return negative ? -value : value
    }
    var value: Int64 = 0
    while i < n {
      let digit = Int64(p[i] &- 48)
      let (m, o1) = value.multipliedReportingOverflow(by: 10)
      let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
      if o1 || o2 { return nil }
      value = s
      i += 1
    }
    return value
  }

  /// Exact powers of ten a Double holds (10^0 ... 10^22).
  @usableFromInline static let powersOfTen: [Double] = (0...22).map { pow(10, Double($0)) }

  /// The number as the nearest Double (correctly rounded, like `strtod`).
  ///
  /// Fast path (Clinger, 1990): when the significant digits form an integer below 2^53 and
  /// the decimal exponent is within ±22, one multiplication or division of two exact
  /// doubles is correctly rounded. Every other number goes to the C library's `strtod`.
  @inlinable @inline(__always)
  public static func double(_ p: UnsafePointer<UInt8>, _ n: Int) -> Double {
    var i = 0
    let negative = n > 0 && p[0] == UInt8(ascii: "-")
    if negative { i = 1 }
    var mantissa: UInt64 = 0
    var digits = 0
    var exponent = 0
    var fast = true
    while i < n, p[i] &- 48 < 10 {
      if mantissa != 0 || p[i] != 48 { digits += 1 }
      mantissa = mantissa &* 10 &+ UInt64(p[i] &- 48)
      i += 1
    }
    if i < n, p[i] == UInt8(ascii: ".") {
      i += 1
      while i < n, p[i] &- 48 < 10 {
        if mantissa != 0 || p[i] != 48 { digits += 1 }
        mantissa = mantissa &* 10 &+ UInt64(p[i] &- 48)
        exponent -= 1
        i += 1
      }
    }
    if i < n, p[i] | 0x20 == UInt8(ascii: "e") {
      i += 1
      var exponentNegative = false
      if i < n, p[i] == UInt8(ascii: "-") || p[i] == UInt8(ascii: "+") {
        exponentNegative = p[i] == UInt8(ascii: "-")
        i += 1
      }
      var e = 0
      while i < n, p[i] &- 48 < 10 {
        if e < 100_000 { e = e * 10 + Int(p[i] &- 48) }
        i += 1
      }
      exponent += exponentNegative ? -e : e
    }
    if digits > 19 || mantissa > (1 << 53) || exponent < -22 || exponent > 22 { fast = false }
    if fast {
      var value = Double(mantissa)
      if exponent < 0 { value /= powersOfTen[-exponent] } else if exponent > 0 { value *= powersOfTen[exponent] }
      return negative ? -value : value
    }
    return strtodCopy(p, n)
  }

  /// `strtod` on a NUL-terminated copy of the text.
  public static func strtodCopy(_ p: UnsafePointer<UInt8>, _ n: Int) -> Double {
    String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self).withCString { strtod($0, nil) }
  }

  /// True when `value` is exactly the integer the digits of `p` spell (an integer token
  /// beyond 64 bits, such as 2^70 = 1180591620717411303424, can still be an exact double).
  public static func isExact(_ value: Double, integerText p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    guard value.isFinite else { return false }
    let exact = String(format: "%.0f", value)
    return exact.utf8.elementsEqual(UnsafeBufferPointer(start: p, count: n))
  }
}
