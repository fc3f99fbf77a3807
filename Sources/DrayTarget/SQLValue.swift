internal import DrayModel

/// A value as SQLite stores it.
public enum SQLValue: Sendable, Equatable, CustomStringConvertible {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob([UInt8])

  public var description: String {
    switch self {
    case .null: "NULL"
    case .integer(let i): String(i)
    case .real(let d): String(d)
    case .text(let s): s
    case .blob(let b): "<\(b.count) bytes>"
    }
  }
}
