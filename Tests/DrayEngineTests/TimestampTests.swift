import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@testable import DrayEngine

/// dray's RFC 3339 times (`Bookkeeping.rfc3339`) are the text `ISO8601DateFormatter` wrote
/// before (UTC, `Z`), with the milliseconds truncated where it rounded them to the nearest
/// (so `…59.9996` stays in its second, and a run id agrees with `started_at`).
@Suite struct TimestampTests {
  @Test func knownInstantsAreWrittenInUTC() {
    let cases: [(Double, String, String)] = [
      (0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
      (1_796_040_000.25, "2026-11-30T12:00:00Z", "2026-11-30T12:00:00.250Z"),
      (1_709_164_800.007, "2024-02-29T00:00:00Z", "2024-02-29T00:00:00.007Z"),
      (951_868_799.9999, "2000-02-29T23:59:59Z", "2000-02-29T23:59:59.999Z"),
      (-0.5, "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.500Z"),
      (-2_208_988_800, "1900-01-01T00:00:00Z", "1900-01-01T00:00:00.000Z"),
      (253_402_300_799, "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"),
    ]
    for (seconds, whole, fraction) in cases {
      let date = Date(timeIntervalSince1970: seconds)
      #expect(Bookkeeping.rfc3339(date, milliseconds: false) == whole)
      #expect(Bookkeeping.rfc3339(date, milliseconds: true) == fraction)
      #expect(Bookkeeping.timestamp(date) == whole)
    }
  }

  /// Against Foundation's formatter, on instants from 1900 to 2200 a quarter of a
  /// millisecond past a millisecond (where its rounding and this truncation agree).
  @Test func randomInstantsAreWrittenAsISO8601DateFormatterWritesThem() {
    let whole = ISO8601DateFormatter()
    whole.formatOptions = [.withInternetDateTime]
    let fraction = ISO8601DateFormatter()
    fraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var generator = SeededRandom(seed: SeededRandom.seed(fromEnvironment: "DRAY_TIMESTAMP_SEED"))
    for _ in 0..<2000 {
      let millisecond = Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &generator)
      let date = Date(timeIntervalSince1970: (Double(millisecond) + 0.25) / 1000)
      #expect(Bookkeeping.rfc3339(date, milliseconds: false) == whole.string(from: date))
      #expect(
        Bookkeeping.rfc3339(date, milliseconds: true) == fraction.string(from: date),
        "\(millisecond) ms (DRAY_TIMESTAMP_SEED=\(generator.seed) runs it again)")
    }
  }

  @Test func aRunIDIsItsStartTimeWithoutSeparators() {
    let start = Date(timeIntervalSince1970: 1_796_040_000.123)
    #expect(Runner.newRunID(start).hasPrefix("20261130T120000.123Z-"))
    #expect(RunReport.rfc3339(start) == "2026-11-30T12:00:00.123Z")
  }
}
