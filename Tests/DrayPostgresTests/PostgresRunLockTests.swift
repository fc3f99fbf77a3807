import DrayModel
import DrayTestSupport
import Testing

@testable import DrayPostgres

/// `PostgresRunLock`: one runner of a job at a time, released when its session dies, and a
/// fence that stops a runner whose session was replaced.
@Suite struct PostgresRunLockTests {
  let server: PostgresServer
  let database: String

  init() throws {
    server = try PostgresServer.shared()
    database = try server.createDatabase()
  }

  @Test func theKeyIsTheDocumentedDigest() {
    let hex = SHA256.hex(Array("dray.run-lock\0public\0nightly\0".utf8))
    #expect(PostgresRunLock.key(job: "nightly", schema: "public") == Int64(bitPattern: UInt64(hex.prefix(16), radix: 16)!))
    #expect(PostgresRunLock.key(job: "nightly", schema: "public") != PostgresRunLock.key(job: "nightly", schema: "staging"))
  }

  /// Rows of the lock's queries (and the journal's) are read by column name: a name the
  /// statement does not return throws an error naming it, not a NULL.
  @Test func aMisspeltColumnNameThrowsNamingIt() throws {
    let connection = try server.connect(database: database)
    let row = try #require(try connection.execute("SELECT pg_backend_pid() AS pid, true AS held").named.first)
    #expect(try row["pid"].integer == Int64(connection.backendPID))
    let error = #expect(throws: MissingColumn.self) { try row["hedl"] }
    #expect(error?.description == "no column named hedl in the result; its columns are pid, held")
  }

  @Test func heldThenRefusedThenReleasedWhenTheHoldersSessionDies() throws {
    let first = try server.connect(database: database)
    let second = try server.connect(database: database)
    let lock = try #require(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: first))
    #expect(lock.generation == 1)
    #expect(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: second) == nil)
    // Another job runs alongside.
    #expect(try PostgresRunLock.acquire(job: "hourly", schema: "public", on: second)?.generation == 1)

    try server.terminate(backend: first.backendPID)
    // The server ends the session, and its locks with it, as it would for a killed runner.
    var taken: PostgresRunLock?
    for _ in 0..<10_000 where taken == nil { taken = try PostgresRunLock.acquire(job: "nightly", schema: "public", on: second) }
    #expect(taken?.generation == 2)
  }

  @Test func releasingLetsTheNextRunnerIn() throws {
    let first = try server.connect(database: database)
    let second = try server.connect(database: database)
    let lock = try #require(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: first))
    try lock.release(on: first)
    #expect(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: second)?.generation == 2)
  }

  @Test func aRunnerWhoseSessionWasTakenOverCommitsNothing() throws {
    let paused = try server.connect(database: database)
    try paused.execute("CREATE TABLE rows (n bigint)")
    let old = try #require(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: paused))
    try server.terminate(backend: paused.backendPID)

    let taker = try server.connect(database: database)
    var taken: PostgresRunLock?
    for _ in 0..<10_000 where taken == nil { taken = try PostgresRunLock.acquire(job: "nightly", schema: "public", on: taker) }
    let new = try #require(taken)
    try taker.transaction {
      try taker.execute("INSERT INTO rows VALUES (1)")
      try new.checkFence(on: taker)
    }

    // The first runner wakes up, reconnects and tries to commit with its old generation.
    let resumed = try server.connect(database: database)
    #expect(throws: PostgresRunLockError.fenced(job: "nightly", generation: 1, current: 2)) {
      try resumed.transaction {
        try resumed.execute("INSERT INTO rows VALUES (2)")
        try old.checkFence(on: resumed)
      }
    }
    #expect(try taker.execute("SELECT n FROM rows").rows == [[.integer(1)]])
    #expect(
      "\(PostgresRunLockError.fenced(job: "nightly", generation: 1, current: 2))"
        == "this run lost the run lock of job 'nightly' to another runner (lock generation 2, this run held 1): it commits nothing more; the other runner resumes from the last commit"
    )
  }

  @Test func aLockKnowsWhenItsSessionLostIt() throws {
    let holder = try server.connect(database: database)
    let lock = try #require(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: holder))
    #expect(lock.loss(on: holder) == nil)
    try lock.release(on: holder)
    #expect(lock.loss(on: holder) == .lost(job: "nightly", cause: "this run's session no longer holds it"))

    let again = try #require(try PostgresRunLock.acquire(job: "nightly", schema: "public", on: holder))
    try server.terminate(backend: holder.backendPID)
    let lost = try #require(again.loss(on: holder))
    #expect(lost == .lost(job: "nightly", cause: "its session with PostgreSQL ended"))
    #expect(
      "\(lost)"
        == "this run lost the run lock of job 'nightly' (its session with PostgreSQL ended): another runner may take over, so this run commits nothing more; the next run resumes from the last commit"
    )
  }

  @Test func aRoleThatMayNotCreateTheLockTableLeavesNothingLocked() throws {
    try server.admin(database: database).execute("CREATE SCHEMA locked")
    let connection = try server.connect(database: database)
    let error = #expect(throws: PostgresError.self) { try PostgresRunLock.acquire(job: "nightly", schema: "locked", on: connection) }
    #expect(error?.sqlState == "42501")
    let held = try server.admin(database: database).execute(
      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [.integer(Int64(connection.backendPID))])
    #expect(held.rows == [[.integer(0)]])
  }
}
