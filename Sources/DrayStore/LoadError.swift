/// Where a load failed: resource, and when known table, row and column (1-based).
public struct LoadError: Error, Sendable, CustomStringConvertible {
  public var resource: String
  public var table: String?
  public var row: Int?
  public var column: Int?
  public var message: String

  public init(resource: String, table: String? = nil, row: Int? = nil, column: Int? = nil, message: String) {
    self.resource = resource
    self.table = table
    self.row = row
    self.column = column
    self.message = message
  }

  public var description: String {
    var place = "resource \(resource)"
    if let table { place += ", table \(table)" }
    if let row { place += ", row \(row)" }
    if let column { place += ", column \(column)" }
    return "\(place): \(message)"
  }
}
