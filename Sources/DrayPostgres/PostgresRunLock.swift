internal import DrayModel

/// The run lock of a job in a PostgreSQL database, with a fencing generation.
///
/// **The lock** is a session-level advisory lock (PostgreSQL 15 documentation, §13.3.5
/// "Advisory Locks"; functions in §9.27.10) on a 64-bit key derived from the schema and
/// the job's name (`key(job:schema:)`). The server holds it for the connection that took
/// it and releases it when that session ends for any reason: `pg_advisory_unlock`, the
/// runner closing the connection, or the runner dying (`kill -9`) and the server noticing
/// the closed socket. A second runner of the same job, on any machine, fails to take it at
/// once (`pg_try_advisory_lock` does not wait); other jobs use other keys.
///
/// **The fence.** A runner can lose its session without knowing (paused by SIGSTOP, a
/// network partition, `pg_terminate_backend`) while another runner takes the lock. Each
/// taking of the lock therefore increments the job's generation in `_dray_locks(job text
/// primary key, generation bigint)` in the job's schema, and every commit checks, in its
/// own transaction, that the generation is still its own (`checkFence(on:)`). The check
/// reads the row `FOR SHARE`, so it waits for a takeover's increment that is in progress
/// and then sees it.
///
/// **Poolers.** A connection pooler in transaction mode (PgBouncer's `pool_mode =
/// transaction`) gives each transaction whichever server connection is free, so a session
/// lock stays on a connection the runner no longer uses. After taking the lock, a second
/// statement checks that the same server process (`pg_backend_pid()`) answers and that
/// `pg_locks` shows the lock held by it; when not, the lock is released and
/// `PostgresRunLockError.transactionPooler` thrown. What works: a direct connection, or a
/// pooler in session mode (`pool_mode = session`).
public struct PostgresRunLock: Sendable, Hashable {
  public let job: String
  /// The schema of the job's tables and of `_dray_locks`.
  public let schema: String
  /// The advisory lock's key.
  public let key: Int64
  /// The job's generation while this lock is held: 1 for the first run ever, then one
  /// more for each taking of the lock.
  public let generation: Int64

  /// The advisory-lock key of a job: the first 8 bytes, big-endian, of the SHA-256 of
  /// `dray.run-lock`, the schema and the job's name, each followed by a NUL byte, read as
  /// a signed 64-bit integer. The same job in two schemas of one database are two jobs.
  public static func key(job: String, schema: String) -> Int64 {
    let digest = SHA256.digest(Array("dray.run-lock\0\(schema)\0\(job)\0".utf8))
    return Int64(bitPattern: digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
  }

  /// Where setting up `_dray_locks` is serialised, so that two first runs of different
  /// jobs do not both create the table.
  static func setupKey(schema: String) -> Int64 { key(job: "", schema: schema) }

  /// Takes the lock of `job` on `connection`, or answers nil at once when another session
  /// holds it, and increments the job's generation.
  ///
  /// - Throws: `PostgresRunLockError.transactionPooler` when the connection goes through a
  ///   pooler in transaction mode (nothing is left locked); `PostgresError` otherwise
  ///   (e.g. `42501` when the role may not create `_dray_locks` in the schema).
  public static func acquire(job: String, schema: String, on connection: PostgresConnection) throws -> PostgresRunLock? {
    let key = key(job: job, schema: schema)
    let taken = try connection.execute("SELECT pg_try_advisory_lock($1) AS taken, pg_backend_pid() AS pid", [.integer(key)]).named
    guard try taken.first?["taken"].bool == true, let pid = try taken.first?["pid"].integer else { return nil }
    let held = try connection.execute("SELECT pg_backend_pid() AS pid, \(heldByThisSession) AS held", [.integer(key)]).named
    guard try held.first?["pid"].integer == pid, try held.first?["held"].bool == true else {
      _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [.integer(key)])
      throw PostgresRunLockError.transactionPooler(url: connection.url.redacted)
    }
    do {
      let table = "\(PostgresIdentifier.sql(schema))._dray_locks"
      let generation = try connection.transaction {
        try connection.execute("SELECT pg_advisory_xact_lock($1)", [.integer(setupKey(schema: schema))])
        try connection.execute("CREATE TABLE IF NOT EXISTS \(table) (job text PRIMARY KEY, generation bigint NOT NULL)")
        return try connection.execute(
          """
          INSERT INTO \(table) (job, generation) VALUES ($1, 1)
          ON CONFLICT (job) DO UPDATE SET generation = _dray_locks.generation + 1 RETURNING generation
          """, [.text(job)]
        ).rows.first?.first?.integer ?? 0
      }
      return PostgresRunLock(job: job, schema: schema, key: key, generation: generation)
    } catch {
      _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [.integer(key)])
      throw error
    }
  }

  /// What the server knows of the session holding the job's lock, for a message when that
  /// session has recorded no run yet: "server process 4242, client 10.0.0.5, connected
  /// 2026-12-01T16:08:58Z" (`pg_locks` and `pg_stat_activity`; the client and the time are
  /// left out where the server hides them from this role). Nil when no session holds it.
  /// Advisory locks belong to a database (PostgreSQL 15 documentation, §54.12 `pg_locks`:
  /// `database` is the OID of the database the lock's object is in), and `pg_locks` shows
  /// every database's: only this database's holder is the job's.
  ///
  /// - Throws: `PostgresError`; `MissingColumn` when the query's columns and their reading
  ///   disagree (a defect).
  public static func holder(job: String, schema: String, on connection: PostgresConnection) throws -> String? {
    let row = try connection.execute(
      """
      SELECT l.pid, host(a.client_addr) AS client, to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS since
      FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = $1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      LIMIT 1
      """, [.integer(key(job: job, schema: schema))]
    ).named.first
    guard let row, let pid = try row["pid"].integer else { return nil }
    var parts = ["server process \(pid)"]
    if let client = try row["client"].text { parts.append("client \(client)") }
    if let since = try row["since"].text { parts.append("connected \(since)") }
    return parts.joined(separator: ", ")
  }

  /// SQL true when this session holds the session-level advisory lock of key `$1`.
  static let heldByThisSession = """
    EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND pid = pg_backend_pid() AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1)
    """

  /// Why this lock is no longer held on `connection`, the connection that took it, or nil
  /// while it is: the session ended (`pg_terminate_backend`, a server restart, a network
  /// failure) or the lock was released.
  public func loss(on connection: PostgresConnection) -> PostgresRunLockError? {
    do {
      let held = try connection.execute("SELECT \(PostgresRunLock.heldByThisSession)", [.integer(key)]).rows.first?.first?.bool
      return held == true ? nil : .lost(job: job, cause: "this run's session no longer holds it")
    } catch {
      // A session that stopped answering was closed by dray: the server releases the lock
      // once that session's process runs again.
      return .lost(job: job, cause: "its session with PostgreSQL \(error.timeout == nil ? "ended" : "stopped answering")")
    }
  }

  /// Fails unless this lock's generation is still the job's: call it inside every commit
  /// transaction, before `COMMIT`.
  ///
  /// - Throws: `PostgresRunLockError.fenced` when another runner took the lock since;
  ///   `PostgresError` when the statement fails (a lost connection among others).
  public func checkFence(on connection: PostgresConnection) throws {
    let current = try connection.execute(
      "SELECT generation FROM \(PostgresIdentifier.sql(schema))._dray_locks WHERE job = $1 FOR SHARE", [.text(job)]
    ).rows.first?.first?.integer
    guard current == generation else {
      throw PostgresRunLockError.fenced(job: job, generation: generation, current: current)
    }
  }

  /// Releases the lock (`pg_advisory_unlock`); the generation stays.
  ///
  /// - Throws: `PostgresError`.
  public func release(on connection: PostgresConnection) throws(PostgresError) {
    try connection.execute("SELECT pg_advisory_unlock($1)", [.integer(key)])
  }
}

/// Why a run lock cannot be relied on.
public enum PostgresRunLockError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The connection goes through a pooler in transaction mode; `url` is redacted.
  case transactionPooler(url: String)
  /// Another runner took the job's lock after this one (`current` is its generation, nil
  /// when the row is gone).
  case fenced(job: String, generation: Int64, current: Int64?)
  /// The session that held the lock ended, or no longer holds it (`cause`), so another
  /// runner may take it at any moment.
  case lost(job: String, cause: String)

  public var description: String {
    switch self {
    case .transactionPooler(let url):
      "PostgreSQL at \(url) does not keep a session for dray (a connection pooler in transaction mode?): the run lock needs one; connect directly or through a pooler in session mode (PgBouncer: pool_mode = session)"
    case .fenced(let job, let generation, let current):
      "this run lost the run lock of job '\(job)' to another runner (lock generation \(current.map(String.init) ?? "gone"), this run held \(generation)): it commits nothing more; the other runner resumes from the last commit"
    case .lost(let job, let cause):
      "this run lost the run lock of job '\(job)' (\(cause)): another runner may take over, so this run commits nothing more; the next run resumes from the last commit"
    }
  }
}
