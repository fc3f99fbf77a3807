/// The rules of an `incremental` step's cursor (docs/http.md, "Incremental loads").
public enum IncrementalCursor {
  /// What the API answers for the value sent (docs/http.md, "Cursor boundaries").
  public enum Boundary: String, Sendable, Hashable, CaseIterable {
    /// The records at the value sent and after it (`>=`): dray sends the kept value.
    case inclusive
    /// Only the records after the value sent (`>`): dray sends the kept value's
    /// predecessor, so that records arriving later at the kept value are not lost.
    case exclusive
  }

  /// One cursor value, as the API gives it, and how it orders.
  ///
  /// Values compare as the API gives them: numbers exactly by their decimal digits, at any
  /// length and in any form (`1e3` equals `1000`), RFC 3339 date-times (RFC 3339 §5.6) as
  /// instants, any other text as text, byte for byte in UTF-8 (as SQLite's BINARY collation
  /// does). Values of two of these kinds do not compare. A value keeps the text the API
  /// wrote (`json`).
  public struct Value: Sendable, Hashable, CustomStringConvertible {
    /// The value as the API gave it: a string or a number.
    public let json: JSONValue
    let order: Order

    enum Order: Sendable, Hashable {
      /// A number by its digits, so that 10^30 and 10^30 + 1 differ; never through a double.
      case number(CursorNumber)
      /// Seconds since 1970-01-01T00:00:00Z and nanoseconds.
      case instant(seconds: Int64, nanoseconds: Int64)
      case text(String)
    }

    /// A string or a number; nil for anything else (null, a boolean, a list, an object).
    public init?(json: JSONValue) {
      switch json {
      case .integer(let i):
        guard let number = CursorNumber(String(i)) else { return nil }
        self.init(json: json, order: .number(number))
      case .number(let text):
        guard let number = CursorNumber(text) else { return nil }
        self.init(json: json, order: .number(number))
      case .string(let text):
        self.init(text: text)
      default:
        return nil
      }
    }

    /// A string value: an RFC 3339 instant when it reads as one, otherwise text.
    public init(text: String) {
      if let (seconds, nanoseconds) = IncrementalCursor.parseInstant(text) {
        self.init(json: .string(text), order: .instant(seconds: seconds, nanoseconds: nanoseconds))
      } else {
        self.init(json: .string(text), order: .text(text))
      }
    }

    private init(json: JSONValue, order: Order) {
      self.json = json
      self.order = order
    }

    public var isInstant: Bool {
      if case .instant = order { true } else { false }
    }

    public var isText: Bool {
      if case .text = order { true } else { false }
    }

    /// A number: an integer of any length, or one with a fraction.
    public var isNumber: Bool {
      switch order {
      case .number: true
      case .instant, .text: false
      }
    }

    /// A number written with a fraction or an exponent (`1701600000.25`, `1e3`).
    public var isWrittenDecimal: Bool {
      if case .number(let n) = order { n.hasFractionOrExponent } else { false }
    }

    /// What the kind of value is called in messages.
    public var kind: String {
      switch order {
      case .number: "a number"
      case .instant: "an RFC 3339 instant"
      case .text: "text"
      }
    }

    /// The text sent as the query parameter: the string, or the number's digits.
    public var text: String {
      switch json {
      case .string(let s): s
      case .integer(let i): String(i)
      case .number(let n): n
      default: json.json
      }
    }

    public var description: String { json.json }

    /// -1, 0 or 1 as `self` is below, equal to or above `other`; nil when the two are of
    /// different kinds.
    public func compare(_ other: Value) -> Int? {
      switch (order, other.order) {
      case (.number(let a), .number(let b)):
        return CursorNumber.compare(a, b)
      case (.instant(let s1, let n1), .instant(let s2, let n2)):
        return s1 != s2 ? (s1 < s2 ? -1 : 1) : (n1 == n2 ? 0 : (n1 < n2 ? -1 : 1))
      case (.text(let a), .text(let b)):
        if a == b { return 0 }
        return Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) ? -1 : 1
      default:
        return nil
      }
    }

    /// Whether the value has a predecessor (`predecessor`).
    public var hasPredecessor: Bool { predecessor != nil }

    /// The value an `exclusive` step sends for this kept value (docs/http.md, "Cursor
    /// boundaries"): strictly below it, and above every value the API can hold below it
    /// that it did not give already.
    ///
    /// - An integer as JSON writes one: less 1, of any length, computed by its digits
    ///   (`18446744073709551615` below `18446744073709551616`, `-9223372036854775809` below
    ///   the 64-bit range).
    /// - A number with a fraction or an exponent: less one unit of its last written digit,
    ///   computed by its digits (`1701600000.25` → `1701600000.24`, `1e3` → `999`), or of the
    ///   first higher digit that makes it read as a lower double too
    ///   (`100000000000000000000.0` → `99999999999999990000.0`), written in plain decimal
    ///   form (`CursorNumber.predecessor`). The API may hold values between the two (finer
    ///   fractions): they come back, and `append` recognises those it loaded already.
    /// - An instant: less 1 ns, written in UTC with nine fraction digits
    ///   (`2024-01-01T00:00:59.999999999Z`).
    ///
    /// Nil for text, a number a double cannot hold (beyond about 1.8e308, or non-zero below
    /// about 4.9e-324), and an instant at or before 0000-01-01T00:00:00Z, the first RFC 3339
    /// can write (no year before 0000 has a form).
    public var predecessor: Value? {
      switch order {
      case .number(let number):
        if case .integer(let i) = json {
          return i > Int64.min ? Value(json: .integer(i - 1)) : IncrementalCursor.integer(negative: true, digits: "9223372036854775809")
        }
        if case .number(let text) = json, IncrementalCursor.isLongInteger(text) {
          let negative = text.hasPrefix("-")
          let digits = negative ? String(text.dropFirst()) : text
          return IncrementalCursor.integer(
            negative: negative, digits: negative ? IncrementalCursor.incremented(digits) : IncrementalCursor.decremented(digits))
        }
        guard let below = number.predecessor else { return nil }
        if number.writtenFraction == 0 {
          return IncrementalCursor.integer(negative: below.negative, digits: below.negative ? String(below.text.dropFirst()) : below.text)
        }
        return Value(json: .number(below.text))
      case .instant(let seconds, let nanoseconds):
        let (s, n) = nanoseconds > 0 ? (seconds, nanoseconds - 1) : (seconds - 1, 999_999_999)
        guard s >= IncrementalCursor.firstInstant else { return nil }
        return Value(text: IncrementalCursor.formatInstant(seconds: s, nanoseconds: n, fractionDigits: 9))
      case .text:
        return nil
      }
    }

    /// The instant `lag` earlier, written in UTC (`2024-01-01T00:55:00Z`); the value itself
    /// when it is not an instant or `lag` is nil.
    public func moved(back lag: Duration?) -> Value {
      guard let lag, case .instant(let seconds, let nanoseconds) = order else { return self }
      let (lagSeconds, lagAttoseconds) = lag.components
      var s = seconds - lagSeconds
      var n = nanoseconds - lagAttoseconds / 1_000_000_000
      if n < 0 {
        n += 1_000_000_000
        s -= 1
      }
      // RFC 3339 writes no year before 0000: a lag past it asks from its first instant.
      if s < IncrementalCursor.firstInstant { (s, n) = (IncrementalCursor.firstInstant, 0) }
      return Value(text: IncrementalCursor.formatInstant(seconds: s, nanoseconds: n))
    }
  }

  /// 0000-01-01T00:00:00Z in seconds since the epoch: the first instant RFC 3339 writes.
  static let firstInstant = daysFromCivil(0, 1, 1) * 86400

  /// The integer `digits` (no leading zero) with its sign, as a cursor value: a JSON
  /// integer when it fits 64 bits, else a JSON number of its digits.
  static func integer(negative: Bool, digits: String) -> Value? {
    let text = (negative && digits != "0" ? "-" : "") + digits
    if let small = Int64(text) { return Value(json: .integer(small)) }
    return Value(json: .number(text))
  }

  /// The decimal `digits` (no leading zero, at least 1) less one, by its digits.
  static func decremented(_ digits: String) -> String {
    var bytes = Array(digits.utf8)
    var i = bytes.count - 1
    while i >= 0 {
      if bytes[i] > 48 {
        bytes[i] -= 1
        break
      }
      bytes[i] = 57
      i -= 1
    }
    let trimmed = bytes.drop { $0 == 48 }
    return trimmed.isEmpty ? "0" : String(decoding: trimmed, as: UTF8.self)
  }

  /// The decimal `digits` plus one, by its digits.
  static func incremented(_ digits: String) -> String {
    var bytes = Array(digits.utf8)
    var i = bytes.count - 1
    while i >= 0 {
      if bytes[i] < 57 {
        bytes[i] += 1
        return String(decoding: bytes, as: UTF8.self)
      }
      bytes[i] = 48
      i -= 1
    }
    return "1" + String(decoding: bytes, as: UTF8.self)
  }

  /// Whether `text` (a JSON number) is an integer beyond 64 bits: `-?[1-9][0-9]*`, written
  /// as JSON writes one (an integer loaded from a record keeps these digits as TEXT).
  public static func isLongInteger(_ text: String) -> Bool {
    let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
    return !digits.isEmpty && digits.first != "0" && digits.utf8.allSatisfy { (48...57).contains($0) } && Int64(text) == nil
  }

  /// Seconds since the epoch and nanoseconds of an RFC 3339 date-time
  /// (`2024-01-01T00:00:00Z`, `2024-01-01t00:00:00.5+02:00`); nil for any other text.
  static func parseInstant(_ text: String) -> (Int64, Int64)? {
    let b = Array(text.utf8)
    func digits(_ at: Int, _ count: Int) -> Int64? {
      guard at + count <= b.count else { return nil }
      var v: Int64 = 0
      for i in at..<(at + count) {
        guard (48...57).contains(b[i]) else { return nil }
        v = v * 10 + Int64(b[i] - 48)
      }
      return v
    }
    guard b.count >= 20, let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45, let day = digits(8, 2),
      b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = digits(11, 2), b[13] == 58, let minute = digits(14, 2), b[16] == 58,
      let second = digits(17, 2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
    else { return nil }
    var i = 19
    var nanoseconds: Int64 = 0
    if i < b.count, b[i] == 46 {
      i += 1
      var scale: Int64 = 100_000_000
      let start = i
      while i < b.count, (48...57).contains(b[i]) {
        nanoseconds += Int64(b[i] - 48) * scale
        scale /= 10
        i += 1
      }
      guard i > start else { return nil }
    }
    guard i < b.count else { return nil }
    var offset: Int64 = 0
    if b[i] == 90 || b[i] == 122 {
      i += 1
    } else if b[i] == 43 || b[i] == 45, let h = digits(i + 1, 2), b.count > i + 3, b[i + 3] == 58, let m = digits(i + 4, 2) {
      offset = (h * 60 + m) * 60 * (b[i] == 43 ? 1 : -1)
      i += 6
    } else {
      return nil
    }
    guard i == b.count else { return nil }
    let days = daysFromCivil(year, month, day)
    return (days * 86400 + hour * 3600 + minute * 60 + second - offset, nanoseconds)
  }

  /// `seconds` since the epoch as an RFC 3339 date-time in UTC, with the fraction only when
  /// there is one, or at least `fractionDigits` digits of it.
  static func formatInstant(seconds: Int64, nanoseconds: Int64, fractionDigits: Int = 0) -> String {
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let rest = seconds - days * 86400
    let (y, m, d) = civilFromDays(days)
    func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
    var text = "\(String(repeating: "0", count: max(0, 4 - String(y).count)))\(y)-\(two(m))-\(two(d))T"
    text += "\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))"
    if nanoseconds > 0 {
      var fraction = String(nanoseconds)
      fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
      while fraction.hasSuffix("0") && fraction.count > fractionDigits { fraction.removeLast() }
      text += "." + fraction
    } else if fractionDigits > 0 {
      text += "." + String(repeating: "0", count: fractionDigits)
    }
    return text + "Z"
  }

  // Howard Hinnant's days_from_civil and civil_from_days (proleptic Gregorian calendar).
  static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146097 + doe - 719468
  }

  static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
    let z = days + 719468
    let era = (z >= 0 ? z : z - 146096) / 146097
    let doe = z - era * 146097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
  }
}
