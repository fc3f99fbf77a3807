/// A resource's scheme, as `GET /api/v1/schema/` describes it (platform-api.md §2).
public struct ResourceScheme: Sendable, Hashable {
  /// A column of an output (or tabular input) table.
  public struct Column: Sendable, Hashable {
    public var name: String
    /// The platform's type name: `TEXT`, `BIGINT`, `DOUBLE`, or another name kept as is.
    public var type: String
    public init(name: String, type: String) {
      self.name = name
      self.type = type
    }
  }

  /// One output table of the resource.
  public struct Table: Sendable, Hashable {
    public var name: String
    public var columns: [Column]
    public init(name: String, columns: [Column]) {
      self.name = name
      self.columns = columns
    }
  }

  public var name: String
  /// `tabular` or `web`.
  public var type: String
  /// Cache lifetime in seconds; present for cached resources, whose rows start with a row id.
  public var lifetime: Int?
  public var outputs: [Table]
  /// The scheme's JSON as the server sent it, kept for the bookkeeping tables.
  public var json: String

  public init(name: String, type: String = "tabular", lifetime: Int? = nil, outputs: [Table], json: String = "{}") {
    self.name = name
    self.type = type
    self.lifetime = lifetime
    self.outputs = outputs
    self.json = json
  }

  /// True when rows carry a leading row id (`rowIDColumn`) that deltas refer to.
  public var isCached: Bool { lifetime != nil }

  /// The column holding a cached resource's row id, first in each of its tables.
  public static let rowIDColumn = "hhive_id"
}
