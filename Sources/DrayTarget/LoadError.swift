public import DrayModel

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
    if let table { place += ", table \(PrintableText.excerpt(table))" }
    if let row { place += ", row \(row)" }
    if let column { place += ", column \(column)" }
    return "\(place): \(message)"
  }
}

extension LoadError {
  /// The platform answers one element per output table (platform-api.md, full data and
  /// deltas alike): an answer without one (`[]`) would leave the table as it was, counted as
  /// loaded.
  /// - Parameter named: the tables the answer holds, by name.
  /// - Returns: the error naming the first output table of `scheme` the answer lacks; nil
  ///   when it holds them all.
  public static func missingTable(of scheme: ResourceScheme, named: Set<String>) -> LoadError? {
    guard let missing = scheme.outputs.first(where: { !named.contains($0.name) }) else { return nil }
    let held = scheme.outputs.map(\.name).filter(named.contains)
    return LoadError(
      resource: scheme.name, table: missing.name,
      message:
        "the answer holds no table '\(missing.name)', which the scheme declares (it holds \(held.isEmpty ? "no table of the scheme" : held.map { "'\($0)'" }.joined(separator: ", "))); "
        + "nothing was loaded: every table keeps its previous rows")
  }
}
