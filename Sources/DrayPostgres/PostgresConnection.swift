internal import CLibPQ
public import DrayModel
internal import Foundation
internal import Synchronization

/// One libpq connection (`PGconn`) to a PostgreSQL server.
///
/// One owner at a time: libpq connections are not thread-safe (PostgreSQL 15 documentation,
/// §34.19 "Behavior in Threaded Programs"), so this class is not `Sendable`; the one thing
/// another thread may do is cancel the running statement, through `canceller()`. The
/// connection closes in `deinit` (or earlier with `close()`).
///
/// Every libpq return goes through one checked path that turns a failure into a
/// `PostgresError` with the server's SQLSTATE, message, detail, hint, the statement and the
/// URL with its password masked. Values are always bound (`$1`, `$2`, ...), never formatted
/// into SQL; identifiers go through `PostgresIdentifier`.
///
/// ```swift
/// let connection = try PostgresConnection(url: PostgresURL("postgresql://loader@db/warehouse"))
/// let rows = try connection.execute("SELECT count(*) FROM t WHERE region = $1", ["EU"]).rows
/// ```
public final class PostgresConnection {
  /// The `PGconn *`; nil once closed.
  private var handle: OpaquePointer?
  /// The URL connected to (its password, if any, stays in memory only here).
  public let url: PostgresURL
  /// Cancels statements once a run is interrupted (`cancelStatements(when:)`); nil until asked.
  private var watch: CancellationWatch?

  /// Connects and sets the session up for dray (`client_encoding` UTF8; the server's
  /// notices and warnings are dropped, never printed).
  ///
  /// The password is the first of: `password`, the URL's password, then libpq's own sources
  /// (`PGPASSWORD`, the file named by `PGPASSFILE` or `passfile`, `~/.pgpass`; §34.15 "The
  /// Password File"). The attempt gives up after `connect_timeout` of the URL, else
  /// `connectTimeout` seconds (libpq's `connect_timeout`, §34.1.2).
  ///
  /// - Parameters:
  ///   - url: where to connect.
  ///   - password: the manifest's `database.password`, or nil.
  ///   - connectTimeout: seconds, at least 2 (libpq's minimum); used when the URL sets none.
  /// - Throws: `PostgresError`; `userMessage` says what to do for a bad password (28P01), a
  ///   missing database (3D000), an unknown role (28000), an unreachable server (08001).
  public init(url: PostgresURL, password: String? = nil, connectTimeout: Int = 10) throws(PostgresError) {
    self.url = url
    var pairs = url.keywordValues.filter { $0.keyword != "password" || password == nil }
    if let password { pairs.append(("password", password)) }
    if !pairs.contains(where: { $0.keyword == "connect_timeout" }) {
      pairs.append(("connect_timeout", String(max(2, connectTimeout))))
    }
    pairs.append(("client_encoding", "UTF8"))
    pairs.append(("fallback_application_name", "dray"))
    let keywords = pairs.map { strdup($0.keyword) }
    let values = pairs.map { strdup($0.value) }
    defer { (keywords + values).forEach { free($0) } }
    let connection = (keywords + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { k in
      (values + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
        PQconnectdbParams(k.baseAddress, v.baseAddress, 0)
      }
    }
    guard let connection else {
      throw PostgresError(sqlState: "08001", message: "out of memory", url: url.redacted)
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = String(cString: PQerrorMessage(connection))
      PQfinish(connection)
      throw PostgresError.connectionFailure(message, url: url)
    }
    // libpq prints the server's notices and warnings ("relation ... already exists,
    // skipping", "terminating connection due to immediate shutdown command") on standard
    // error by default (§34.13 "Notice Processing"), past dray's console and its masking of
    // secrets: they are dropped. Errors still arrive as results.
    PQsetNoticeProcessor(connection, { _, _ in }, nil)
    handle = connection
  }

  deinit { close() }

  /// The libpq loaded at run time (`PQlibVersion`, §34.11 "Miscellaneous Functions"): from
  /// PostgreSQL 10 on, `major × 10000 + minor`, printed "major.minor" ("15.20").
  public static var libraryVersion: LibraryVersion {
    let packed = Int(PQlibVersion())
    return LibraryVersion(name: "libpq", version: "\(packed / 10000).\(packed % 10000)")
  }

  /// Closes the connection (`PQfinish`); an open transaction is rolled back by the server.
  /// Closing twice does nothing.
  public func close() {
    watch?.stop()
    watch = nil
    if let handle { PQfinish(handle) }
    handle = nil
  }

  /// Cancels what this connection runs once `cancellation` is set, as SQLite's progress
  /// handler interrupts a statement: a long statement of a step's SQL, or a `COPY`, then
  /// fails with `57014` at once instead of running to its end after SIGINT or SIGTERM.
  ///
  /// A `Cancellation` is set from a signal handler, which can do nothing but an atomic store,
  /// so a thread watches it (every 20 ms) and, once it is set, sends a cancel request
  /// (`PQcancel`) every 100 ms until the connection closes: a statement started after the
  /// first request is cancelled too.
  ///
  /// - Throws: `PostgresError` when the connection is closed.
  public func cancelStatements(when cancellation: Cancellation) throws(PostgresError) {
    watch?.stop()
    watch = CancellationWatch(cancellation: cancellation, canceller: try canceller())
  }

  /// The server process serving this connection (`PQbackendPID`), as `pg_stat_activity.pid`
  /// shows it.
  public var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

  /// True while the connection is open and libpq has not seen it break.
  public var isOpen: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

  /// Runs one statement with its values bound as `$1`, `$2`, ... (`PQexecParams`, text
  /// format).
  ///
  /// - Parameters:
  ///   - sql: one SQL statement.
  ///   - parameters: the values of `$1`, `$2`, ...; integers, reals and booleans are sent as
  ///     `bigint`, `double precision` and `boolean`, text with its type left for the server
  ///     to infer.
  /// - Returns: the rows (empty for a statement that returns none) and the count of rows
  ///   changed.
  /// - Throws: `PostgresError` with the statement.
  @discardableResult
  public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
    let handle = try open(sql)
    let texts = parameters.map { $0.parameterText.map { strdup($0) } ?? nil }
    defer { texts.forEach { free($0) } }
    let types = parameters.map(\.parameterType)
    let result = texts.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
      PQexecParams(handle, sql, Int32(parameters.count), types, values.baseAddress, nil, nil, 0)
    }
    let checked = try check(result, sql)
    defer { PQclear(checked) }
    return PostgresResult(checked)
  }

  /// Runs one statement and hands its rows over one at a time as the server sends them
  /// (libpq's single-row mode, PostgreSQL docs §34.6 "Retrieving Query Results
  /// Row-by-Row"), so memory stays bounded whatever the result's size. A row refused by
  /// `row` (it throws) cancels the statement (`PQcancel`); the connection is ready for the
  /// next statement when this returns.
  ///
  /// - Parameters:
  ///   - columns: the result's column names, before its first row (also for no rows).
  ///   - row: each row's values, in column order.
  /// - Throws: `PostgresError` with the statement (rows before the failure were handed
  ///   over), or what `columns` or `row` threw.
  public func stream(_ sql: String, columns: ([String]) throws -> Void, row: ([PostgresValue]) throws -> Void) throws {
    let handle = try open(sql)
    guard PQsendQuery(handle, sql) == 1 else { throw failure(nil, sql) }
    PQsetSingleRowMode(handle)
    var types: [Oid]?
    var stop: (any Error)?
    // Every result is read, even after a failure, until libpq has none left.
    while let result = PQgetResult(handle) {
      defer { PQclear(result) }
      guard stop == nil else { continue }
      let status = PQresultStatus(result)
      guard status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY
      else {
        stop = failure(result, sql)
        continue
      }
      guard status != PGRES_COMMAND_OK && status != PGRES_EMPTY_QUERY else { continue }
      do {
        // The first result names the columns; every one holds at most a row.
        if types == nil {
          types = PostgresResult.types(of: result)
          try columns(PostgresResult.columns(of: result))
        }
        for index in 0..<PQntuples(result) { try row(PostgresResult.values(of: result, row: index, types: types!)) }
      } catch {
        stop = error
        _ = try? canceller().cancel()
      }
    }
    if let stop { throw stop }
  }

  /// Runs `body` in one transaction (`BEGIN` ... `COMMIT`); any error thrown rolls it back
  /// and is rethrown.
  ///
  /// A statement that failed inside `body` aborts the transaction even when `body` caught
  /// the error; `COMMIT` would then roll back without an error (§3.4 "Transactions"), so
  /// that case throws instead of reporting a commit that did not happen.
  ///
  /// - Throws: the error `body` threw, or a `PostgresError` from `BEGIN`, `COMMIT`, or
  ///   `25P02` when the transaction was aborted.
  @discardableResult
  public func transaction<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN")
    let value: T
    do {
      value = try body()
      if let handle, PQtransactionStatus(handle) == PQTRANS_INERROR {
        throw PostgresError(
          sqlState: "25P02", message: "a statement failed inside the transaction, so it was rolled back",
          statement: "COMMIT", url: url.redacted)
      }
      try execute("COMMIT")
    } catch {
      if let handle, PQtransactionStatus(handle) != PQTRANS_IDLE { _ = try? execute("ROLLBACK") }
      throw error
    }
    return value
  }

  /// Starts `COPY ... FROM STDIN` (text format) and returns the writer of its rows.
  ///
  /// - Parameter sql: a `COPY table (columns) FROM STDIN` statement (text format, the
  ///   default).
  /// - Throws: `PostgresError` when the server refuses the statement.
  public func copyIn(_ sql: String) throws(PostgresError) -> PostgresCopyWriter {
    let handle = try open(sql)
    let result = try check(PQexec(handle, sql), sql)
    let status = PQresultStatus(result)
    PQclear(result)
    guard status == PGRES_COPY_IN else {
      throw PostgresError(sqlState: nil, message: "the statement did not start COPY FROM STDIN", statement: sql, url: url.redacted)
    }
    return PostgresCopyWriter(connection: self, statement: sql)
  }

  /// Something another thread may use to cancel the statement running on this connection.
  ///
  /// - Throws: `PostgresError` when the connection is closed.
  public func canceller() throws(PostgresError) -> PostgresCanceller {
    let handle = try open(nil)
    guard let cancel = PQgetCancel(handle) else {
      throw PostgresError(sqlState: "08003", message: "libpq could not make a cancel request", url: url.redacted)
    }
    return PostgresCanceller(cancel)
  }

  // MARK: The checked path

  /// The open handle, or `08003` (connection does not exist).
  func open(_ sql: String?) throws(PostgresError) -> OpaquePointer {
    guard let handle else {
      throw PostgresError(sqlState: "08003", message: "the connection is closed", statement: sql, url: url.redacted)
    }
    return handle
  }

  /// `result` when it succeeded; else clears it and throws the error it carries.
  func check(_ result: OpaquePointer?, _ sql: String?) throws(PostgresError) -> OpaquePointer {
    guard let result else { throw failure(nil, sql) }
    switch PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_COPY_IN, PGRES_EMPTY_QUERY:
      return result
    default:
      let error = failure(result, sql)
      PQclear(result)
      throw error
    }
  }

  /// The error a failed result carries, or the connection's (`PQerrorMessage`) without one.
  func failure(_ result: OpaquePointer?, _ sql: String?) -> PostgresError {
    func field(_ code: Character) -> String? {
      guard let result, let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
      return String(cString: value)
    }
    let lost = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
    let message =
      field("M") ?? PostgresError.oneLine(handle.map { String(cString: PQerrorMessage($0)) } ?? "the connection is closed")
    var detail = field("D")
    if let context = field("W") { detail = detail.map { "\($0); \(context)" } ?? context }
    return PostgresError(
      sqlState: field("C") ?? (lost ? "08006" : nil), message: message.isEmpty ? "no answer from the server" : message,
      detail: detail, hint: field("H"), statement: sql, url: url.redacted)
  }
}

/// Cancels the statement running on a connection from any thread (`PQcancel`, §34.7
/// "Canceling Queries in Progress"), as an interrupt does.
///
/// `@unchecked Sendable`: `PQcancel` is safe to call from any thread and from a signal
/// handler on a `PGcancel` that no other call changes; this class only frees it in `deinit`.
public final class PostgresCanceller: @unchecked Sendable {
  private let handle: OpaquePointer

  init(_ handle: OpaquePointer) { self.handle = handle }

  deinit { PQfreeCancel(handle) }

  /// Asks the server to cancel what the connection runs; the statement then fails with
  /// `57014` (query canceled). Asking when nothing runs does nothing.
  ///
  /// - Returns: libpq's message when the request could not be sent, else nil.
  @discardableResult
  public func cancel() -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    let sent = PQcancel(handle, &buffer, Int32(buffer.count))
    return sent == 1 ? nil : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// The thread behind `PostgresConnection.cancelStatements(when:)`.
private final class CancellationWatch: Sendable {
  private let stopped = Atomic<Bool>(false)

  init(cancellation: Cancellation, canceller: PostgresCanceller) {
    Thread.detachNewThread { [self] in
      while !stopped.load(ordering: .relaxed) {
        if cancellation.isCancelled {
          canceller.cancel()
          usleep(100_000)
        } else {
          usleep(20_000)
        }
      }
    }
  }

  /// Ends the thread within one interval.
  func stop() { stopped.store(true, ordering: .relaxed) }
}
