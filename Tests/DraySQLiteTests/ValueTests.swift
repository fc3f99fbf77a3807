import DrayJSON
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@testable import DraySQLite

/// The value rule (docs/store.md, "Values"): every value is stored exactly, in the storage
/// class its JSON form calls for; a value its column's declared type does not accept is
/// stored the same way and reported by table, row and column.
@Suite struct ValueTests {
  /// One column of each kind of declared type.
  static let scheme = ResourceScheme.table([("i", "BIGINT"), ("d", "DOUBLE"), ("t", "TEXT"), ("n", "NUMERIC")])

  /// Loads `token` into all four columns of one row.
  /// - Returns: `typeof()` and value of each column, and the mismatch reports.
  func load(_ token: String) throws -> (stored: [[SQLValue]], reports: [String]) {
    let fixture = try StoreFixture()
    let result = try fixture.load(ValueTests.scheme, #"[{"name":"t","data":[[\#(token),\#(token),\#(token),\#(token)]]}]"#)
    let stored = try fixture.rows("SELECT typeof(i), i, typeof(d), d, typeof(t), t, typeof(n), n FROM R__t")
    let pairs = stride(from: 0, to: 8, by: 2).map { [stored[0][$0], stored[0][$0 + 1]] }
    #expect(result.mismatchCount == result.mismatches.count)
    return (pairs, result.mismatches.map(\.description))
  }

  @Test func twoToThe53PlusOneStaysAnExactInteger() throws {
    let (stored, reports) = try load("9007199254740993")
    let exact: SQLValue = .integer(9_007_199_254_740_993)
    #expect(stored == [[.text("integer"), exact], [.text("integer"), exact], [.text("integer"), exact], [.text("integer"), exact]])
    #expect(
      reports == [
        "table t, row 1, column 2 'd' (DOUBLE): 9007199254740993 is an integer a double cannot hold exactly; stored as integer",
        "table t, row 1, column 3 't' (TEXT): 9007199254740993 is an integer; stored as integer",
      ])
  }

  @Test func int64MaximumAndMinimumStayExactIntegers() throws {
    let (max, maxReports) = try load("9223372036854775807")
    #expect(max.allSatisfy { $0 == [.text("integer"), .integer(Int64.max)] })
    #expect(maxReports.count == 2)
    #expect(
      maxReports.first
        == "table t, row 1, column 2 'd' (DOUBLE): 9223372036854775807 is an integer a double cannot hold exactly; stored as integer")

    let (min, minReports) = try load("-9223372036854775808")
    // -2^63 is a power of two, so a DOUBLE column holds it exactly, as a REAL.
    #expect(
      min == [
        [.text("integer"), .integer(Int64.min)], [.text("real"), .real(-9_223_372_036_854_775_808.0)],
        [.text("integer"), .integer(Int64.min)], [.text("integer"), .integer(Int64.min)],
      ])
    #expect(minReports == ["table t, row 1, column 3 't' (TEXT): -9223372036854775808 is an integer; stored as integer"])
  }

  @Test func onePastInt64MaximumIsKeptAsTextWithEveryDigit() throws {
    let (stored, reports) = try load("9223372036854775808")
    let digits: SQLValue = .text("9223372036854775808")
    // 2^63 is exact as a double, so the DOUBLE column holds it as a REAL; elsewhere it is text.
    #expect(
      stored == [
        [.text("text"), digits], [.text("real"), .real(9_223_372_036_854_775_808.0)], [.text("text"), digits], [.text("text"), digits],
      ])
    #expect(
      reports == [
        "table t, row 1, column 1 'i' (BIGINT): 9223372036854775808 is an integer beyond 64 bits; stored as text",
        "table t, row 1, column 3 't' (TEXT): 9223372036854775808 is an integer beyond 64 bits; stored as text",
      ])
  }

  @Test func aThirtyDigitIntegerIsTextEverywhereAndNeverARoundedReal() throws {
    let (stored, reports) = try load("123456789012345678901234567890")
    #expect(stored.allSatisfy { $0 == [.text("text"), .text("123456789012345678901234567890")] })
    #expect(reports.count == 3)
    #expect(
      reports[1] == "table t, row 1, column 2 'd' (DOUBLE): 123456789012345678901234567890 is an integer beyond 64 bits; stored as text")
  }

  @Test func realsAreRealsAndIntegersInADoubleColumnBecomeExactReals() throws {
    let (stored, reports) = try load("0.1")
    #expect(stored.allSatisfy { $0 == [.text("real"), .real(0.1)] })
    #expect(
      reports == [
        "table t, row 1, column 1 'i' (BIGINT): 0.1 is a real number; stored as real",
        "table t, row 1, column 3 't' (TEXT): 0.1 is a real number; stored as real",
      ])
    let (five, _) = try load("5")
    #expect(five[1] == [.text("real"), .real(5)])
    let fixture = try StoreFixture()
    try fixture.load(ValueTests.scheme, #"[{"name":"t","data":[[1,5,"a",1],[2,1180591620717411303424,"b",2]]}]"#)
    // 5 / 2 is 2.5, not integer division: the DOUBLE column holds reals.
    #expect(try fixture.rows("SELECT d / 2 FROM R__t ORDER BY i") == [[.real(2.5)], [.real(590_295_810_358_705_651_712)]])
  }

  @Test func aNumberBeyondADoubleIsKeptAsText() throws {
    let (stored, reports) = try load("1e999")
    #expect(stored.allSatisfy { $0 == [.text("text"), .text("1e999")] })
    #expect(reports[1] == "table t, row 1, column 2 'd' (DOUBLE): 1e999 is a number beyond the range of a double; stored as text")
  }

  @Test func nanAndInfinityAreRefusedNamingResourceTableRowAndColumn() throws {
    let fixture = try StoreFixture()
    let scheme = ValueTests.scheme
    #expect(
      try fixture.loadError(scheme, #"[{"name":"t","data":[[1,2,"a",1],[1,NaN,"b",2]]}]"#)
        == "resource R, table t, row 2, column 2: NaN is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
    #expect(
      try fixture.loadError(scheme, #"[{"name":"t","data":[[1,2,"a",-Infinity]]}]"#)
        == "resource R, table t, row 1, column 4: -Infinity is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
    #expect(
      try fixture.loadError(scheme, #"[{"name":"t","data":[[Infinity,2,"a",1]]}]"#)
        == "resource R, table t, row 1, column 1: Infinity is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
    // Refused loads change nothing, not even the table they would have created.
    #expect(try fixture.store.database.tableExists("R__t") == false)
  }

  @Test func nullEmptyStringAndMissingStayDistinct() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([("a", "TEXT"), ("b", "TEXT")])
    try fixture.load(scheme, #"[{"name":"t","data":[["x",null],["y",""]]}]"#)
    #expect(
      try fixture.rows("SELECT a, typeof(b), b IS NULL, b = '' FROM R__t ORDER BY a") == [
        [.text("x"), .text("null"), .integer(1), .null], [.text("y"), .text("text"), .integer(0), .integer(1)],
      ])
    // A missing value (a short row) is neither: the load is refused and the rows stay.
    #expect(
      try fixture.loadError(scheme, #"[{"name":"t","data":[["z",null],["w"]]}]"#)
        == "resource R, table t, row 2, column 2: the row has 1 value; the table has 2 columns; a missing value is not null, so the row is refused"
    )
    #expect(try fixture.rows("SELECT count(*) FROM R__t") == [[.integer(2)]])
  }

  @Test func nestedArraysAndObjectsAreStoredAsTheirJSONText() throws {
    let (stored, reports) = try load(#"{"b":[1,2.50,{"c":null}],"a":"é\"\n"}"#)
    let json: SQLValue = .text(#"{"b":[1,2.50,{"c":null}],"a":"é\"\n"}"#)
    #expect(stored.allSatisfy { $0 == [.text("text"), json] })
    #expect(reports.count == 2)
    #expect(reports[0] == #"table t, row 1, column 1 'i' (BIGINT): {"b":[1,2.50,{"c":null}],"a":"é\"\n"} is an object; stored as text"#)
    let (array, _) = try load("[]")
    #expect(array[2] == [.text("text"), .text("[]")])
  }

  @Test func booleansAreZeroAndOne() throws {
    let (yes, reports) = try load("true")
    #expect(yes.allSatisfy { $0 == [.text("integer"), .integer(1)] })
    #expect(
      reports == [
        "table t, row 1, column 2 'd' (DOUBLE): true is a boolean; stored as integer",
        "table t, row 1, column 3 't' (TEXT): true is a boolean; stored as integer",
      ])
    let (no, _) = try load("false")
    #expect(no.allSatisfy { $0 == [.text("integer"), .integer(0)] })
  }

  @Test func stringsAreTextEvenWhenTheyLookLikeNumbers() throws {
    let (stored, reports) = try load(#""00123""#)
    #expect(stored.allSatisfy { $0 == [.text("text"), .text("00123")] })
    #expect(reports[0] == #"table t, row 1, column 1 'i' (BIGINT): "00123" is a string; stored as text"#)
    let (unicode, none) = try load(#""Zürich \ud83d\ude00 東京""#)
    #expect(unicode[2] == [.text("text"), .text("Zürich 😀 東京")])
    #expect(none.count == 2)
  }

  @Test func mismatchesBeyondAHundredAreCountedNotListed() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([("i", "BIGINT")])
    let rows = (1...250).map { #"["v\#($0)"]"# }.joined(separator: ",")
    let result = try fixture.load(scheme, #"[{"name":"t","data":[\#(rows)]}]"#)
    #expect(result.mismatchCount == 250)
    #expect(result.mismatches.count == 100)
    #expect(result.mismatches.last?.row == 100)
  }

  @Test func theFastDecimalPathAgreesWithTheCLibrary() {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<20_000 {
      let digits = Int.random(in: 1...17, using: &generator)
      var text = Bool.random(using: &generator) ? "-" : ""
      text += String((0..<digits).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
      if Bool.random(using: &generator) {
        let point = Int.random(in: 1...text.count, using: &generator)
        text.insert(".", at: text.index(text.startIndex, offsetBy: point))
        if text.hasSuffix(".") { text += "0" }
      }
      if Int.random(in: 0...3, using: &generator) == 0 { text += "e\(Int.random(in: -30...30, using: &generator))" }
      let ours = Array(text.utf8).withUnsafeBufferPointer { NumberText.double($0.baseAddress!, $0.count) }
      let reference = text.withCString { strtod($0, nil) }
      #expect(ours.bitPattern == reference.bitPattern, "\(text)")
    }
  }
}
