/// The windows of `partitions.window` (docs/partitions.md, "Windows").
///
/// `start` and `end` are both dates (`2024-01-01`) or both RFC 3339 instants
/// (`2024-01-01T00:00:00Z`, `2024-01-01T06:00:00.5+02:00`). Window `k` starts at `start`
/// moved by `k × every` and ends where window `k + 1` starts; the last ends at `end`
/// (cut short when `every` does not divide the range). Bounds are written in the form
/// `start` is written in: a date stays a date, an instant keeps its time of day, fraction
/// and offset (`+02:00` windows are whole days of that offset, not of UTC).
///
/// Months are calendar months: window `k` starts on `start`'s day of the month `k × N`
/// months later, or on that month's last day when it is shorter (a start on January 31
/// gives February 29 in 2024, February 28 in 2023, then March 31, April 30: each bound is
/// counted from `start`, so a clipped month does not shorten the ones after it). Days and
/// weeks count whole days of 24 hours (an instant's offset is fixed, so no day is 23 or 25
/// hours long).
extension Partitions.Window {
  /// Why a window cannot be cut: which key is wrong (`start`, `end` or `every`) and how.
  public struct Problem: Error, Equatable, CustomStringConvertible {
    /// `start`, `end` or `every`: the key the problem is reported at.
    public var key: String
    /// What is wrong and what to write instead.
    public var description: String
  }

  /// The most windows a `window` may cut: more is a mistake (`every: 1d` over centuries)
  /// and each is a row of the step's checkpoints.
  public static let maxWindows = 100_000

  /// The windows, in order: `[start, end)` of each, as `window_start` and `window_end` write
  /// them.
  /// - Throws: `Problem` when `start` or `end` is neither a date nor an RFC 3339 instant
  ///   (or not a day of the calendar), they differ in form, `end` is not after `start`,
  ///   `every` is zero or longer than the range, or the windows would be more than
  ///   `maxWindows`.
  public func bounds() throws(Problem) -> [(start: String, end: String)] {
    let first = try Bound(parsing: start, key: "start")
    let last = try Bound(parsing: end, key: "end")
    if first.isInstant != last.isInstant {
      let (instant, date) = first.isInstant ? ("start", "end") : ("end", "start")
      throw Problem(
        key: "end",
        description:
          "'\(instant)' is an RFC 3339 instant and '\(date)' a date; give both as dates (2024-01-01) or both as instants (2024-01-01T00:00:00Z)"
      )
    }
    guard first.order < last.order else {
      throw Problem(key: "end", description: "'end' (\(end)) must be after 'start' (\(start)): windows run from start up to end")
    }
    if every.isZero {
      throw Problem(key: "every", description: "'every' is zero, which cuts no window; give a length such as 1d, 7d, 2w or 1mo")
    }
    var out: [(start: String, end: String)] = []
    var lower = start
    var k = 1
    while true {
      let next = first.moved(by: every, times: k)
      if next.order >= last.order {
        if k == 1 && next.order > last.order {
          throw Problem(
            key: "every",
            description:
              "'every' (\(every.formatted)) is longer than the range from \(start) to \(end); shorten it, or move 'end' to \(next.text) or later"
          )
        }
        out.append((lower, end))
        return out
      }
      out.append((lower, next.text))
      guard out.count < Self.maxWindows else {
        throw Problem(
          key: "every",
          description:
            "'every' (\(every.formatted)) cuts more than \(Self.maxWindows) windows from \(start) to \(end); give a longer 'every' or a shorter range"
        )
      }
      lower = next.text
      k += 1
    }
  }

  /// The windows as partitions: `window_start` and `window_end` of each, in order.
  /// - Throws: `Problem`, as `bounds()`.
  public func partitions() throws(Problem) -> [Partition] {
    try bounds().map { Partition([(Self.names[0], $0.start), (Self.names[1], $0.end)]) }
  }

  /// One bound: a day of the calendar and, for an instant, the text after the date (time of
  /// day, fraction and offset), kept as written.
  struct Bound {
    var year: Int64
    var month: Int64
    var day: Int64
    /// `T00:00:00Z` or `t06:30:00.5+02:00`; empty for a date.
    var suffix: String

    var isInstant: Bool { !suffix.isEmpty }
    var text: String {
      let y = String(year)
      func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
      return String(repeating: "0", count: max(0, 4 - y.count)) + y + "-" + two(month) + "-" + two(day) + suffix
    }
    /// Comparable position in time: (seconds since the epoch, nanoseconds); a date counts
    /// as its midnight in UTC (dates are compared only with dates).
    var order: Order {
      if isInstant, let (seconds, nanoseconds) = IncrementalCursor.parseInstant(text) { return Order(seconds, nanoseconds) }
      return Order(IncrementalCursor.daysFromCivil(year, month, day) * 86400, 0)
    }

    init(year: Int64, month: Int64, day: Int64, suffix: String) {
      self.year = year
      self.month = month
      self.day = day
      self.suffix = suffix
    }

    init(parsing text: String, key: String) throws(Problem) {
      let b = Array(text.utf8)
      func number(_ range: Range<Int>) -> Int64? {
        guard range.upperBound <= b.count, b[range].allSatisfy({ (48...57).contains($0) }) else { return nil }
        return b[range].reduce(0) { $0 * 10 + Int64($1 - 48) }
      }
      let wrongForm = Problem(
        key: key,
        description:
          "'\(key)' must be a date such as 2024-01-01 or an RFC 3339 instant such as 2024-01-01T00:00:00Z, found '\(text)'")
      guard b.count >= 10, let year = number(0..<4), b[4] == UInt8(ascii: "-"), let month = number(5..<7), b[7] == UInt8(ascii: "-"),
        let day = number(8..<10)
      else { throw wrongForm }
      let suffix = String(decoding: b[10...], as: UTF8.self)
      if !suffix.isEmpty && IncrementalCursor.parseInstant(text) == nil { throw wrongForm }
      guard year >= 1, (1...12).contains(month), (1...Self.daysIn(year, month)).contains(day) else {
        throw Problem(key: key, description: "'\(key)' names no day of the calendar: '\(text)'")
      }
      self.init(year: year, month: month, day: day, suffix: suffix)
    }

    /// This bound moved `times` × `every` forward; months clipped to the month's last day.
    func moved(by every: Partitions.Every, times: Int) -> Bound {
      switch every {
      case .days(let n):
        let days = IncrementalCursor.daysFromCivil(year, month, day) + Int64(n) * Int64(times)
        let (y, m, d) = IncrementalCursor.civilFromDays(days)
        return Bound(year: y, month: m, day: d, suffix: suffix)
      case .months(let n):
        let index = (year * 12 + month - 1) + Int64(n) * Int64(times)
        let (y, m) = (index / 12, index % 12 + 1)
        return Bound(year: y, month: m, day: min(day, Self.daysIn(y, m)), suffix: suffix)
      }
    }

    static func daysIn(_ year: Int64, _ month: Int64) -> Int64 {
      switch month {
      case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
      case 4, 6, 9, 11: 30
      default: 31
      }
    }
  }

  struct Order: Comparable {
    var seconds: Int64
    var nanoseconds: Int64
    init(_ seconds: Int64, _ nanoseconds: Int64) {
      self.seconds = seconds
      self.nanoseconds = nanoseconds
    }
    static func < (a: Order, b: Order) -> Bool { (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds) }
  }
}

extension Partitions {
  /// The partitions when the manifest alone says them: a `list`'s, a `window`'s (nil when
  /// the window is wrong; the manifest loader refuses such a window); nil for `rows`, known
  /// only when its query runs.
  public var knownPartitions: [Partition]? {
    switch source {
    case .list(let partitions): partitions
    case .window(let window): try? window.partitions()
    case .rows: nil
    }
  }
}
