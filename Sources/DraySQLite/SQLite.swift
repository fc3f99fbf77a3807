internal import CSQLite
public import DrayModel
internal import DrayTarget
internal import Foundation

/// An error from SQLite, with its result code, its message and the SQL involved.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
  /// SQLite's extended result code (https://sqlite.org/rescode.html).
  public var code: Int32
  public var message: String
  /// The statement that failed, when there was one.
  public var sql: String?
  /// The database file.
  public var path: String

  public init(code: Int32, message: String, sql: String?, path: String) {
    self.code = code
    self.message = message
    self.sql = sql
    self.path = path
  }

  public var description: String {
    var out = "SQLite error \(code) in \(path): \(message)"
    if let sql { out += " (in: \(sql.count > 200 ? String(sql.prefix(200)) + "…" : sql))" }
    if isHotJournal {
      out +=
        "; a write cut short by a crash left a rollback journal, which only a writer can roll back: the next `dray run` of the job does"
    }
    if isFull {
      out += "; the disk holding it is full: free space there, then run again"
    }
    if isBusy {
      out +=
        "; another process (another job or program writing this database) held it locked longer than the busy timeout (\(Database.busyTimeoutSeconds) s): wait for it to finish, then run again; finished steps are skipped"
    }
    return out
  }

  /// SQLite's primary result code, which an extended code refines in its upper bits
  /// (https://sqlite.org/rescode.html, "Primary Result Codes versus Extended Result Codes").
  public var primaryCode: Int32 { ResultCode.primary(code) }

  /// True when the disk holding the database or its WAL is full (SQLITE_FULL).
  public var isFull: Bool { primaryCode == SQLITE_FULL }

  /// True when the error is an interrupt (`sqlite3_interrupt`).
  public var isInterrupt: Bool { primaryCode == SQLITE_INTERRUPT }

  /// True when a read-only connection met a hot rollback journal (SQLITE_READONLY_ROLLBACK):
  /// a write that a crash cut short, which only a connection that may write can roll back
  /// (https://sqlite.org/atomiccommit.html, "Hot Rollback Journals").
  public var isHotJournal: Bool { code == ResultCode.readOnlyRollback }

  /// True when the database refused a write: the connection or the file is read-only
  /// (SQLITE_READONLY and its extended codes).
  public var isReadOnly: Bool { primaryCode == SQLITE_READONLY }

  /// True when a statement was refused by `Database.refusingTransactionControl` for
  /// beginning, committing or rolling back a transaction.
  public var isRefusedTransactionControl: Bool { primaryCode == SQLITE_AUTH && refusedOwnTable == nil }

  /// The dray table (`_dray_...`) a statement would have changed, when
  /// `Database.protectingOwnTables` or `refusingTransactionControl` refused it for that.
  public var refusedOwnTable: String?
  /// The trigger whose body would have changed `refusedOwnTable`, when a trigger's did.
  public var refusedInTrigger: String?

  /// True when another connection held a lock past the busy timeout (SQLITE_BUSY,
  /// SQLITE_LOCKED).
  public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

  /// True when the file or its folder cannot be opened or written by this user
  /// (SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY but for a hot journal).
  public var isAccessDenied: Bool {
    [SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY].contains(primaryCode) && !isHotJournal
  }
}

/// SQLite's result codes dray tells apart that Swift does not import: sqlite3.h defines each
/// extended code as a macro, `(primary | (n<<8))` (https://sqlite.org/rescode.html).
enum ResultCode {
  /// SQLITE_READONLY_ROLLBACK: a read-only connection met a hot rollback journal.
  static let readOnlyRollback = SQLITE_READONLY | (3 << 8)
  /// SQLITE_CONSTRAINT_PRIMARYKEY: a row's primary key is already taken.
  static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)

  /// The primary result code an extended code `code` refines: its low 8 bits.
  static func primary(_ code: Int32) -> Int32 { code & 0xff }
}

/// Process-wide SQLite settings, applied once before the first connection opens: memory
/// statistics off (dray never reads them, and they cost a global mutex per allocation).
private let sqliteConfigured: Void = {
  _ = dray_sqlite3_disable_memstatus()
}()

/// A connection to one SQLite database file.
///
/// Not thread-safe: one owner at a time. Opened with the settings dray relies on (see
/// `docs/store.md`): WAL journal mode, so readers keep seeing the last committed state
/// during a load; `synchronous=NORMAL`, which in WAL mode never corrupts the database and
/// keeps every commit through a process crash (only an OS crash or power loss can drop the
/// last commits, whole); a 10 s busy timeout for concurrent writers.
public final class Database {
  /// How long a statement waits for another connection's lock before SQLITE_BUSY, in
  /// seconds (`sqlite3_busy_timeout`; docs/store.md).
  public static let busyTimeoutSeconds: Int32 = 10

  /// The SQLite loaded at run time (`sqlite3_libversion`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "SQLite", version: String(cString: sqlite3_libversion()))
  }
  let handle: OpaquePointer
  /// The file path.
  public let path: String
  private var statements: [String: Statement] = [:]
  /// Kept alive while the progress handler points at it.
  private var cancellation: Cancellation?

  /// The page size of a database dray creates, in bytes: 32 KiB (SQLite's default is 4 KiB;
  /// https://sqlite.org/pragma.html#pragma_page_size). A load writes each page twice (into the
  /// WAL, then into the database at the checkpoint), one system call a page: eight times
  /// fewer calls, and fewer B-tree pages to split. docs/store.md, "SQLite settings".
  static let newPageSize = 32768

  /// Opens (creating when `create`) the database at `path`; a new database gets pages of
  /// `newPageSize` bytes.
  /// - Throws: `SQLiteError` naming the path.
  public init(path: String, create: Bool = true, readOnly: Bool = false) throws(SQLiteError) {
    _ = sqliteConfigured
    var db: OpaquePointer?
    var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
    flags |= SQLITE_OPEN_NOMUTEX
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      // Frees the half-opened handle; the open's error is the one to report.
      _ = sqlite3_close_v2(db)
      throw SQLiteError(code: rc, message: message, sql: nil, path: path)
    }
    self.handle = db
    self.path = path
    sqlite3_extended_result_codes(db, 1)
    sqlite3_busy_timeout(db, Database.busyTimeoutSeconds * 1000)
    if !readOnly {
      // Before the first write, which fixes a new database's page size; ignored after. Two
      // connections that open a new file at once (parallel `http` members staging beside a
      // server database) meet here: the one asking for WAL while the other switches the file
      // gets SQLITE_BUSY at once, without the busy handler, so it asks again until the busy
      // timeout has passed.
      let settings = "PRAGMA page_size=\(Database.newPageSize); PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
      let deadline = ContinuousClock.now + .seconds(Int(Database.busyTimeoutSeconds))
      while true {
        do {
          try execute(settings)
          break
        } catch let error where error.isBusy && ContinuousClock.now < deadline {
          usleep(10_000)
        }
      }
    }
  }

  private var isOpen = true

  /// Starts writing the WAL's pages to disk without waiting (`sync_file_range` with
  /// `SYNC_FILE_RANGE_WRITE`), so that the fsync of the checkpoint at a long load's commit
  /// finds them written: called as a load that follows a download goes, it moves that disk
  /// work off the commit (docs/store.md, "SQLite settings"). Changes no guarantee; does
  /// nothing before the WAL exists.
  public func startWALWriteback() {
    if walDescriptor < 0 { walDescriptor = open(path + "-wal", O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
    if walDescriptor >= 0 { _ = dray_start_writeback(walDescriptor) }
  }

  /// The WAL, opened by `startWALWriteback`; -1 before. SQLite takes no POSIX lock on the
  /// `-wal` file (its locks are on the database and the `-shm` file), so closing this
  /// descriptor releases none of the connection's.
  private var walDescriptor: Int32 = -1

  /// Closes the connection (`sqlite3_close_v2`); statements still held elsewhere are freed
  /// when they are released. Later calls do nothing.
  /// - Throws: `SQLiteError` when SQLite refuses to close it.
  public func close() throws(SQLiteError) {
    guard isOpen else { return }
    if walDescriptor >= 0 { Glibc.close(walDescriptor) }
    walDescriptor = -1
    statements.removeAll()
    isOpen = false
    let rc = sqlite3_close_v2(handle)
    guard rc == SQLITE_OK else { throw SQLiteError(code: rc, message: String(cString: sqlite3_errstr(rc)), sql: nil, path: path) }
  }

  deinit {
    // A failure here has nowhere to go: call `close()` to see it.
    try? close()
  }

  /// Runs one or more `;`-separated statements without results.
  /// - Returns: rows changed by the last INSERT, UPDATE or DELETE among them.
  @discardableResult
  public func execute(_ sql: String) throws(SQLiteError) -> Int {
    var changes = 0
    try forEachStatement(sql) { statement throws(SQLiteError) in
      while try statement.step() {}
      changes = Int(sqlite3_changes(handle))
    }
    return changes
  }

  /// The statement starting at `start`, up to and including the `;` that ends it
  /// (`sqlite3_complete`, https://sqlite.org/c3ref/complete.html), or to the end of the text
  /// when no `;` ends it; trimmed.
  static func wholeStatement(at start: UnsafePointer<CChar>) -> String {
    var end = start
    while end.pointee != 0 {
      if end.pointee == CChar(UInt8(ascii: ";")) {
        let text = String(decoding: UnsafeRawBufferPointer(start: start, count: end - start + 1), as: UTF8.self)
        if sqlite3_complete(text) != 0 { return text.trimmingCharacters(in: .whitespacesAndNewlines) }
      }
      end += 1
    }
    return String(cString: start).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Prepares each statement of `sql` in turn and hands it to `body`.
  /// - Throws: `SQLiteError`; with `SQLITE_MISUSE` when `sql` holds a NUL character, where
  ///   SQLite would stop reading (`DELETE FROM t\0 WHERE ...` would run as `DELETE FROM t`).
  public func forEachStatement(_ sql: String, _ body: (Statement) throws(SQLiteError) -> Void) throws(SQLiteError) {
    let bytes = Array(sql.utf8CString)
    if bytes.dropLast().contains(0) { throw nulError(sql) }
    try bytes.withUnsafeBufferPointer { (buffer) throws(SQLiteError) in
      var tail: UnsafePointer<CChar>? = buffer.baseAddress
      while let start = tail, start.pointee != 0 {
        let (statement, next) = try prepareStatement(at: start)
        tail = next
        guard let statement else { continue }  // whitespace or a comment
        try body(statement)
      }
    }
  }

  /// Prepares the statement of the text at `start`.
  /// - Returns: the statement, nil when the text up to `next` is only spaces and comments;
  ///   and where the text after it starts.
  private func prepareStatement(at start: UnsafePointer<CChar>) throws(SQLiteError) -> (
    statement: Statement?, next: UnsafePointer<CChar>?
  ) {
    var raw: OpaquePointer?
    var next: UnsafePointer<CChar>?
    let rc = sqlite3_prepare_v2(handle, start, -1, &raw, &next)
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: (next ?? start) - start), as: UTF8.self)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    // A refused statement is named whole; SQLite stops reading at the refusal.
    guard rc == SQLITE_OK else { throw error(rc, sql: refusedTable != nil ? Database.wholeStatement(at: start) : text) }
    return (raw.map { Statement($0, database: self, sql: text) }, next)
  }

  /// A prepared statement for `sql`, cached for the connection's life.
  public func cached(_ sql: String) throws(SQLiteError) -> Statement {
    if let statement = statements[sql] {
      statement.reset()
      return statement
    }
    let statement = try prepare(sql)
    statements[sql] = statement
    return statement
  }

  /// Prepares one statement.
  public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
    if sql.utf8.contains(0) { throw nulError(sql) }
    var raw: OpaquePointer?
    let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
    guard rc == SQLITE_OK, let raw else { throw error(rc, sql: sql) }
    return Statement(raw, database: self, sql: sql)
  }

  /// Prepares `sql`, which must hold exactly one statement (comments and spaces around it
  /// are fine).
  /// - Throws: `SQLiteError` from SQLite, or with code `SQLITE_MISUSE` when `sql` holds no
  ///   statement, more than one, or a NUL character.
  public func prepareOne(_ sql: String) throws(SQLiteError) -> Statement {
    let (statement, rest) = try prepareFirst(sql)
    if let rest {
      throw SQLiteError(
        code: SQLITE_MISUSE, message: "one statement at a time; found another after the first: \(rest)", sql: sql, path: path)
    }
    guard let statement else {
      throw SQLiteError(code: SQLITE_MISUSE, message: "no SQL statement to run", sql: sql, path: path)
    }
    return statement
  }

  /// Prepares the first statement of `sql` and tells whether anything but spaces and
  /// comments follows it. What follows is never prepared, so `SELECT 1; DROP TABLE x` is
  /// found to hold a second statement whether or not `x` exists.
  /// - Returns: the statement (nil when `sql` holds none) and, when another statement
  ///   follows, its text (trimmed, cut after 200 characters).
  /// - Throws: `SQLiteError` from SQLite for the first statement; with `SQLITE_MISUSE` when
  ///   `sql` holds a NUL character.
  public func prepareFirst(_ sql: String) throws(SQLiteError) -> (statement: Statement?, rest: String?) {
    let bytes = Array(sql.utf8CString)
    if bytes.dropLast().contains(0) { throw nulError(sql) }
    return try bytes.withUnsafeBufferPointer { (buffer) throws(SQLiteError) -> (Statement?, String?) in
      var first: Statement?
      var tail: UnsafePointer<CChar>? = buffer.baseAddress
      while let start = tail, start.pointee != 0 {
        if first != nil {
          // Only spaces, comments and empty statements (`;`) may follow: SQLite prepares
          // those to no statement. Anything else, even SQL that would not prepare, is a
          // second statement; none is ever run.
          var raw: OpaquePointer?
          var next: UnsafePointer<CChar>?
          let rc = sqlite3_prepare_v2(handle, start, -1, &raw, &next)
          sqlite3_finalize(raw)
          if rc == SQLITE_OK && raw == nil {
            tail = next
            continue
          }
          var rest = String(cString: start)  // to the closing NUL: the SQL holds no other (checked above)
            .trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: ";")))
          if rest.count > 200 { rest = String(rest.prefix(200)) + "…" }
          return (first, rest)
        }
        let (statement, next) = try prepareStatement(at: start)
        first = statement
        tail = next
      }
      return (first, nil)
    }
  }

  /// The error for SQL holding U+0000.
  private func nulError(_ sql: String) -> SQLiteError {
    SQLiteError(
      code: SQLITE_MISUSE, message: "the SQL holds a NUL character (U+0000), where SQLite would stop reading it; remove it",
      sql: sql.replacing("\0", with: "\\0"), path: path)
  }

  /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`), committing when it returns and
  /// rolling back when it throws.
  public func transaction<T>(_ body: () throws -> T) throws -> T {
    try Tracing.commit(system: "sqlite") { try transactionUntraced(body) }
  }

  private func transactionUntraced<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      _ = try? execute("ROLLBACK")
      throw error
    }
  }

  /// Rows inserted, updated or deleted by the most recent INSERT, UPDATE or DELETE (a
  /// statement of another kind leaves it as it was: `sqlite3_changes`).
  public var changes: Int { Int(sqlite3_changes(handle)) }

  /// Rows inserted, updated or deleted since the connection opened, by triggers too
  /// (`sqlite3_total_changes64`): a statement that leaves it unchanged changed no row.
  public var totalChanges: Int64 { sqlite3_total_changes64(handle) }

  /// Makes a running statement on this connection stop with an interrupt error. Safe to call
  /// from another thread.
  public func interrupt() { sqlite3_interrupt(handle) }

  /// Makes statements on this connection stop with an interrupt error
  /// (`SQLiteError.isInterrupt`) once `cancellation` is cancelled, checked every 1000
  /// virtual-machine instructions (`sqlite3_progress_handler`), so a long load or query
  /// stops within milliseconds of a signal. A statement interrupted inside a transaction
  /// rolls the whole transaction back; short statements such as `COMMIT` and `ROLLBACK`
  /// never reach the check.
  public func stopWhen(_ cancellation: Cancellation) {
    self.cancellation = cancellation
    sqlite3_progress_handler(
      handle, 1000,
      { context in
        guard let context else { return 0 }  // always set: the handler's argument below
        return Unmanaged<Cancellation>.fromOpaque(context).takeUnretainedValue().isCancelled ? 1 : 0
      }, Unmanaged.passUnretained(cancellation).toOpaque())
  }

  /// Runs `body` with statements that begin, commit or roll back a transaction (`BEGIN`,
  /// `COMMIT`, `END`, `ROLLBACK`) refused when prepared, with `SQLiteError.isRefusedTransactionControl`:
  /// for SQL that must stay inside the caller's transaction. Savepoints stay allowed.
  /// Statements that would change dray's own tables are refused too, as
  /// `protectingOwnTables` does.
  /// Uses `sqlite3_set_authorizer` (https://sqlite.org/c3ref/set_authorizer.html).
  public func refusingTransactionControl<T>(_ body: () throws -> T) rethrows -> T {
    try authorizing(refuseTransactions: true, body)
  }

  /// Runs `body` with statements that would create, alter, drop or write a table, index,
  /// view or trigger of dray's own (a name starting with `_dray_`, in any case: the journal,
  /// the bookkeeping and staging tables) refused when prepared, with
  /// `SQLiteError.refusedOwnTable` naming it. Reading those tables stays allowed. Setting
  /// `PRAGMA writable_schema` is refused too, with `refusedOwnTable` = `sqlite_schema`.
  /// Uses `sqlite3_set_authorizer` (https://sqlite.org/c3ref/set_authorizer.html; the action
  /// codes and their arguments: https://sqlite.org/c3ref/c_alter_table.html).
  public func protectingOwnTables<T>(_ body: () throws -> T) rethrows -> T {
    try authorizing(refuseTransactions: false, body)
  }

  /// Compiles, without running, a write to each table and view that has triggers (`INSERT`,
  /// `UPDATE` of every column, `DELETE`), so that the authorizer in force sees what each
  /// trigger's body would do: SQLite compiles a trigger's body only into a statement that
  /// fires it, so `CREATE TRIGGER` alone shows the authorizer nothing of it. Call inside
  /// `protectingOwnTables` or `refusingTransactionControl`.
  /// - Throws: `SQLiteError` with `refusedOwnTable` and `refusedInTrigger` when a body
  ///   would change one of dray's tables; other errors of those statements (a view without
  ///   an `INSTEAD OF` trigger for that write) are not the question and are ignored.
  public func checkTriggers() throws(SQLiteError) {
    let tables = try rows(
      "SELECT DISTINCT tbl_name FROM sqlite_schema WHERE type = 'trigger' UNION SELECT DISTINCT tbl_name FROM sqlite_temp_schema WHERE type = 'trigger'"
    ).map { row throws(SQLiteError) in try row["tbl_name"].description }
    for table in tables {
      let name = Database.quote(table)
      let columns = try rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).map { row throws(SQLiteError) in
        Database.quote(try row["name"].description)
      }
      var writes = ["INSERT INTO \(name) DEFAULT VALUES", "DELETE FROM \(name)"]
      if !columns.isEmpty { writes.append("UPDATE \(name) SET " + columns.map { "\($0) = \($0)" }.joined(separator: ", ")) }
      for sql in writes {
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        sqlite3_finalize(raw)
        if rc != SQLITE_OK && refusedTable != nil { throw error(rc, sql: sql) }
      }
    }
  }

  /// Set by the authorizer when it refuses a statement for the dray table it names.
  private var refusedTable: String?
  /// The trigger whose body held the refused statement, when one did.
  private var refusedTrigger: String?
  private var refuseTransactions = false

  private func authorizing<T>(refuseTransactions: Bool, _ body: () throws -> T) rethrows -> T {
    self.refuseTransactions = refuseTransactions
    refusedTable = nil
    refusedTrigger = nil
    sqlite3_set_authorizer(
      handle,
      { context, action, first, second, _, trigger in
        guard let context else { return SQLITE_DENY }  // always set: the authorizer's argument below
        let database = Unmanaged<Database>.fromOpaque(context).takeUnretainedValue()
        if action == SQLITE_TRANSACTION { return database.refuseTransactions ? SQLITE_DENY : SQLITE_OK }
        // `PRAGMA writable_schema = ON` would let `sqlite_schema` be edited directly, dray's
        // own tables' definitions included (https://sqlite.org/pragma.html#pragma_writable_schema).
        if action == SQLITE_PRAGMA, let first, strcasecmp(first, "writable_schema") == 0, second != nil {
          database.refusedTable = Database.catalog
          return SQLITE_DENY
        }
        // The table guard's triggers (dray's own: no `_dray_` trigger can be created here)
        // mark their table changed, and may be dropped, with the table or alone: the guard
        // then sees the table as changed (`TableGuard`).
        if let trigger, strncmp(trigger, TableGuard.triggerPrefix, TableGuard.triggerPrefix.utf8.count) == 0 { return SQLITE_OK }
        if action == SQLITE_DROP_TRIGGER, let first, strncmp(first, TableGuard.triggerPrefix, TableGuard.triggerPrefix.utf8.count) == 0 {
          return SQLITE_OK
        }
        let name: UnsafePointer<CChar>?
        switch action {
        case SQLITE_CREATE_TABLE, SQLITE_CREATE_TEMP_TABLE, SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_INSERT,
          SQLITE_UPDATE, SQLITE_DELETE, SQLITE_CREATE_VIEW, SQLITE_CREATE_TEMP_VIEW, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW,
          SQLITE_CREATE_VTABLE, SQLITE_DROP_VTABLE:
          name = first
        case SQLITE_CREATE_INDEX, SQLITE_CREATE_TEMP_INDEX, SQLITE_DROP_INDEX, SQLITE_DROP_TEMP_INDEX, SQLITE_CREATE_TRIGGER,
          SQLITE_CREATE_TEMP_TRIGGER, SQLITE_DROP_TRIGGER, SQLITE_DROP_TEMP_TRIGGER, SQLITE_ALTER_TABLE:
          // The table the index or trigger belongs to; for ALTER TABLE the first argument is
          // the schema, the second the table.
          if let first, strncasecmp(first, "_dray_", 6) == 0 {
            database.refusedTable = String(cString: first)
            database.refusedTrigger = trigger.map { String(cString: $0) }
            return SQLITE_DENY
          }
          name = second
        default: name = nil
        }
        guard let name, strncasecmp(name, "_dray_", 6) == 0 else { return SQLITE_OK }
        database.refusedTable = String(cString: name)
        database.refusedTrigger = trigger.map { String(cString: $0) }
        return SQLITE_DENY
      },
      Unmanaged.passUnretained(self).toOpaque())
    defer {
      sqlite3_set_authorizer(handle, nil, nil)
      refusedTable = nil
    }
    return try body()
  }

  /// Whether a table (or view) named `name` exists in the main schema.
  public func tableExists(_ name: String) throws(SQLiteError) -> Bool {
    let statement = try cached("SELECT 1 FROM sqlite_schema WHERE type IN ('table','view') AND name = ?")
    try statement.bind([.text(name)])
    // Left on its row, the statement would keep reading the schema: a `DROP TABLE` on this
    // connection would then fail with SQLITE_LOCKED.
    defer { statement.rewind() }
    return try statement.step()
  }

  func error(_ rc: Int32, sql: String?) -> SQLiteError {
    var error = SQLiteError(
      code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    if error.primaryCode == SQLITE_AUTH, let refusedTable {
      error.refusedOwnTable = refusedTable
      error.refusedInTrigger = refusedTrigger
      error.message =
        "the statement would change dray's own table \(refusedTable) (names starting with _dray_ hold the run journal, checkpoints and bookkeeping); read those tables, but create and write only tables of your own, named without that prefix"
    }
    return error
  }

  /// SQLite's catalog, the table of every schema object's definition
  /// (https://sqlite.org/schematab.html).
  static let catalog = "sqlite_schema"

  /// `name` quoted as an SQL identifier, embedded quotes doubled.
  public static func quote(_ name: String) -> String {
    "\"" + name.replacing("\"", with: "\"\"") + "\""
  }
}

// Connections and statements have one owner at a time (`Database`, "Not thread-safe").
@available(*, unavailable)
extension Database: Sendable {}
