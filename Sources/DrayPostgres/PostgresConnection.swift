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
  /// How long each wait on the server may last (`database.timeouts`).
  public let timeouts: DatabaseTimeouts
  /// Which limit bounds the wait for an answer.
  private let answers: AnswerLimit
  /// Why dray closed the connection when a wait on the server had to end (`giveUp`): every
  /// later use throws it again, so that the stall, not a closed connection, is what callers
  /// see (a closed connection would look transient and be retried).
  private var givenUp: PostgresError?
  /// How a run's interruption ends this connection's waits (`cancelStatements(when:)`,
  /// `finishStatements(when:)`); nil until asked.
  private var interruption: (cancellation: Cancellation, cancelAtOnce: Bool)?

  /// Which limit bounds the wait for a statement's answer (docs/postgres.md, "Time limits").
  public enum AnswerLimit: Sendable {
    /// `statement` (the server's own `statement_timeout`), then `idle` more for a server
    /// that did not end it: the job's data work, whose statements may run long.
    case statement
    /// `idle`: dray's own bookkeeping (the run journal, the run lock), whose statements are
    /// short.
    case idle
  }

  /// How long a wait goes on once the run is interrupted (SIGINT, SIGTERM): 2 s, then dray
  /// cancels and closes the connection.
  public static let interruptGrace = Duration.seconds(2)

  /// Connects and sets the session up for dray (`client_encoding` UTF8; the server's
  /// notices and warnings are dropped, never printed; `statement_timeout` and
  /// `idle_in_transaction_session_timeout` are `timeouts.statement`: a transaction left idle
  /// longer than a statement may run belongs to a runner that stopped, and the server ends
  /// its session, releasing its locks; not `idle`, since a load may read its answer file
  /// between two statements for longer).
  ///
  /// The password is the first of: `password`, the URL's password, then libpq's own sources
  /// (`PGPASSWORD`, the file named by `PGPASSFILE` or `passfile`, `~/.pgpass`; §34.15 "The
  /// Password File"). The connection parameters of `timeouts` (§34.1.2) apply where the URL
  /// sets none of its own: `connect_timeout` (whole seconds, rounded up), TCP keepalives
  /// (`keepalives_idle` half of `idle`, then `keepalives_count` 3 probes
  /// `keepalives_interval` a sixth of `idle` apart, so a silent peer is given up after about
  /// `idle`). No `tcp_user_timeout`: the kernel would end a connection to a stopped server
  /// as lost (transient, so retried behind that server's locks) before dray's own limit
  /// names the stall. The connection is non-blocking
  /// (`PQsetnonblocking`, §34.10): every wait polls its socket, bounded by `timeouts`.
  ///
  /// Connecting is non-blocking too (`PQconnectStartParams`, `PQconnectPoll`, §34.1): the
  /// socket is polled at least every 100 ms, so the attempt ends within `connect_timeout`
  /// (the URL's, else `timeouts.connect`; whole seconds, at least 2, 0 for no limit, as
  /// libpq reads it, but over the whole attempt, not per address) and at once when
  /// `cancellation` is set.
  ///
  /// - Parameters:
  ///   - url: where to connect.
  ///   - password: the manifest's `database.password`, or nil.
  ///   - timeouts: the limits of every wait on the server.
  ///   - answers: which limit bounds the wait for an answer.
  ///   - cancellation: the run's interruption: it ends the connection attempt at once, and
  ///     later waits as `cancelStatements(when:)` does (until `finishStatements(when:)`
  ///     says otherwise); nil for none.
  /// - Throws: `PostgresError`; `userMessage` says what to do for a bad password (28P01), a
  ///   missing database (3D000), an unknown role (28000), an unreachable server or
  ///   `connect_timeout` passed (08001); `57014` when `cancellation` ended the attempt.
  public init(
    url: PostgresURL, password: String? = nil, timeouts: DatabaseTimeouts = DatabaseTimeouts(),
    answers: AnswerLimit = .statement, cancellation: Cancellation? = nil
  ) throws(PostgresError) {
    self.url = url
    self.timeouts = timeouts
    self.answers = answers
    var pairs = url.keywordValues.filter { $0.keyword != "password" || password == nil }
    if let password { pairs.append(("password", password)) }
    let idle = Int(timeouts.idle.seconds.rounded(.up))
    let defaults = [
      ("connect_timeout", String(max(2, Int(timeouts.connect.seconds.rounded(.up))))), ("keepalives", "1"),
      ("keepalives_idle", String(max(1, (idle + 1) / 2))), ("keepalives_interval", String(max(1, (idle + 5) / 6))),
      ("keepalives_count", "3"),
    ]
    for (keyword, value) in defaults where !pairs.contains(where: { $0.keyword == keyword }) { pairs.append((keyword, value)) }
    pairs.append(("client_encoding", "UTF8"))
    pairs.append(("fallback_application_name", "dray"))
    let keywords = pairs.map { strdup($0.keyword) }
    let values = pairs.map { strdup($0.value) }
    defer { (keywords + values).forEach { free($0) } }
    let started = (keywords + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { k in
      (values + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
        PQconnectStartParams(k.baseAddress, v.baseAddress, 0)
      }
    }
    guard let started else {
      throw PostgresError(sqlState: "08001", message: "out of memory", url: url.redacted)
    }
    let seconds = pairs.last { $0.keyword == "connect_timeout" }.flatMap { Int($0.value) } ?? 0
    let connection = try Self.finishConnecting(
      started, limit: seconds > 0 ? .seconds(max(2, seconds)) : nil, cancellation: cancellation, url: url)
    interruption = cancellation.map { ($0, true) }
    // libpq prints the server's notices and warnings ("relation ... already exists,
    // skipping", "terminating connection due to immediate shutdown command") on standard
    // error by default (§34.13 "Notice Processing"), past dray's console and its masking of
    // secrets: they are dropped. Errors still arrive as results.
    PQsetNoticeProcessor(connection, { _, _ in }, nil)
    handle = connection
    guard PQsetnonblocking(connection, 1) == 0 else { throw failure(nil, nil) }
    try execute(
      "SELECT set_config('statement_timeout', $1, false), set_config('idle_in_transaction_session_timeout', $1, false)",
      [.text(String(Self.milliseconds(timeouts.statement)))])
  }

  /// Drives the connection attempt `connection` (`PQconnectPoll`) to its end, polling its
  /// socket at least every 100 ms, and returns it connected; else finishes it (`PQfinish`)
  /// and throws.
  ///
  /// - Parameters:
  ///   - limit: how long the whole attempt may take (`connect_timeout`); nil for no limit.
  ///   - cancellation: ends the attempt at once when set.
  /// - Throws: `PostgresError`: libpq's failure (`connectionFailure`), `08001` when `limit`
  ///   passed, `57014` when `cancellation` was set.
  private static func finishConnecting(
    _ connection: OpaquePointer, limit: Duration?, cancellation: Cancellation?, url: PostgresURL
  ) throws(PostgresError) -> OpaquePointer {
    func fail(_ error: PostgresError) -> PostgresError {
      PQfinish(connection)
      return error
    }
    let deadline = limit.map { ContinuousClock.now + $0 }
    // Until the first poll, as if `PQconnectPoll` had answered "writing" (§34.1).
    var state = PQstatus(connection) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING
    while state != PGRES_POLLING_OK {
      guard state != PGRES_POLLING_FAILED else {
        throw fail(PostgresError.connectionFailure(String(cString: PQerrorMessage(connection)), url: url))
      }
      if cancellation?.isCancelled == true {
        throw fail(PostgresError(sqlState: "57014", message: "the run was interrupted while connecting", url: url.redacted))
      }
      let now = ContinuousClock.now
      if let deadline, let limit, now >= deadline {
        throw fail(
          PostgresError(
            sqlState: "08001", message: "no connection within \(limit.formatted) (connect_timeout, database.timeouts.connect)",
            url: url.redacted))
      }
      var descriptor = pollfd(
        fd: PQsocket(connection), events: Int16(state == PGRES_POLLING_READING ? POLLIN : POLLOUT), revents: 0)
      let slice = deadline.map { max(0, min(100, milliseconds($0 - now))) } ?? 100
      let ready = Glibc.poll(&descriptor, 1, Int32(slice))
      if ready < 0 && errno != EINTR {
        throw fail(PostgresError(sqlState: "08001", message: String(cString: strerror(errno)), url: url.redacted))
      }
      if ready > 0 { state = PQconnectPoll(connection) }
    }
    return connection
  }

  /// `duration` in whole milliseconds, rounded up (the unit of `statement_timeout`).
  private static func milliseconds(_ duration: Duration) -> Int { Int((duration.seconds * 1000).rounded(.up)) }

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
    if let handle { PQfinish(handle) }
    handle = nil
  }

  /// Cancels what this connection runs once `cancellation` is set, as SQLite's progress
  /// handler interrupts a statement: a long statement of a step's SQL, or a `COPY`, then
  /// fails with `57014` at once instead of running to its end after SIGINT or SIGTERM.
  ///
  /// A `Cancellation` is set from a signal handler, which can do nothing but an atomic
  /// store; every wait on the server looks at it at least every 100 ms and, once it is set,
  /// sends a cancel request (`PQcancel`, on a thread of its own) and waits at most
  /// `interruptGrace` more; a server that has not answered by then is given up: the
  /// connection closes (the server rolls its transaction back) and the wait throws `57014`.
  public func cancelStatements(when cancellation: Cancellation) {
    interruption = (cancellation, true)
  }

  /// Lets what this connection runs finish once `cancellation` is set, within
  /// `interruptGrace` a wait (the run journal records the run's end after SIGTERM); a server
  /// that has not answered by then is given up as by `cancelStatements(when:)`.
  public func finishStatements(when cancellation: Cancellation) {
    interruption = (cancellation, false)
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
    let checked = try run(sql, parameters)
    defer { PQclear(checked) }
    return PostgresResult(checked)
  }

  /// Sends `sql` (`PQsendQueryParams`) and waits for its result as `PQexec` would (the
  /// last one, or the first error), bounded by `timeouts`.
  func run(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> OpaquePointer {
    let handle = try open(sql)
    let started = ContinuousClock.now
    let texts = parameters.map { $0.parameterText.map { strdup($0) } ?? nil }
    defer { texts.forEach { free($0) } }
    let types = parameters.map(\.parameterType)
    let sent = texts.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
      PQsendQueryParams(handle, sql, Int32(parameters.count), types, values.baseAddress, nil, nil, 0)
    }
    guard sent == 1 else { throw failure(nil, sql) }
    try flushOutput(sql)
    var kept: OpaquePointer?
    var failed: OpaquePointer?
    do {
      while let result = try nextResult(sql, since: started) {
        let status = PQresultStatus(result)
        if status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR {
          if failed == nil { failed = result } else { PQclear(result) }
        } else {
          if let kept { PQclear(kept) }
          kept = result
        }
        // COPY takes over the connection: its data follows (`PostgresCopyWriter`).
        if status == PGRES_COPY_IN || status == PGRES_COPY_OUT { break }
      }
    } catch {
      [kept, failed].compactMap { $0 }.forEach { PQclear($0) }
      throw error
    }
    if let failed {
      if let kept { PQclear(kept) }
      return try check(failed, sql)
    }
    return try check(kept, sql)
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
  ///   - portable: timestamps and JSON strings as a user's SQL sees them on SQLite too
  ///     (`PostgresResult.portableText(_:type:)`).
  /// - Throws: `PostgresError` with the statement (rows before the failure were handed
  ///   over), or what `columns` or `row` threw.
  public func stream(
    _ sql: String, portable: Bool = false, columns: ([String]) throws -> Void, row: ([PostgresValue]) throws -> Void
  ) throws {
    let handle = try open(sql)
    let started = ContinuousClock.now
    guard PQsendQuery(handle, sql) == 1 else { throw failure(nil, sql) }
    PQsetSingleRowMode(handle)
    try flushOutput(sql)
    var types: [Oid]?
    var stop: (any Error)?
    // Every result is read, even after a failure, until libpq has none left.
    while let result = try nextResult(sql, since: started) {
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
        let resultTypes: [Oid]
        if let types {
          resultTypes = types
        } else {
          resultTypes = PostgresResult.types(of: result)
          types = resultTypes
          try columns(PostgresResult.columns(of: result))
        }
        for index in 0..<PQntuples(result) {
          try row(PostgresResult.values(of: result, row: index, types: resultTypes, portable: portable))
        }
      } catch {
        stop = error
        // At once, before the rest is read: a request still on its way could cancel the
        // next statement.
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

  // MARK: Waits on the server

  /// One wait on the server: until when, and which limit that is.
  private struct Wait {
    var deadline: ContinuousClock.Instant
    /// What passing `deadline` means, for the error.
    var timeout: (ContinuousClock.Instant) -> PostgresTimeout
    /// True once the wait saw the run interrupted (its deadline is then at most
    /// `interruptGrace` away).
    var interrupted = false
  }

  /// Sends what libpq holds for the server (`PQflush`): a statement, or one chunk of a
  /// `COPY`'s rows (64 KiB), within `timeouts.idle` (§34.10 "Asynchronous Command
  /// Processing": while the socket is not writable, input is read too, so that a server
  /// waiting to send is not deadlocked against us). The limit is per call, not renewed when
  /// the socket turns writable: the kernel's send buffer grows while a stopped server
  /// takes nothing, so a writable socket is no sign that the server reads.
  ///
  /// - Throws: `PostgresError` with a `timeout` when `idle` passes (the connection is then
  ///   closed), `57014` after an interruption, or a broken connection.
  func flushOutput(_ sql: String?) throws(PostgresError) {
    let handle = try open(sql)
    let idle = timeouts.idle
    let pid = backendPID
    var wait = Wait(deadline: .now + idle, timeout: { _ in .sending(idle: idle, backendPID: pid) })
    while true {
      switch PQflush(handle) {
      case 0: return
      case 1:
        let ready = try poll(Int16(POLLOUT | POLLIN), &wait, sql)
        if ready & Int16(POLLIN) != 0 && PQconsumeInput(handle) != 1 { throw failure(nil, sql) }
      default: throw failure(nil, sql)
      }
    }
  }

  /// The next result of the statement sent at `started` (`PQgetResult`), or nil when it has
  /// none left, waiting while the server is busy: at most `timeouts.statement` (the
  /// server's own `statement_timeout`, which a working server ends the statement at) and
  /// `timeouts.idle` more from `started`, or `timeouts.idle` for `AnswerLimit.idle`.
  ///
  /// - Throws: `PostgresError` with a `timeout` when the limit passes (the connection is then
  ///   closed), `57014` after an interruption, or a broken connection.
  func nextResult(_ sql: String?, since started: ContinuousClock.Instant) throws(PostgresError) -> OpaquePointer? {
    let handle = try open(sql)
    let (idle, statement, pid) = (timeouts.idle, timeouts.statement, backendPID)
    var wait =
      switch answers {
      case .statement:
        Wait(
          deadline: started + statement + idle,
          timeout: {
            .answer(
              limits: "database.timeouts.statement \(statement.formatted), then database.timeouts.idle \(idle.formatted)",
              after: $0 - started, backendPID: pid)
          })
      case .idle:
        Wait(
          deadline: started + idle,
          timeout: { .answer(limits: "database.timeouts.idle \(idle.formatted)", after: $0 - started, backendPID: pid) })
      }
    while PQisBusy(handle) == 1 {
      _ = try poll(Int16(POLLIN), &wait, sql)
      guard PQconsumeInput(handle) == 1 else { throw failure(nil, sql) }
    }
    return PQgetResult(handle)
  }

  /// Waits until the socket is ready for `events` and answers the events that came
  /// (`poll`), looking at the run's interruption at least every 100 ms.
  ///
  /// - Throws: `PostgresError` when `wait`'s deadline passes: dray then sends a cancel
  ///   request and closes the connection (the server rolls back what it ran).
  private func poll(_ events: Int16, _ wait: inout Wait, _ sql: String?) throws(PostgresError) -> Int16 {
    let socket = PQsocket(try open(sql))
    guard socket >= 0 else { throw failure(nil, sql) }
    while true {
      if let interruption, interruption.cancellation.isCancelled, !wait.interrupted {
        wait.interrupted = true
        wait.deadline = min(wait.deadline, .now + Self.interruptGrace)
        if interruption.cancelAtOnce { sendCancelRequest() }
      }
      // The socket is looked at once more when the deadline has passed: what arrived in
      // time (the server's own `statement_timeout` error) is still read.
      let now = ContinuousClock.now
      var descriptor = pollfd(fd: socket, events: events, revents: 0)
      let slice = max(0, min(100, Self.milliseconds(wait.deadline - now)))
      let ready = Glibc.poll(&descriptor, 1, Int32(slice))
      if ready > 0 { return descriptor.revents }
      if ready < 0 && errno != EINTR { throw failure(nil, sql) }
      guard now < wait.deadline else { throw giveUp(wait, at: now, sql) }
    }
  }

  /// Ends a wait whose deadline passed: a cancel request, then the connection closed, so
  /// nothing the server still runs for dray can commit; the error says which limit passed.
  private func giveUp(_ wait: Wait, at now: ContinuousClock.Instant, _ sql: String?) -> PostgresError {
    sendCancelRequest()
    close()
    var error: PostgresError
    if wait.interrupted {
      error = PostgresError(
        sqlState: "57014",
        message:
          "the run was interrupted and the server did not end the statement within \(Self.interruptGrace.formatted); dray closed the connection",
        statement: sql, url: url.redacted)
    } else {
      error = PostgresError(sqlState: nil, message: "no answer", statement: sql, url: url.redacted)
      error.timeout = wait.timeout(now)
    }
    givenUp = error
    return error
  }

  /// Asks the server to cancel what this connection runs, on a thread of its own: `PQcancel`
  /// connects to the server and waits for its answer, which a stalled server never sends.
  func sendCancelRequest() {
    guard let canceller = try? canceller() else { return }
    Thread.detachNewThread { canceller.cancel() }
  }

  // MARK: The checked path

  /// The open handle, or `08003` (connection does not exist), or why dray gave the
  /// connection up.
  func open(_ sql: String?) throws(PostgresError) -> OpaquePointer {
    if let givenUp { throw givenUp }
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
    func field(_ code: Unicode.Scalar) -> String? {
      guard let result, let value = PQresultErrorField(result, Int32(code.value)) else { return nil }
      return String(cString: value)
    }
    let lost = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
    let message =
      field("M") ?? PostgresError.oneLine(handle.map { String(cString: PQerrorMessage($0)) } ?? "the connection is closed")
    var detail = field("D")
    if let context = field("W") { detail = detail.map { "\($0); \(context)" } ?? context }
    var error = PostgresError(
      sqlState: field("C") ?? (lost ? "08006" : nil), message: message.isEmpty ? "no answer from the server" : message,
      detail: detail, hint: field("H"), statement: sql, url: url.redacted)
    // The server's own `statement_timeout` (SQLSTATE 57014, "canceling statement due to
    // statement timeout"; a cancel request says "due to user request").
    if error.sqlState == "57014" && message.contains("statement timeout") {
      error.timeout = .statement(limit: timeouts.statement)
    }
    return error
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
