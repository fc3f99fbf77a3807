extension ColumnType {
  /// The type of a column holding values of types `a` and `b` (nil: only nulls so far):
  /// equal types stay; INTEGER with REAL becomes REAL, or NUMERIC when `integersFitADouble`
  /// is false (the column holds an integer beyond ±2^53, `doubleHolds`, which
  /// REAL could round); NUMERIC with INTEGER or REAL stays NUMERIC; any other mix becomes
  /// TEXT (docs/http.md "Column types").
  public static func join(_ a: ColumnType?, _ b: ColumnType?, integersFitADouble: Bool = true) -> ColumnType? {
    guard let a else { return b }
    guard let b else { return a }
    if a == b { return a }
    let pair = Set([a, b])
    if pair == [.integer, .real] { return integersFitADouble ? .real : .numeric }
    if pair == [.numeric, .integer] || pair == [.numeric, .real] { return .numeric }
    return .text
  }

  /// The largest magnitude up to which a double holds every integer exactly: 2^53.
  public static let exactDoubleIntegers: Int64 = 1 << 53

  /// Whether `n` is an integer every double column keeps: |n| ≤ 2^53. Beyond it a double
  /// holds only some integers (9007199254740993 becomes …992), so dray counts none of them
  /// as fitting a REAL column, rather than answering differently for neighbouring values.
  public static func doubleHolds(_ n: Int64) -> Bool {
    n >= -exactDoubleIntegers && n <= exactDoubleIntegers
  }
}

extension ColumnType {
  /// Whether a column of this type holds a value of type `value` without converting it
  /// (load.contract.types, docs/http.md "Contract"): TEXT holds every value, NUMERIC holds
  /// numbers, REAL holds reals and the integers a double holds exactly (`integersFitADouble`
  /// false: among them is one it does not), INTEGER holds integers. A null (nil) fits every column.
  public func holds(_ value: ColumnType?, integersFitADouble: Bool = true) -> Bool {
    guard let value else { return true }
    switch self {
    case .text: return true
    case .numeric: return value == .integer || value == .real || value == .numeric
    case .real: return value == .real || (value == .integer && integersFitADouble)
    case .integer: return value == .integer
    }
  }

  /// The type `evolve` widens a column of this type to for a value of type `value`: the
  /// column itself when it holds the value; otherwise the type both the column's values
  /// and the value join to (`join`): INTEGER → REAL for a real, INTEGER or REAL → NUMERIC
  /// when integers a double cannot hold exactly meet a real; otherwise TEXT.
  /// - Parameter integersFitADouble: false when the column's rows or the value hold an
  ///   integer a double cannot hold exactly (|n| > 2^53).
  public func widened(for value: ColumnType?, integersFitADouble: Bool = true) -> ColumnType {
    if holds(value, integersFitADouble: integersFitADouble) { return self }
    if self == .real && value == .integer { return .numeric }
    return ColumnType.join(self, value, integersFitADouble: integersFitADouble) ?? self
  }
}
