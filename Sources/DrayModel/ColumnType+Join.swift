extension ColumnType {
  /// The type of a column holding values of types `a` and `b` (nil: only nulls so far):
  /// equal types stay, INTEGER with REAL becomes REAL, any other mix becomes TEXT.
  public static func join(_ a: ColumnType?, _ b: ColumnType?) -> ColumnType? {
    guard let a else { return b }
    guard let b else { return a }
    if a == b { return a }
    if Set([a, b]) == [.integer, .real] { return .real }
    return .text
  }
}
