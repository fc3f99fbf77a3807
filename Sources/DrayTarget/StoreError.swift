public import DrayModel

/// Problems with what the store is asked to hold.
public enum StoreError: Error, Sendable, CustomStringConvertible, Equatable {
  case cannotCreateFolder(FolderError)
  /// A target store was asked of a job whose manifest names no database.
  case noDatabase
  case badScheme(resource: String, reason: String)
  case unknownResource(String)
  /// Two output tables that would be stored under one physical name; `reason` is the
  /// database's (SQLite ignores ASCII case in table names).
  case nameClash(
    name: String, resource: String, table: String, otherResource: String, otherTable: String, otherParams: String, reason: String)

  /// `name` as SQL quotes an identifier (SQL standard, as SQLite and PostgreSQL take it): in
  /// double quotes, each embedded double quote doubled.
  static func quoted(_ name: String) -> String { "\"" + name.replacing("\"", with: "\"\"") + "\"" }

  public var description: String {
    switch self {
    case .cannotCreateFolder(let error):
      "\(error), for the database; check the path and permissions"
    case .noDatabase:
      "the job has no database; add a 'database' block (path or url) to its manifest"
    case .badScheme(let resource, let reason):
      "resource '\(resource)': \(reason); nothing was created"
    case .unknownResource(let resource):
      "resource '\(resource)' has no scheme in the database; add a 'schemes' step before loading it"
    case .nameClash(let name, let resource, let table, let otherResource, let otherTable, let otherParams, let reason):
      "resource '\(resource)': output table '\(table)' would be stored as \(StoreError.quoted(name)), which already holds output table '\(otherTable)' of resource '\(otherResource)' (params \(otherParams)); \(reason); nothing was created"
    }
  }
}

/// Why a merge could not run.
public enum MergeError: Error, CustomStringConvertible {
  case duplicateKeys(table: String, key: [String], values: [String])

  public var description: String {
    switch self {
    case .duplicateKeys(let table, let key, let values):
      "table \(table) already holds more than one row with \(key.joined(separator: ", ")) = \(values.joined(separator: ", ")), "
        + "so it cannot be merged into by that primary key; remove the duplicates, or run with --fresh to load the table anew"
    }
  }
}
