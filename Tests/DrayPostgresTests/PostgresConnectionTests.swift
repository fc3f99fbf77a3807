import DrayModel
import DrayTestSupport
import Foundation
import Synchronization
import Testing

@testable import DrayPostgres

/// `PostgresConnection` against a real PostgreSQL 15 server (`PostgresServer`): bound
/// parameters, transactions, cancel, and the one-line errors of a failed connection.
@Suite struct PostgresConnectionTests {
  let server: PostgresServer
  let database: String

  init() throws {
    server = try PostgresServer.shared()
    database = try server.createDatabase()
  }

  @Test func parametersRoundTripAsValuesNeverAsSQL() throws {
    let connection = try server.connect(database: database)
    let tricky = "it's \"quoted\"; DROP TABLE x; -- \\ \t\n é 😀"
    let result = try connection.execute(
      "SELECT $1::bigint AS i, $2::float8 AS d, $3::boolean AS b, $4::text AS t, $5::text AS n, $6::numeric AS big",
      [.integer(Int64.min), .real(0.1), .bool(true), .text(tricky), .null, .text("123456789012345678901234567890")])
    #expect(result.columns == ["i", "d", "b", "t", "n", "big"])
    #expect(result.rows == [[.integer(Int64.min), .real(0.1), .bool(true), .text(tricky), .null, .text("123456789012345678901234567890")]])
  }

  /// D-pg-rows: `portable` values read as SQLite's would: a `timestamptz` in RFC 3339 with
  /// the session's offset (`Z` for UTC), a `timestamp` joined by `T`, a JSON string as the
  /// string; a BC year, `infinity` and JSON that is no string as the server wrote them.
  @Test func portableValuesAreRFC3339TimestampsAndJSONStrings() throws {
    let connection = try server.connect(database: database)
    func row(_ zone: String) throws -> [PostgresValue] {
      try connection.execute("SET TimeZone = '\(zone)'")
      var rows: [[PostgresValue]] = []
      try connection.stream(
        """
        SELECT '2024-01-01 08:00:00+00'::timestamptz, '2024-01-01 08:00:00.25+00'::timestamptz, 'infinity'::timestamptz,
          '0044-03-15 12:00:00+00 BC'::timestamptz, '2024-02-29 23:59:59.999999'::timestamp, '"a \\"b\\" \\u00e9"'::jsonb,
          '{"a": 1}'::jsonb, '"x"'::json, true
        """, portable: true, columns: { _ in }
      ) { rows.append($0) }
      return try #require(rows.first)
    }
    #expect(
      try row("UTC") == [
        .text("2024-01-01T08:00:00Z"), .text("2024-01-01T08:00:00.25Z"), .text("infinity"), .text("0044-03-15 12:00:00+00 BC"),
        .text("2024-02-29T23:59:59.999999"), .text("a \"b\" é"), .text(#"{"a": 1}"#), .text("x"), .bool(true),
      ])
    let kolkata = try row("Asia/Kolkata")
    #expect(kolkata.prefix(2) == [.text("2024-01-01T13:30:00+05:30"), .text("2024-01-01T13:30:00.25+05:30")])
    #expect(try row("Etc/GMT+3").first == .text("2024-01-01T05:00:00-03:00"))
    // Without `portable`, as the server wrote it.
    var plain: [PostgresValue] = []
    try connection.stream("SELECT '2024-01-01 08:00:00+00'::timestamptz", columns: { _ in }) { plain = $0 }
    #expect(plain == [.text("2024-01-01 05:00:00-03")])
  }

  /// A streamed statement hands its rows over as they come: those before a failure arrive
  /// before its error, a result of no rows still names its columns, and a row refused by
  /// the caller stops the statement with the connection ready for the next.
  @Test func aStreamedResultArrivesRowByRow() throws {
    let connection = try server.connect(database: database)
    var names: [[String]] = []
    var rows: [[PostgresValue]] = []
    let error = #expect(throws: PostgresError.self) {
      try connection.stream("SELECT g, 10 / (3 - g) AS q FROM generate_series(1, 5) g", columns: { names.append($0) }) { rows.append($0) }
    }
    #expect(error?.sqlState == "22012")
    #expect(names == [["g", "q"]])
    #expect(rows == [[.integer(1), .integer(5)], [.integer(2), .integer(10)]])

    names = []
    try connection.stream("SELECT 1 AS a WHERE false", columns: { names.append($0) }) { _ in Issue.record("no row expected") }
    #expect(names == [["a"]])

    struct Enough: Error {}
    var seen = 0
    #expect(throws: Enough.self) {
      try connection.stream("SELECT g FROM generate_series(1, 100000000) g", columns: { _ in }) { _ in
        seen += 1
        if seen == 3 { throw Enough() }
      }
    }
    #expect(seen == 3)
    #expect(try connection.execute("SELECT 42 AS n").rows == [[.integer(42)]])
  }

  @Test func aTransactionCommitsOrRollsBackWhole() throws {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (n bigint)")
    try connection.transaction { try connection.execute("INSERT INTO t VALUES (1)") }
    struct Stop: Error {}
    #expect(throws: Stop.self) {
      try connection.transaction {
        try connection.execute("INSERT INTO t VALUES (2)")
        throw Stop()
      }
    }
    // A failed statement whose error the body swallowed: COMMIT would quietly roll back.
    let error = #expect(throws: PostgresError.self) {
      try connection.transaction {
        try connection.execute("INSERT INTO t VALUES (3)")
        _ = try? connection.execute("INSERT INTO t VALUES ('three')")
      }
    }
    #expect(error?.sqlState == "25P02")
    #expect(try connection.execute("SELECT n FROM t ORDER BY n").rows == [[.integer(1)]])
  }

  @Test func aServerErrorCarriesItsFields() throws {
    let connection = try server.connect(database: database)
    let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT * FROM missing_table WHERE a = $1", [1]) }
    #expect(error?.sqlState == "42P01")
    #expect(error?.statement == "SELECT * FROM missing_table WHERE a = $1")
    #expect(error?.isTransient == false)
    let url = "postgresql://dray:***@127.0.0.1:\(server.port)/\(database)"
    #expect(
      error?.description == """
        PostgreSQL at \(url): relation "missing_table" does not exist (SQLSTATE 42P01)
          statement: SELECT * FROM missing_table WHERE a = $1
        """)
    // A table dray made with capitals, named without quotes: PostgreSQL looked for its
    // lower-case name.
    try connection.execute(#"CREATE TABLE "FRUITS__output_table" (a bigint)"#)
    let folded = #expect(throws: PostgresError.self) { try connection.execute("SELECT count(*) FROM FRUITS__output_table") }
    #expect(
      folded?.userMessage
        == #"PostgreSQL at \#(url): relation "fruits__output_table" does not exist (SQLSTATE 42P01); PostgreSQL folds a name written without quotes to lower case: write "FRUITS__output_table" in double quotes"#
    )
  }

  @Test func aBadPasswordIsOneLineWithWhatToDo() throws {
    var url = try server.url(database: database)
    url.password = "wrong-password"
    let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    #expect(error?.sqlState == "28P01")
    #expect(error?.isTransient == false)
    #expect(
      error?.userMessage
        == "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database) refused the password for user \"dray\": check database.password (or PGPASSWORD, PGPASSFILE, ~/.pgpass)"
    )
    #expect(error.map { "\($0)".contains("wrong-password") } == false)
  }

  @Test func noPasswordAtAllIsSaidAsSuchNotAsARefusedOne() throws {
    var url = try server.url(database: database)
    url.password = nil
    let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    #expect(error?.isTransient == false)
    #expect(
      error?.userMessage
        == "PostgreSQL at postgresql://dray@127.0.0.1:\(server.port)/\(database) asks for a password and none was given: set database.password (or PGPASSWORD, PGPASSFILE, ~/.pgpass)"
    )
  }

  @Test func aMissingDatabaseSaysToCreateIt() throws {
    let error = #expect(throws: PostgresError.self) { try server.connect(database: "no_such_db") }
    #expect(error?.sqlState == "3D000")
    #expect(
      error?.userMessage
        == "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/no_such_db: database \"no_such_db\" does not exist; create it (createdb) or name an existing database in database.url"
    )
  }

  @Test func anUnreachablePortIsTransient() throws {
    let port = try PostgresServer.freePort()
    let url = try PostgresURL("postgresql://dray:\(PostgresServer.password)@127.0.0.1:\(port)/db")
    let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    #expect(error?.sqlState == "08001")
    #expect(error?.isTransient == true)
    #expect(
      error?.userMessage
        == "cannot reach PostgreSQL at postgresql://dray:***@127.0.0.1:\(port)/db: connection to server at \"127.0.0.1\", port \(port) failed: Connection refused; check the host and port in database.url and that the server runs and accepts TCP connections"
    )
    #expect(error.map { "\($0)".contains(PostgresServer.password) } == false)
  }

  @Test func tlsTheServerDoesNotOfferIsPermanentAndNamesSSLMode() throws {
    let url = try PostgresURL("postgresql://dray:\(PostgresServer.password)@127.0.0.1:\(server.port)/\(database)?sslmode=require")
    let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    #expect(error?.sqlState == "08004")
    #expect(error?.isTransient == false)
    #expect(
      error?.userMessage
        == "cannot connect securely to PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database)?sslmode=require: connection to server at \"127.0.0.1\", port \(server.port) failed: server does not support SSL, but SSL was required; check sslmode (and sslrootcert) in database.url against the server's TLS setup"
    )
  }

  @Test func noPermissionOnTheSchemaSaysWhatToGrant() throws {
    try server.admin(database: database).execute("CREATE SCHEMA locked")
    let connection = try server.connect(database: database)
    let error = #expect(throws: PostgresError.self) { try connection.execute("CREATE TABLE locked.t (n bigint)") }
    #expect(error?.sqlState == "42501")
    #expect(
      error?.userMessage
        == "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database): permission denied for schema locked; grant the role the privilege (for a schema: GRANT USAGE, CREATE ON SCHEMA ... TO ...) or choose another database.schema"
    )
  }

  @Test func thePasswordComesFromAnExplicitValueOrAPasswordFile() throws {
    let url = try server.url(database: database, withPassword: false)
    let explicit = try PostgresConnection(url: url, password: PostgresServer.password)
    #expect(try explicit.execute("SELECT current_user").rows == [[.text("dray")]])

    let folder = TemporaryDirectory()
    let passfile = try folder.write("pgpass", "127.0.0.1:\(server.port):*:dray:\(PostgresServer.password)\n")
    chmod(passfile, 0o600)
    var fromFile = url
    fromFile.parameters.append(.init(name: "passfile", value: passfile))
    let connection = try PostgresConnection(url: fromFile)
    #expect(try connection.execute("SELECT current_user").rows == [[.text("dray")]])
  }

  /// The watcher is a thread of its own, not a task: with every thread of Swift's
  /// cooperative pool held by tests that wait synchronously (this one included, in
  /// `execute`), a detached task did not start until `pg_sleep` had run its 600 s.
  @Test func cancelFromAnotherThreadEndsTheStatement() throws {
    let connection = try server.connect(database: database)
    let canceller = try connection.canceller()
    let pid = connection.backendPID
    let cancelled = Mutex<Result<String?, any Error>?>(nil)
    let watcher = Thread { [server, database] in
      // Cancel once the server shows the statement running.
      cancelled.withLock {
        $0 = Result {
          let admin = try server.admin(database: database)
          while try admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", [.integer(Int64(pid))])
            .rows.isEmpty
          {}
          return canceller.cancel()
        }
      }
    }
    watcher.start()
    let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT pg_sleep(600)") }
    #expect(try cancelled.withLock { try $0?.get() } == .some(nil))
    #expect(error?.sqlState == "57014")
    #expect(try connection.execute("SELECT 1").rows == [[.integer(1)]])
  }

  @Test func aTerminatedSessionIsATransientError() throws {
    let connection = try server.connect(database: database)
    try server.terminate(backend: connection.backendPID)
    let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
    #expect(error?.isTransient == true)
    #expect(error?.sqlState == "57P01" || error?.sqlState == "08006")
  }

  // MARK: Time limits (docs/postgres.md, "Time limits")

  /// A connection to `database` with `timeouts`, its answers bounded by `answers`.
  func connect(_ timeouts: DatabaseTimeouts, answers: PostgresConnection.AnswerLimit = .statement) throws -> PostgresConnection {
    try PostgresConnection(url: server.url(database: database), timeouts: timeouts, answers: answers)
  }

  /// The session's settings come from `database.timeouts.statement`: `statement_timeout`
  /// and `idle_in_transaction_session_timeout`, in milliseconds.
  @Test func theSessionTakesItsServerSideLimitsFromTheTimeouts() throws {
    let connection = try connect(DatabaseTimeouts(idle: .seconds(5), statement: .milliseconds(7_200_500)))
    #expect(
      try connection.textRows("SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')")
        == [["7200500ms", "7200500ms"]])
  }

  /// A healthy server ends a statement at `statement` itself (SQLSTATE 57014, "statement
  /// timeout"): the error says which limit and how to raise it, is not transient, and the
  /// connection stays usable.
  @Test func theServerEndsAStatementAtTheStatementLimit() throws {
    let connection = try connect(DatabaseTimeouts(idle: .seconds(30), statement: .seconds(1)))
    let error = try #require(#expect(throws: PostgresError.self) { try connection.execute("SELECT pg_sleep(30)") })
    #expect(error.timeout == .statement(limit: .seconds(1)))
    #expect(error.isTransient == false)
    #expect(
      error.userMessage
        == "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database) ended the statement after 1s (database.timeouts.statement, its statement_timeout); nothing of it is kept: raise database.timeouts.statement if the statement is meant to run longer"
    )
    #expect(try connection.execute("SELECT 1").rows == [[.integer(1)]])
  }

  /// With `AnswerLimit.idle` (the run journal, the run lock), a statement waiting on a
  /// lock another session holds is given up after `idle`: a cancel request, the connection
  /// closed, the error naming the limit and the server process, and every later use of the
  /// connection throwing that same error rather than a closed connection's (which would be
  /// retried).
  @Test func anAnswerNotGivenWithinTheLimitClosesTheConnection() throws {
    let holder = try server.connect(database: database)
    try holder.execute("BEGIN")
    try holder.execute("SELECT pg_advisory_xact_lock(42)")
    let connection = try connect(DatabaseTimeouts(idle: .seconds(1)), answers: .idle)
    let pid = connection.backendPID
    let error = try #require(#expect(throws: PostgresError.self) { try connection.execute("SELECT pg_advisory_xact_lock(42)") })
    guard case .answer(let limits, let after, let backend) = error.timeout else {
      Issue.record("\(error)")
      return
    }
    #expect(limits == "database.timeouts.idle 1s")
    #expect(after >= .seconds(1))
    #expect(backend == pid)
    #expect(error.isTransient == false)
    #expect(error.statement == "SELECT pg_advisory_xact_lock(42)")
    #expect(connection.isOpen == false)
    #expect(#expect(throws: PostgresError.self) { try connection.execute("SELECT 1") } == error)
    try holder.execute("ROLLBACK")
  }

  /// Once the run is interrupted, a statement the server does not end within
  /// `interruptGrace` of the cancel request is given up: the connection closes (57014).
  /// Here the statement waits for a lock, and the cancel request does end it.
  @Test func anInterruptionCancelsTheStatementAtOnce() throws {
    let holder = try server.connect(database: database)
    try holder.execute("BEGIN")
    try holder.execute("SELECT pg_advisory_xact_lock(43)")
    let connection = try connect(DatabaseTimeouts(idle: .seconds(600), statement: .seconds(600)))
    let cancellation = Cancellation()
    connection.cancelStatements(when: cancellation)
    cancellation.cancel(signal: SIGTERM)
    let error = try #require(#expect(throws: PostgresError.self) { try connection.execute("SELECT pg_advisory_xact_lock(43)") })
    #expect(error.sqlState == "57014")
    #expect(error.timeout == nil)
    try holder.execute("ROLLBACK")
  }

  /// The journal's rule: once the run is interrupted a statement may still finish (the
  /// run's end is recorded), within `interruptGrace`; one that does not is cancelled and
  /// its connection closed.
  @Test func afterAnInterruptionTheJournalsStatementsFinishWithinTheGrace() throws {
    let connection = try connect(DatabaseTimeouts(idle: .seconds(600)), answers: .idle)
    let cancellation = Cancellation()
    connection.finishStatements(when: cancellation)
    cancellation.cancel(signal: SIGTERM)
    #expect(try connection.execute("SELECT pg_sleep(0.2)").rows.count == 1)
    let error = try #require(#expect(throws: PostgresError.self) { try connection.execute("SELECT pg_sleep(30)") })
    #expect(error.sqlState == "57014")
    #expect(
      error.message == "the run was interrupted and the server did not end the statement within 2s; dray closed the connection")
    #expect(connection.isOpen == false)
  }
}
