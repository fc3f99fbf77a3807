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

extension ColumnType {
  /// Whether a column of this type holds a value of type `value` without converting it
  /// (load.contract.types, docs/http.md "Contract"): TEXT holds every value, REAL and
  /// NUMERIC hold numbers, INTEGER holds integers. A null (nil) fits every column.
  public func holds(_ value: ColumnType?) -> Bool {
    guard let value else { return true }
    switch self {
    case .text: return true
    case .real, .numeric: return value == .integer || value == .real || value == self
    case .integer: return value == .integer
    }
  }

  /// The type `evolve` widens a column of this type to for a value of type `value`: the
  /// column itself when it holds the value; INTEGER → REAL for a real; otherwise TEXT.
  public func widened(for value: ColumnType?) -> ColumnType {
    if holds(value) { return self }
    if self == .integer && value == .real { return .real }
    return .text
  }
}
