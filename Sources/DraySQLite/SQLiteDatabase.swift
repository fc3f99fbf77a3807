public import DrayModel
public import DrayTarget
internal import Foundation
internal import Glibc

/// A job's SQLite database behind the target seam: the target store at `path` and the run
/// journal at `journalPath` (the same file, or `<state.path>/<job>.journal.sqlite` for a job
/// without a database).
public struct SQLiteDatabase: JobDatabase {
  /// The target database's file; nil for a job without one (its steps write files only).
  public let path: String?
  /// The run journal's file.
  public let journalPath: String

  public init(path: String?, journalPath: String) {
    self.path = path
    self.journalPath = journalPath
  }

  public var location: String { path ?? journalPath }
  public var journalLocation: String { journalPath }
  public var journalPlace: String { "at \(journalPath)" }
  public var absence: String { "no database at \(location); check the path (a run of the job creates it)" }
  public var naming: TableNaming { Store.naming }
  public var capabilities: DatabaseCapabilities { DatabaseCapabilities(loadsWhileDownloading: true, reconnects: false) }

  public func connect(cancellation: Cancellation) throws {}

  public func openJournal(fresh: Bool, cancellation: Cancellation) throws -> sending any RunJournal {
    try Journal(path: journalPath, startingFresh: fresh)
  }

  /// SQLite's `Store` at `path`, stopping its statements once `cancellation` is set. The
  /// lock is the job's lock file: no fence to check.
  /// - Throws: `StoreError.noDatabase` for a job without a database; `SQLiteError`.
  public func openStore(fence: (any RunFence)?, cancellation: Cancellation) throws -> any TargetStore {
    guard let path else { throw StoreError.noDatabase }
    let store = try Store(path: path)
    store.stopWhen(cancellation)
    return store
  }

  /// `SQLiteStaging` in the job's database, or beside the journal for a step that only
  /// paginates.
  public func openStaging(records: Bool, cancellation: Cancellation) throws -> any RecordStaging {
    guard records else { return try SQLiteStaging(path: journalPath, cancellation: cancellation) }
    guard let path else { throw StoreError.noDatabase }
    return try SQLiteStaging(path: path, cancellation: cancellation)
  }

  /// - Throws: `DatabaseFileProblem` for a path that is not an SQLite database file.
  public func openReadOnly() throws -> (any DatabaseReader)? {
    let target = path ?? journalPath
    guard FileManager.default.fileExists(atPath: target) else { return nil }
    if let problem = DatabaseFileProblem(path: target) { throw problem }
    return SQLiteReader(path: target, journalPath: journalPath)
  }

  /// `SQLiteTokenKeeper` in the journal's file.
  public func openTokenKeeper(cancellation: Cancellation) throws -> any TokenKeeper {
    try SQLiteTokenKeeper(path: journalPath, cancellation: cancellation)
  }

  public func failure(_ error: any Error) -> DatabaseFailure? {
    guard let error = error as? SQLiteError else { return nil }
    // SQLITE_CONSTRAINT_DATATYPE (3091) and SQLITE_MISMATCH (20), https://sqlite.org/rescode.html.
    return DatabaseFailure(code: "sqlite_error", refusesData: [3091, 20].contains(error.code), message: error.message)
  }
}

/// A path given as an SQLite database that is not one, found before SQLite opens it: SQLite
/// hangs on a FIFO and answers "disk I/O error" for a folder.
public struct DatabaseFileProblem: Error, CustomStringConvertible {
  public var description: String

  /// `data is a FIFO (named pipe), not an SQLite database file; name the job's database
  /// file`, when `path` (a symbolic link followed) is not a regular file; nil otherwise.
  /// Also when the file holds something else than a database (SQLite's header,
  /// https://sqlite.org/fileformat.html §1.3): a manifest given in place of its database
  /// would otherwise answer `SELECT 1`, which reads no page. An empty file is an empty
  /// database.
  public init?(path: String) {
    let advice = "name the job's database file (database.path in its manifest)"
    if let kind = FileKind.refusal(at: path, followingLinks: true) {
      description = "\(path) is \(kind), not an SQLite database file; \(advice)"
      return
    }
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    let head = (try? handle.read(upToCount: 16)) ?? Data()
    guard !head.isEmpty, !head.elementsEqual("SQLite format 3\0".utf8) else { return nil }
    let manifest = path.hasSuffix(".yaml") || path.hasSuffix(".yml")
    description =
      "\(path) is not an SQLite database (it does not start with SQLite's header)\(manifest ? "; it looks like a manifest" : ""); \(advice)"
  }
}

/// An SQLite database and its journal read on read-only connections (`JobDatabase.openReadOnly`).
final class SQLiteReader: DatabaseReader {
  /// The database file (the journal's, for a job without a database).
  let path: String
  let journalPath: String
  private lazy var connection = Result { try Database(path: path, create: false, readOnly: true) }

  init(path: String, journalPath: String) {
    self.path = path
    self.journalPath = journalPath
  }

  func journal() throws -> (any RunJournal)? {
    do {
      return try Journal(readingAt: journalPath)
    } catch .missing {
      return nil
    }
  }

  /// The runs' processes ran on this machine, where the journal is.
  func runner(of run: RunRecord) throws -> String {
    kill(pid_t(run.processID), 0) == 0 || errno == EPERM
      ? "process \(run.processID)" : "process \(run.processID) is gone; the next run marks it abandoned"
  }

  func tables(resource: String?) throws -> [Bookkeeping.TableRecord] {
    let database = try connection.get()
    return try Store.records(in: database, resource: resource)
  }

  func scheme(for resource: String) throws -> ResourceScheme? {
    let database = try connection.get()
    guard try database.tableExists("_dray_resources") else { return nil }
    let rows = try database.rows("SELECT scheme FROM _dray_resources WHERE resource = ?", [.text(resource)])
    guard case .text(let json)? = try rows.first?["scheme"] else { return nil }
    return try Bookkeeping.decodeScheme(json)
  }

  func keptToken(key: String) throws -> KeptToken? {
    guard journalPath == path else {
      guard FileManager.default.fileExists(atPath: journalPath) else { return nil }
      return try SQLiteTokenKeeper.read(Database(path: journalPath, create: false, readOnly: true), key: key)
    }
    return try SQLiteTokenKeeper.read(connection.get(), key: key)
  }

  func cursor(job: String, stepID: String) throws -> CursorEntry {
    let database = try connection.get()
    return try CursorLedger(database: database, job: job, stepID: stepID).read()
  }

  /// The statement must be one for which `sqlite3_stmt_readonly` is true
  /// (https://sqlite.org/c3ref/stmt_readonly.html): a read-only connection still lets
  /// `VACUUM INTO` write a new file and `PRAGMA journal_mode=...` try to change the database.
  /// Records stream out as the statement steps, so memory stays flat.
  func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws {
    let database = try connection.get()
    let statement = try database.prepareOne(sql)
    guard statement.isReadOnly else {
      throw ReadOnlyQueryError(
        "dray query only reads, and this statement would change a database or write a file (SQLite's sqlite3_stmt_readonly); use SELECT, WITH or a read-only PRAGMA, and change data with an sql step in a job"
      )
    }
    let count = statement.columnCount
    try columns((0..<count).map { statement.columnName($0) })
    do {
      while try statement.step() { try row((0..<count).map { statement.value($0) }) }
    } catch let error as SQLiteError where error.isReadOnly {
      throw ReadOnlyQueryError("dray query only reads; change data with an sql step in a job (\(error.message))")
    }
  }

  func quoted(_ name: String) -> String { Database.quote(name) }
}
