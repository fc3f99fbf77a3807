internal import DrayModel
internal import Foundation

/// The live progress lines of a run on a terminal: one line per active step that moves bytes
/// or rows, redrawn in place.
///
/// ```
///   countries     table_stream  1.2 MiB of 4.0 MiB  30%  512 KiB/s  6s left
///   subdivisions  table_stream  loading: 3,120 rows
/// ```
///
/// Drawing leaves the cursor at the end of the last line, without a newline; `erase()` moves
/// it back to the start of the first line, clearing each line (`ESC [ K`, erase in line, and
/// `ESC [ 1 A`, cursor up: ECMA-48 §8.3.41, §8.3.22). Lines are cut to the terminal's width so
/// that none wraps and the count stays right. Redraws are throttled to 10 a second.
struct ProgressBoard {
  /// What one step has done so far.
  struct Entry {
    var step: String
    var kind: String
    var startedAt: ContinuousClock.Instant
    /// Bytes received by the current transfer, and its expected size.
    var bytes: Int64 = 0
    var total: Int64?
    /// Where the rate is measured from: the start of the current transfer.
    var rateFrom: (at: ContinuousClock.Instant, bytes: Int64)?
    /// Rows loaded so far, for loads.
    var rows: Int?

    init(step: String, kind: String, startedAt: ContinuousClock.Instant) {
      self.step = step
      self.kind = kind
      self.startedAt = startedAt
    }

    mutating func download(bytes: Int64, total: Int64?, at now: ContinuousClock.Instant) {
      // A new attempt starts counting again from 0.
      if bytes < self.bytes || rateFrom == nil { rateFrom = (now, bytes) }
      self.bytes = bytes
      self.total = total
    }

    /// Bytes per second since the transfer began, once it has run for half a second.
    func rate(now: ContinuousClock.Instant) -> Double? {
      guard let from = rateFrom else { return nil }
      let seconds = (now - from.at).seconds
      guard seconds >= 0.5 else { return nil }
      return Double(bytes - from.bytes) / seconds
    }

    /// `1.2 MiB of 4.0 MiB  30%  512 KiB/s  6s left`, or `loading: 3,120 rows`.
    func detail(now: ContinuousClock.Instant) -> String {
      if let rows { return "loading: \(HumanUnits.count(rows)) rows" }
      var parts: [String] = []
      if let total, total > 0 {
        parts.append("\(HumanUnits.bytes(bytes)) of \(HumanUnits.bytes(total))")
        parts.append("\(Int(min(100, Double(bytes) * 100 / Double(total))))%")
      } else {
        parts.append(HumanUnits.bytes(bytes))
      }
      if let rate = rate(now: now), rate > 0 {
        parts.append("\(HumanUnits.bytes(Int64(rate)))/s")
        if let total, total > bytes { parts.append("\(HumanUnits.duration(Double(total - bytes) / rate)) left") }
      }
      return parts.joined(separator: "  ")
    }
  }

  var entries: [Entry] = []
  /// Lines on the screen now.
  private(set) var drawn = 0
  private(set) var lastDraw: ContinuousClock.Instant?
  /// Least time between two redraws.
  static let interval = Duration.milliseconds(100)

  /// Whether enough time passed since the last drawing.
  func isDue(_ now: ContinuousClock.Instant) -> Bool {
    guard let lastDraw else { return true }
    return now - lastDraw >= ProgressBoard.interval
  }

  /// The bytes that clear the lines drawn, leaving the cursor where the first one began.
  mutating func erase() -> String {
    guard drawn > 0 else { return "" }
    var out = "\r\u{1B}[K"
    for _ in 1..<drawn { out += "\u{1B}[1A\u{1B}[K" }
    drawn = 0
    return out
  }

  /// A step's line appears once the step has moved data for this long, so that quick steps
  /// do not flicker.
  static let delay = Duration.milliseconds(300)

  /// The bytes that draw every entry's line, each cut to `width - 1` columns.
  mutating func draw(now: ContinuousClock.Instant, width: Int) -> String {
    let shown = entries.filter { now - $0.startedAt >= ProgressBoard.delay }
    guard !shown.isEmpty else { return "" }
    let stepWidth = shown.map(\.step.count).max() ?? 0
    let kindWidth = shown.map(\.kind.count).max() ?? 0
    let lines = shown.map { entry in
      let line =
        "  " + entry.step.padding(toLength: stepWidth, withPad: " ", startingAt: 0) + "  "
        + entry.kind.padding(toLength: kindWidth, withPad: " ", startingAt: 0) + "  " + entry.detail(now: now)
      return String(line.prefix(max(10, width - 1)))
    }
    drawn = lines.count
    lastDraw = now
    return lines.joined(separator: "\n")
  }
}

/// Numbers for people: sizes in binary units (IEC 80000-13), durations in s/m/h, counts with
/// thousands separators.
public enum HumanUnits {
  /// `512 bytes`, `16.7 KiB`, `3.2 MiB`, `1.1 GiB` (1 KiB = 1024 bytes).
  public static func bytes(_ count: Int64) -> String {
    if count < 1024 { return "\(count) bytes" }
    let units = ["KiB", "MiB", "GiB", "TiB"]
    var value = Double(count) / 1024
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return String(format: "%.1f", value) + " " + units[unit]
  }

  /// `0.42s`, `12s`, `3m05s`, `2h01m`.
  public static func duration(_ seconds: Double) -> String {
    if seconds < 10 { return String(format: "%.2fs", seconds) }
    // At most a million hours: the time left of a download whose Content-Length a server
    // gave as 2^63-1 bytes would not fit in Int (nor mean anything).
    let whole = seconds < 3.6e9 ? Int(seconds.rounded()) : 3_600_000_000
    if whole < 60 { return "\(whole)s" }
    if whole < 3600 { return String(format: "%dm%02ds", whole / 60, whole % 60) }
    return String(format: "%dh%02dm", whole / 3600, (whole % 3600) / 60)
  }

  /// `1 row`, `249 rows`: a number and an English noun, plural unless the number is 1.
  public static func counted(_ n: Int, _ noun: String) -> String {
    "\(n) \(noun)\(n == 1 ? "" : "s")"
  }

  /// `1,234,567`.
  public static func count(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
      if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
      out.append(c)
    }
    return (n < 0 ? "-" : "") + out
  }
}
