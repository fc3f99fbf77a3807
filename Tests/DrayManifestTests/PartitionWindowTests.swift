import DrayModel
import Testing

/// `partitions.window`'s windows (`Partitions.Window.bounds()`), `every`'s units and
/// durations in days and weeks.
@Suite struct PartitionWindowTests {
  func bounds(_ start: String, _ end: String, _ every: String) throws -> [String] {
    let every = try #require(Partitions.Every(parsing: every))
    return try Partitions.Window(start: start, end: end, every: every).bounds().map { "\($0.start)/\($0.end)" }
  }

  func problem(_ start: String, _ end: String, _ every: String) throws -> Partitions.Window.Problem? {
    let every = try #require(Partitions.Every(parsing: every))
    do {
      _ = try Partitions.Window(start: start, end: end, every: every).bounds()
      return nil
    } catch {
      return error
    }
  }

  @Test func weeksOfDatesAreHalfOpenAndTheLastIsCutAtEnd() throws {
    #expect(
      try bounds("2024-01-01", "2024-01-20", "1w") == [
        "2024-01-01/2024-01-08", "2024-01-08/2024-01-15", "2024-01-15/2024-01-20",
      ])
    // A range that every divides: no short window at the end.
    #expect(try bounds("2024-01-01", "2024-01-15", "7d") == ["2024-01-01/2024-01-08", "2024-01-08/2024-01-15"])
    // Across a year's end and February 29 of a leap year.
    #expect(
      try bounds("2023-12-30", "2024-03-02", "30d") == [
        "2023-12-30/2024-01-29", "2024-01-29/2024-02-28", "2024-02-28/2024-03-02",
      ])
    #expect(
      try bounds("2024-02-28", "2024-03-02", "1d") == [
        "2024-02-28/2024-02-29", "2024-02-29/2024-03-01", "2024-03-01/2024-03-02",
      ])
    #expect(try bounds("2023-02-28", "2023-03-02", "1d") == ["2023-02-28/2023-03-01", "2023-03-01/2023-03-02"])
  }

  @Test func monthsKeepTheDayOfStartAndClipToMonthEnds() throws {
    #expect(
      try bounds("2024-01-01", "2024-04-01", "1mo") == [
        "2024-01-01/2024-02-01", "2024-02-01/2024-03-01", "2024-03-01/2024-04-01",
      ])
    // January 31 + 1mo: February 29 in a leap year, then March 31 again (each bound counts
    // from start, so the clipped month does not shorten the rest).
    #expect(
      try bounds("2024-01-31", "2024-05-15", "1mo") == [
        "2024-01-31/2024-02-29", "2024-02-29/2024-03-31", "2024-03-31/2024-04-30", "2024-04-30/2024-05-15",
      ])
    #expect(try bounds("2023-01-31", "2023-03-31", "1mo") == ["2023-01-31/2023-02-28", "2023-02-28/2023-03-31"])
    // 1900 is no leap year, 2000 is.
    #expect(try bounds("1900-01-29", "1900-03-01", "1mo") == ["1900-01-29/1900-02-28", "1900-02-28/1900-03-01"])
    #expect(try bounds("2000-01-29", "2000-03-01", "1mo") == ["2000-01-29/2000-02-29", "2000-02-29/2000-03-01"])
    // Quarters across a year's end.
    #expect(
      try bounds("2023-11-30", "2024-06-01", "3mo") == [
        "2023-11-30/2024-02-29", "2024-02-29/2024-05-30", "2024-05-30/2024-06-01",
      ])
  }

  @Test func instantsKeepTheirTimeOfDayFractionAndOffset() throws {
    #expect(
      try bounds("2024-01-01T00:00:00Z", "2024-01-03T00:00:00Z", "1d") == [
        "2024-01-01T00:00:00Z/2024-01-02T00:00:00Z", "2024-01-02T00:00:00Z/2024-01-03T00:00:00Z",
      ])
    // Days of +02:00, not of UTC; end is written as given, in another offset.
    #expect(
      try bounds("2024-03-30T06:30:00.5+02:00", "2024-04-01T12:00:00Z", "1d") == [
        "2024-03-30T06:30:00.5+02:00/2024-03-31T06:30:00.5+02:00",
        "2024-03-31T06:30:00.5+02:00/2024-04-01T06:30:00.5+02:00",
        "2024-04-01T06:30:00.5+02:00/2024-04-01T12:00:00Z",
      ])
    // 2024-02-29T23:00-05:00 is 2024-03-01T04:00Z, before end; a month later is after it.
    #expect(
      try bounds("2024-01-31T23:00:00-05:00", "2024-03-15T00:00:00Z", "1mo") == [
        "2024-01-31T23:00:00-05:00/2024-02-29T23:00:00-05:00", "2024-02-29T23:00:00-05:00/2024-03-15T00:00:00Z",
      ])
    // An end that is the next bound, written in another offset: one window, ending at end.
    #expect(try bounds("2024-01-01T00:00:00+01:00", "2024-01-01T23:00:00Z", "1d") == ["2024-01-01T00:00:00+01:00/2024-01-01T23:00:00Z"])
    #expect(
      try bounds("2024-01-01T00:00:00+01:00", "2024-01-02T23:00:00Z", "1d") == [
        "2024-01-01T00:00:00+01:00/2024-01-02T00:00:00+01:00", "2024-01-02T00:00:00+01:00/2024-01-02T23:00:00Z",
      ])
  }

  @Test func partitionsNameTheirBoundsWindowStartAndWindowEnd() throws {
    let window = Partitions.Window(start: "2024-01-01", end: "2024-01-03", every: .days(1))
    let partitions = try window.partitions()
    #expect(
      partitions.map(\.label) == ["window_start=2024-01-01, window_end=2024-01-02", "window_start=2024-01-02, window_end=2024-01-03"])
    let source = Partitions(source: .window(window), location: SourceLocation(file: "j.yaml", line: 1, column: 1))
    #expect(source.knownPartitions?.count == 2)
    #expect(source.concurrency == Partitions.defaultConcurrency)
    #expect(source.lease == .seconds(30))
  }

  @Test func wrongWindowsSayWhichKeyAndWhatToDo() throws {
    #expect(try problem("2024-01-01", "2024-01-01", "1d")?.key == "end")
    #expect(
      try problem("2024-02-01", "2024-01-01", "1d")?.description
        == "'end' (2024-01-01) must be after 'start' (2024-02-01): windows run from start up to end")
    #expect(
      try problem("2024-01-01", "2024-02-01T00:00:00Z", "1d")?.description
        == "'end' is an RFC 3339 instant and 'start' a date; give both as dates (2024-01-01) or both as instants (2024-01-01T00:00:00Z)"
    )
    #expect(try problem("2024-01-01", "2024-02-01", "0d")?.key == "every")
    #expect(try problem("2024-01-01", "2024-02-01", "0mo")?.key == "every")
    #expect(
      try problem("2024-01-01", "2024-01-05", "1w")?.description
        == "'every' (1w) is longer than the range from 2024-01-01 to 2024-01-05; shorten it, or move 'end' to 2024-01-08 or later")
    // A range of exactly one window is fine.
    #expect(try problem("2024-01-01", "2024-01-08", "1w") == nil)
    #expect(try problem("2024-02-30", "2024-03-08", "1d")?.description == "'start' names no day of the calendar: '2024-02-30'")
    #expect(try problem("2023-02-29", "2023-03-08", "1d")?.key == "start")
    #expect(
      try problem("2024-01-01", "next week", "1d")?.description
        == "'end' must be a date such as 2024-01-01 or an RFC 3339 instant such as 2024-01-01T00:00:00Z, found 'next week'")
    #expect(try problem("2024-01-01T25:00:00Z", "2024-02-01T00:00:00Z", "1d")?.key == "start")
    #expect(try problem("0001-01-01", "9999-12-31", "1d")?.key == "every")
  }

  @Test func everyTakesWholeDaysWeeksAndMonths() {
    #expect(Partitions.Every(parsing: "7d") == .days(7))
    #expect(Partitions.Every(parsing: "2w") == .days(14))
    #expect(Partitions.Every(parsing: "1mo") == .months(1))
    #expect(Partitions.Every(parsing: "0d") == .days(0))
    for wrong in ["", "d", "1", "1.5d", "-1d", "1 d", "1m", "1h", "1y", "mo", "1mon", "9999999d"] {
      #expect(Partitions.Every(parsing: wrong) == nil, "\(wrong)")
    }
    #expect(Partitions.Every.days(14).formatted == "2w")
    #expect(Partitions.Every.days(10).formatted == "10d")
    #expect(Partitions.Every.months(3).formatted == "3mo")
  }

  @Test func durationsWriteWholeDaysAsDays() {
    #expect(Duration.seconds(86400).formatted == "1d")
    #expect(Duration.seconds(7 * 86400).formatted == "7d")
    #expect(Duration.seconds(30 * 86400).formatted == "30d")
    #expect(Duration.seconds(36 * 3600).formatted == "36h")
    #expect(Duration.seconds(90).formatted == "90s")
    // Fingerprints keep hours.
    #expect(Duration.seconds(2 * 86400).formatted(days: false) == "48h")
  }
}
