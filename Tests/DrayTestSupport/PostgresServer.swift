public import DrayModel
public import DrayPostgres
import Foundation
import Synchronization

/// A PostgreSQL 15 server of its own for tests: a data folder made by `initdb` in a fresh
/// temporary folder, listening on 127.0.0.1 on a free port and on a socket in that folder,
/// stopped and deleted when released or when the test process exits.
///
/// `initdb` and the server refuse to run as root, so they run as the `postgres` user
/// (`runuser -u postgres --`) when the tests run as root. Local (socket) connections are
/// trusted and used for administration as the superuser `postgres`; TCP connections need
/// the password of the role `dray` (`scram-sha-256`), as a real deployment does.
///
/// One server per test process (`shared()`), with a fresh database per test
/// (`createDatabase()`), keeps the suites fast; a test that restarts or stops the server
/// starts its own (`init()`).
public final class PostgresServer: @unchecked Sendable {
  // @unchecked: every stored property is immutable; the server is a separate process.
  /// PostgreSQL 15's programs (Debian's `postgresql-15`).
  public static let binaries = "/usr/lib/postgresql/15/bin"
  /// The login role tests connect as, and its password.
  public static let user = "dray"
  public static let password = "dray-test-password"

  /// The temporary folder: `data/` (the cluster), `socket/`, `server.log`.
  public let folder: String
  public let port: Int
  private var data: String { folder + "/data" }
  /// The unix-socket folder, for `?host=`.
  public var socketFolder: String { folder + "/socket" }

  private static let sharedServer = Result { try PostgresServer() }

  /// The server shared by every test of this process, started on first use.
  public static func shared() throws -> PostgresServer { try sharedServer.get() }

  /// Starts a new server.
  ///
  /// - Throws: `TestSupportError` with the server's log when it does not start.
  public init() throws {
    Self.orphansStopped.withLock { stopped in
      guard !stopped else { return }
      stopped = true
      Self.stopOrphans()
    }
    let folder = FileManager.default.temporaryDirectory.path + "/\(Self.folderPrefix)\(UUID().uuidString.prefix(8))"
    self.folder = folder
    try FileManager.default.createDirectory(atPath: folder + "/socket", withIntermediateDirectories: true)
    try "\(getpid())".write(toFile: folder + "/" + Self.ownerFile, atomically: true, encoding: .utf8)
    Self.cleanup.withLock { $0.append(folder) }
    if getuid() == 0 {
      try Self.shell(["chown", "-R", "postgres:postgres", folder])
    }
    try Self.asPostgres([
      Self.binaries + "/initdb", "-D", folder + "/data", "-U", "postgres", "--auth-local=trust",
      "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
    ])
    var lastError: (any Error)?
    var started: Int?
    // A free port can be taken by someone else between asking and listening: try again.
    for _ in 0..<3 where started == nil {
      let candidate = try Self.freePort()
      do {
        try Self.asPostgres([
          Self.binaries + "/pg_ctl", "-D", folder + "/data", "-l", folder + "/server.log", "-w", "-t", "60",
          "-o", Self.options(port: candidate, folder: folder),
          "start",
        ])
        started = candidate
      } catch {
        lastError = error
      }
    }
    guard let started else {
      let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
      throw TestSupportError("PostgreSQL did not start: \(lastError.map { "\($0)" } ?? "")\n\(log)")
    }
    port = started
    let admin = try self.admin()
    try admin.execute("CREATE ROLE \(Self.user) LOGIN PASSWORD '\(Self.password)'")
  }

  deinit { stop() }

  /// Stops the server at once (`pg_ctl stop -m immediate`) and deletes its folder.
  public func stop() {
    Self.stop(folder)
    Self.cleanup.withLock { $0.removeAll { $0 == folder } }
  }

  /// A superuser connection over the socket.
  public func admin(database: String = "postgres") throws -> PostgresConnection {
    try PostgresConnection(url: PostgresURL("postgresql://postgres@/\(database)?host=\(socketFolder)&port=\(port)"))
  }

  /// The URL of `database` over TCP as the `dray` role, with the password in it unless
  /// `withPassword` is false.
  public func url(database: String, withPassword: Bool = true) throws -> PostgresURL {
    try PostgresURL(urlText(database: database, withPassword: withPassword))
  }

  /// `url(database:withPassword:)` as the text a manifest's `database.url` holds.
  public func urlText(database: String, withPassword: Bool = true) -> String {
    "postgresql://\(Self.user)\(withPassword ? ":\(Self.password)" : "")@127.0.0.1:\(port)/\(database)"
  }

  /// A connection to `database` as the `dray` role.
  public func connect(database: String) throws -> PostgresConnection {
    try PostgresConnection(url: url(database: database))
  }

  /// Creates a fresh database owned by `dray` and returns its name (`prefix_` and 12 random
  /// hex digits).
  public func createDatabase(_ prefix: String = "test") throws -> String {
    let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
    try admin().execute("CREATE DATABASE \(PostgresIdentifier.quoted(name)) OWNER \(Self.user)")
    return name
  }

  /// Restarts the server the way a crash does (`pg_ctl restart -m immediate`): every
  /// session ends without a goodbye and uncommitted work is rolled back by recovery.
  public func restart() throws {
    try Self.asPostgres([
      Self.binaries + "/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "-m", "immediate", "restart",
    ])
  }

  /// Stops the server the way a crash does (`pg_ctl stop -m immediate`), keeping its data
  /// folder for `start()`: every session ends without a goodbye.
  public func stopServer() throws {
    try Self.asPostgres([Self.binaries + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
  }

  /// Starts the server stopped by `stopServer()` again, on its port; recovery rolls back
  /// what was not committed.
  public func start() throws {
    try Self.asPostgres([
      Self.binaries + "/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "-o",
      Self.options(port: port, folder: folder), "start",
    ])
  }

  /// The server's options: the port, the socket folder, loopback only.
  private static func options(port: Int, folder: String) -> String {
    "-p \(port) -k \(folder)/socket -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
  }

  /// Ends the session of server process `pid` (`pg_terminate_backend`), waiting up to
  /// `waitingSeconds` for it to be gone (0: not at all).
  public func terminate(backend pid: Int32, waitingSeconds: Int = 0) throws {
    let ended = try admin().execute(
      "SELECT pg_terminate_backend($1::integer, $2::bigint)", [.integer(Int64(pid)), .integer(Int64(waitingSeconds * 1000))])
    guard ended.rows.first?.first?.bool == true else { throw TestSupportError("no server process \(pid)") }
  }

  /// The server processes of `database`'s client sessions named `application` (dray's
  /// `fallback_application_name`), only those running a statement matching `pattern` (SQL
  /// `LIKE`; a client sending a `COPY`'s rows keeps it running) when given, read through
  /// `admin` (a superuser connection kept open by the caller, so that polling does not start
  /// a session each time).
  public static func sessions(
    of database: String, application: String = "dray", runningStatementLike pattern: String? = nil,
    through admin: PostgresConnection
  ) throws -> [Int32] {
    try admin.execute(
      """
      SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2
        AND ($3::text IS NULL OR (state = 'active' AND query LIKE $3)) ORDER BY pid
      """, [.text(database), .text(application), pattern.map { .text($0) } ?? .null]
    ).rows.compactMap { $0.first?.integer.map { Int32($0) } }
  }

  /// The server processes holding a session-level advisory lock (a run lock) in
  /// `database`, read through `admin`.
  public static func advisoryLockHolders(in database: String, through admin: PostgresConnection) throws -> [Int32] {
    try admin.execute(
      """
      SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND d.datname = $1 ORDER BY l.pid
      """, [.text(database)]
    ).rows.compactMap { $0.first?.integer.map { Int32($0) } }
  }

  /// True while one of dray's sessions runs a statement matching `pattern` in `database`.
  public static func isRunning(statementLike pattern: String, in database: String, through admin: PostgresConnection) throws -> Bool {
    try !sessions(of: database, runningStatementLike: pattern, through: admin).isEmpty
  }

  /// The `LIKE` pattern of a `COPY` into a table whose name starts with `table`.
  public static func copy(into table: String) -> String { "COPY %\"\(table)%" }

  // MARK: Processes

  /// Folders of servers still running, stopped when the process exits.
  private static let cleanup: Mutex<[String]> = {
    atexit {
      for folder in PostgresServer.cleanup.withLock({ $0 }) { PostgresServer.stop(folder) }
    }
    return Mutex([])
  }()

  /// The start of a server folder's name, in the temporary folder.
  private static let folderPrefix = "dray-pg-"
  /// The file in a server's folder that holds the process id of the test process that
  /// started it.
  private static let ownerFile = "owner.pid"
  private static let orphansStopped = Mutex(false)

  /// Stops the servers, and deletes the folders, that test processes since gone left
  /// behind: a test process killed from outside (kill -9) never ran its `atexit`.
  private static func stopOrphans() {
    let temporary = FileManager.default.temporaryDirectory.path
    for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix(folderPrefix) {
      let folder = temporary + "/" + name
      guard let text = try? String(contentsOfFile: folder + "/" + ownerFile, encoding: .utf8), let owner = Int32(text),
        kill(owner, 0) != 0 && errno == ESRCH
      else { continue }
      stop(folder)
    }
  }

  private static func stop(_ folder: String) {
    if FileManager.default.fileExists(atPath: folder + "/data/postmaster.pid") {
      _ = try? asPostgres([binaries + "/pg_ctl", "-D", folder + "/data", "-m", "immediate", "-w", "stop"])
    }
    try? FileManager.default.removeItem(atPath: folder)
  }

  /// Runs a PostgreSQL program as the `postgres` user (as is, when not root).
  private static func asPostgres(_ arguments: [String]) throws {
    try shell(getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + arguments : arguments)
  }

  /// Runs a program to its end through `ChildProcess`: `pg_ctl start` leaves the server
  /// running with whatever descriptors it inherited, and `Process` would wait for the
  /// server's copy of its own to close; `ChildProcess` hands the child none.
  private static func shell(_ arguments: [String]) throws {
    let logPrefix = FileManager.default.temporaryDirectory.path + "/dray-pg-command-\(UUID().uuidString.prefix(8))"
    let child = try ChildProcess("/usr/bin/env", arguments, logPrefix: logPrefix)
    let end = child.wait()
    let output = child.output + child.errors
    try? FileManager.default.removeItem(atPath: child.outputPath)
    try? FileManager.default.removeItem(atPath: child.errorsPath)
    guard end == .exited(0) else {
      throw TestSupportError("\(arguments.joined(separator: " ")) ended with \(end): \(output)")
    }
  }

  /// A TCP port on 127.0.0.1 that was free a moment ago (and so, most likely, one nothing
  /// listens on).
  public static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
      }
    }
    guard bound else { throw TestSupportError("bind: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}
