public import DrayModel

// The staging seam: where an `http` step stages its records page by page and keeps its page
// ledger, before it publishes them into the target database through `StoreTransaction`
// (docs/architecture.md, "The target seam"). SQLite (`SQLiteStaging`) implements it: the
// job's database, or beside a server database a local file.

/// The database an `http` step stages in: its records, one staging table per step, and its
/// page ledger (`_dray_http_pages`, one entry per step), which a page's rows commit with.
///
/// One connection, one owner, like `TargetStore`. The table methods work inside the
/// caller's transaction (`write`) or, for reading, outside any.
public protocol RecordStaging: AnyObject {
  /// What the page ledger keeps for step `stepID` of `job`, or nil.
  func pages(job: String, stepID: String) throws -> StagedPages?

  /// What the staging database keeps for an `incremental` step (its cursor, with the value
  /// staged by the pages committed so far); an empty entry when it keeps nothing.
  func cursor(job: String, stepID: String) throws -> CursorEntry

  /// The staging table `name` as it stands (it need not exist yet).
  func table(_ name: String) throws -> any StagedTable

  /// Runs `body` in one write transaction and commits when it returns; rolls back and
  /// rethrows when it throws.
  func write<T>(_ body: (any StagingTransaction) throws -> T) throws -> T
}

/// The ledger's operations of one open write transaction of a `RecordStaging`.
public protocol StagingTransaction: AnyObject {
  /// Records `pages` as the ledger entry of step `stepID` of `job`, committing with this
  /// transaction.
  func savePages(_ pages: StagedPages, job: String, stepID: String) throws

  /// Forgets the ledger entry of step `stepID` of `job`.
  func clearPages(job: String, stepID: String) throws

  /// Records the cursor of an `incremental` step as its pages stage it, committing with
  /// this transaction.
  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws

  /// Drops the staging table `name` if it exists, committing with this transaction.
  func dropTable(_ name: String) throws
}

/// A table records are staged in, and the columns it holds.
///
/// Column names match as the target matches identifiers (`IdentifierKey`). Types only
/// widen: a column that meets values its type cannot hold takes the joined type
/// (`ColumnType.join`); a column that has held only nulls has no type until a value
/// arrives.
public protocol StagedTable: AnyObject {
  var name: String { get }
  /// The table's columns and types (nil: no type yet), in order; empty when the table does
  /// not exist.
  var columns: [(name: String, type: ColumnType?)] { get }

  /// Makes the table hold `wanted`: creates it, adds missing columns, and (when `widen`)
  /// widens a column whose type cannot hold the wanted one.
  /// - Throws: `StagingRefusal` past the database's column limit; the database's errors.
  func prepare(_ wanted: [(name: String, type: ColumnType?)], widen: Bool) throws

  /// Inserts one record; its columns must be in the table (`prepare`). A column the record
  /// does not name is NULL.
  /// - Throws: `StagingRefusal` when the table does not exist (no record so far gave a
  ///   value and no columns were declared) or lacks one of the record's columns.
  func insert(_ record: [(name: String, value: SQLValue)]) throws

  /// Calls `body` with each row's values, in `columns` order and in the order they were
  /// staged; nothing when the table does not exist.
  func forEachRow(_ body: ([SQLValue]) throws -> Void) throws

  /// Drops the table if it exists.
  func drop() throws
}

/// What the page ledger keeps for a paginated `http` step: the pages committed, and the
/// request of the next page as the step stored it.
public struct StagedPages: Sendable, Equatable {
  /// The run lineage and step fingerprint the pages were committed under: a run resumes
  /// them only when both are its own.
  public var lineage: String
  public var fingerprint: String
  public var pages: Int
  public var rows: Int
  public var bytes: Int64
  /// The next page's request (the step's own text); nil when the last page is in.
  public var next: String?

  public init(lineage: String, fingerprint: String, pages: Int, rows: Int, bytes: Int64, next: String?) {
    self.lineage = lineage
    self.fingerprint = fingerprint
    self.pages = pages
    self.rows = rows
    self.bytes = bytes
    self.next = next
  }
}

/// Records a staging table cannot hold, refused with a message for the page that holds
/// them (the step names the page and its URL).
public struct StagingRefusal: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}
