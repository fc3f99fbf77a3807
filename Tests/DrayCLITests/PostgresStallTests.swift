import DrayPostgres
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A run whose PostgreSQL server process stops answering (SIGSTOP on one backend, as a
/// stalled or hung server): the built `dray` gives up within `database.timeouts` with a
/// message naming the statement and what to do, or ends at once on SIGTERM, and publishes
/// nothing half done (docs/postgres.md, "Time limits").
@Suite struct PostgresStallTests {
  static let bigRows = 100_000

  /// The bounds the tests set, small so that a stall is given up in a few seconds: `idle`
  /// alone, with room for a healthy `COPY` on a loaded machine; or a short `statement` too.
  static func timeouts(_ stalled: Stalled) -> String {
    stalled == .statement ? "{ idle: 1s, statement: 2s }" : "{ idle: 1s, statement: 1m }"
  }

  /// A job loading FRUITS and BIG, then running `sql` (the `tally` step's statements, or
  /// `slow` first when given).
  static func job(
    _ name: String, emulator: Emulator, server: PostgresServer, database: String, timeouts: String?, slow: String? = nil
  ) -> String {
    JobText.header(job: name, emulator: emulator, retry: "{ count: 2, interval: 100ms, backoff: fixed }")
      + "database: { url: \"\(server.urlText(database: database))\"\(timeouts.map { ", timeouts: \($0)" } ?? "") }\nsteps:\n"
        + """
          - id: schemes
            schemes: { resources: [FRUITS, BIG] }
          - id: fruits
            table_stream: { resource: FRUITS }

        """
      + (slow.map { "  - id: slow\n    sql: \($0)\n" } ?? "")
        + """
          - id: big
            table_stream: { resource: BIG }
          - id: tally
            sql: CREATE TABLE tally AS SELECT count(*) AS big FROM {{ table "BIG" "output_table" }};

        """
  }

  /// Which server process is stopped.
  enum Stalled: String, CaseIterable, CustomStringConvertible {
    /// The load's session while it receives the `COPY`'s rows.
    case copy
    /// An `sql` step's session while its statement runs.
    case statement
    /// The run journal's session, holding the run lock, while the `COPY` runs: the run's
    /// end is the next thing it is asked to record.
    case journal
    var description: String { rawValue }
  }

  /// Server process `pid`, stopped (SIGSTOP) until `resume()` (SIGCONT).
  struct StoppedBackend {
    let pid: Int32
    init(_ pid: Int32) {
      self.pid = pid
      kill(pid, SIGSTOP)
    }
    func resume() { kill(pid, SIGCONT) }
  }

  /// Once a dray session of `database` runs a statement like `pattern`, its server
  /// process, or with `holdingLock` the server process holding the run lock.
  static func backend(
    _ run: ChildProcess, _ database: String, _ pattern: String, holdingLock: Bool, admin: PostgresConnection
  ) -> Int32? {
    var found: Int32?
    _ = run.waitUntil(timeout: 120) {
      guard (try? PostgresServer.isRunning(statementLike: pattern, in: database, through: admin)) == true else { return false }
      found =
        holdingLock
        ? try? PostgresServer.advisoryLockHolders(in: database, through: admin).first
        : try? PostgresServer.sessions(of: database, runningStatementLike: pattern, through: admin).first
      return found != nil
    }
    return found
  }

  /// Waits until no session of `database` but the test's own is left (a resumed backend
  /// whose client closed ends), at most 30 s.
  static func waitForNoDraySession(_ database: String, admin: PostgresConnection) -> Bool {
    for _ in 0..<600 {
      if (try? PostgresServer.sessions(of: database, through: admin))?.isEmpty == true { return true }
      usleep(50_000)
    }
    return false
  }

  /// A stopped server process fails the run within the limit that bounds its wait, with a
  /// message naming the limit, the server process and the statement: the load's `COPY`
  /// (the server takes none of its rows for `idle`, or gives no answer to its end), an `sql`
  /// step's statement (no answer for `statement` and `idle` more, since the server's own
  /// `statement_timeout` cannot fire in a stopped process), the run journal (no answer for
  /// `idle`). Exit 1, nothing of the stalled step kept, the job's lock file released; a
  /// second runner meanwhile is refused by the run lock (exit 75), not taken for a stall.
  @Test(.timeLimit(.minutes(5)), arguments: Stalled.allCases)
  func aStoppedServerProcessFailsTheRunWithinItsLimit(stalled: Stalled) throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("stall")
    let admin = try server.admin()
    let emulator = try Emulator(["--generate", "BIG:\(Self.bigRows)"])
    let folder = TemporaryDirectory("dray-pg-stall")
    let sleeper = "SELECT pg_sleep(1.5)"
    let text = Self.job(
      "stall", emulator: emulator, server: server, database: database, timeouts: Self.timeouts(stalled),
      slow: stalled == .statement ? sleeper : nil)
    let manifest = try folder.write("job.yaml", text)

    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    let pattern = stalled == .statement ? sleeper : PostgresServer.copy(into: "BIG__")
    let pid = try #require(Self.backend(run, database, pattern, holdingLock: stalled == .journal, admin: admin), "\(run.errors)")
    let stopped = StoppedBackend(pid)
    defer { stopped.resume() }
    let start = Date()

    if stalled == .copy {
      // The run lock's rule holds while the load is stalled: a second runner is refused.
      let other = try ChildProcess.dray(["run", try folder.write("other/job.yaml", text)], logPrefix: folder.path + "/other")
      #expect(other.wait(timeout: 30) == .exited(75), "\(other.errors)")
      #expect(other.errors.contains("job 'stall' is already running on the run journal"), "\(other.errors)")
    }
    #expect(run.wait(timeout: 90) == .exited(69), "\(run.errors)")  // a database time limit: unavailable
    let took = Date().timeIntervalSince(start)
    // Within the bound (1 s idle; 2 s statement then 1 s idle; for the journal, 1 s once
    // the load and the last step end), with room for a loaded machine.
    #expect(took < (stalled == .journal ? 60 : 10), "took \(took)s")
    #expect(PostgresFaultTests.strayLines(run).isEmpty, "\(run.errors)")
    #expect(!run.errors.contains(PostgresServer.password))
    let at = "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database)"
    let closed =
      "its server process \(pid) stalled; dray cancelled the statement and closed the connection, so nothing of it is kept; check that process on the server (pg_stat_activity: stopped, blocked, out of disk?), then run again to resume from the last commit"
    switch stalled {
    case .copy:
      let failure = PostgresFaultTests.stepError(run, "big")
      #expect(failure.code == "database_timeout")
      let message = try #require(failure.message, "\(run.errors)")
      // 100,000 rows are far more than the socket buffers hold: the stop finds the load
      // sending.
      #expect(message.hasPrefix("\(at) took nothing dray sent for 1s (database.timeouts.idle): \(closed)"), "\(run.errors)")
      #expect(message.contains("\n  statement: COPY \"public\".\"BIG__output_table\""), "\(message)")
      #expect(run.errors.contains("step big: table_stream failed after"), "\(run.errors)")
    case .statement:
      let failure = PostgresFaultTests.stepError(run, "slow")
      #expect(failure.code == "database_timeout")
      let message = try #require(failure.message, "\(run.errors)")
      #expect(
        message.contains(
          #/^PostgreSQL at .* gave no answer for 3(\.\d+)?s \(database.timeouts.statement 2s, then database.timeouts.idle 1s\): /#))
      #expect(message.contains(closed), "\(message)")
      #expect(message.hasSuffix("\n  statement: \(sleeper)"), "\(message)")
    case .journal:
      #expect(
        run.errors.contains(
          #/the run journal at postgresql://dray:\*\*\*@127.0.0.1:\d+/\w+ could not record the end of this run: PostgreSQL at .* gave no answer for 1(\.\d+)?s \(database.timeouts.idle 1s\): /#
        ), "\(run.errors)")
    }
    // The run lock went with the run's journal session, unless that session's process is
    // the stopped one: the server releases it once the process runs again.
    let holders = try PostgresServer.advisoryLockHolders(in: database, through: admin)
    #expect(holders == (stalled == .journal ? [pid] : []))

    stopped.resume()
    #expect(Self.waitForNoDraySession(database, admin: admin))
    #expect(try PostgresServer.advisoryLockHolders(in: database, through: admin).isEmpty)
    let rows = { (sql: String) in try PostgresFaultTests.rows(server, database, sql) }
    switch stalled {
    case .copy, .statement:
      let step = stalled == .copy ? "big" : "slow"
      if stalled == .copy { #expect(try rows(#"SELECT count(*) FROM "BIG__output_table""#) == [["0"]]) }
      #expect(try rows("SELECT status FROM _dray_checkpoints WHERE step_id = '\(step)'") == [["failed"]])
      #expect(try rows("SELECT status FROM _dray_runs") == [["failed"]])
    case .journal:
      // The steps committed whole; the run's end could not be recorded.
      #expect(try rows(#"SELECT count(*) FROM "BIG__output_table""#) == [["\(Self.bigRows)"]])
      #expect(try rows("SELECT status FROM _dray_runs") == [["running"]])
    }
    #expect(try rows("SELECT to_regclass('public.tally') IS NULL") == [[stalled == .journal ? "0" : "1"]])

    // The next run, with the default limits, resumes and finishes.
    try folder.write(
      "job.yaml",
      Self.job("stall", emulator: emulator, server: server, database: database, timeouts: nil, slow: stalled == .statement ? sleeper : nil))
    let next = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/next")
    #expect(next.wait(timeout: 120) == .exited(0), "\(next.errors)")
    #expect(try rows(#"SELECT count(*) FROM "BIG__output_table""#) == [["\(Self.bigRows)"]])
  }

  /// One SIGTERM ends a run whose load's server process is stopped within a few seconds
  /// (a cancel request, which the stopped process cannot answer, then the connection
  /// closed), far before the default limits: exit 130, the run recorded `interrupted`,
  /// nothing of the load kept.
  @Test(.timeLimit(.minutes(5)))
  func oneSignalEndsARunWaitingOnAStoppedServerProcess() throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("stallsignal")
    let admin = try server.admin()
    let emulator = try Emulator(["--generate", "BIG:\(Self.bigRows)"])
    let folder = TemporaryDirectory("dray-pg-stall-signal")
    let manifest = try folder.write(
      "job.yaml", Self.job("stallsignal", emulator: emulator, server: server, database: database, timeouts: nil))

    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    let pid = try #require(
      Self.backend(run, database, PostgresServer.copy(into: "BIG__"), holdingLock: false, admin: admin), "\(run.errors)")
    let stopped = StoppedBackend(pid)
    defer { stopped.resume() }
    let start = Date()
    run.send(SIGTERM)
    #expect(run.wait(timeout: 20) == .exited(130), "\(run.errors)")
    let took = Date().timeIntervalSince(start)
    #expect(took < 6, "took \(took)s")
    #expect(run.errors.contains("interrupted by SIGTERM"), "\(run.errors)")
    #expect(PostgresFaultTests.strayLines(run).isEmpty, "\(run.errors)")
    #expect(try PostgresServer.advisoryLockHolders(in: database, through: admin).isEmpty)

    stopped.resume()
    #expect(Self.waitForNoDraySession(database, admin: admin))
    let rows = { (sql: String) in try PostgresFaultTests.rows(server, database, sql) }
    #expect(try rows(#"SELECT count(*) FROM "BIG__output_table""#) == [["0"]])
    #expect(try rows("SELECT count(*) FROM _dray_checkpoints WHERE step_id = 'big'") == [["0"]])
    #expect(try rows("SELECT status FROM _dray_runs") == [["interrupted"]], "\(run.errors)")
  }

  /// A TCP listener on a free port of 127.0.0.1 that forwards its first `forwarding`
  /// connections to `server` and accepts every later one without ever answering (a server
  /// that hangs at connect); it prints `held` for each connection it holds.
  struct SilentListener {
    let process: ChildProcess
    let port: Int

    static let script = """
      import socket, sys, threading
      forwarding, target = int(sys.argv[1]), int(sys.argv[2])
      s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
      print(s.getsockname()[1], flush=True)
      def pipe(a, b):
          try:
              while True:
                  data = a.recv(65536)
                  if not data: break
                  b.sendall(data)
          except OSError: pass
          for end in (a, b):
              try: end.shutdown(socket.SHUT_RDWR)
              except OSError: pass
      held = []
      while True:
          c, _ = s.accept()
          if forwarding > 0:
              forwarding -= 1
              u = socket.create_connection(("127.0.0.1", target))
              threading.Thread(target=pipe, args=(c, u), daemon=True).start()
              threading.Thread(target=pipe, args=(u, c), daemon=True).start()
          else:
              held.append(c)
              print("held", flush=True)
      """

    init(forwarding: Int = 0, to server: PostgresServer? = nil, logPrefix: String) throws {
      process = try ChildProcess(
        "/usr/bin/python3", ["-c", Self.script, String(forwarding), String(server?.port ?? 0)], logPrefix: logPrefix)
      let process = process
      guard process.waitUntil(timeout: 30, { process.output.contains("\n") }),
        let port = Int(process.output.split(separator: "\n")[0])
      else { throw TestSupportError("the listener did not start: \(process.errors)") }
      self.port = port
    }

    /// True once the listener holds a connection without answering it.
    func holds() -> Bool { process.waitUntil(timeout: 30) { process.output.contains("held") } }
  }

  /// Which connection of a run hangs at connect.
  enum Connecting: String, CaseIterable, CustomStringConvertible {
    /// The run's first connection (it checks that the server answers), with
    /// `timeouts.connect` set.
    case first
    /// The same with the default connect limit.
    case firstByDefault
    /// The run journal's, after the first connection was served.
    case journal
    /// The step's, after the first connection and the journal's were served.
    case step
    var description: String { rawValue }
    /// How many connections the listener forwards to the server before it hangs.
    var forwarding: Int {
      switch self {
      case .first, .firstByDefault: 0
      case .journal: 1
      case .step: 2
      }
    }
  }

  /// One SIGTERM ends a run whose connection attempt hangs (a server that accepts TCP and
  /// never speaks) within a few seconds, far before `database.timeouts.connect`: exit 130,
  /// the report's status `interrupted`.
  @Test(.timeLimit(.minutes(5)), arguments: Connecting.allCases)
  func oneSignalEndsARunWhileItConnects(connecting: Connecting) throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("stallconnect")
    let folder = TemporaryDirectory("dray-pg-stall-connect")
    let listener = try SilentListener(forwarding: connecting.forwarding, to: server, logPrefix: folder.path + "/listener")
    let timeouts = connecting == .firstByDefault ? "" : "\n  timeouts: { connect: 20s }"
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: stallconnect
      database:
        url: postgresql://\(PostgresServer.user):\(PostgresServer.password)@127.0.0.1:\(listener.port)/\(database)\(timeouts)
      steps:
        - id: sleepy
          sql: SELECT 1;

      """)

    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    #expect(listener.holds(), "\(run.errors)")
    let start = Date()
    run.send(SIGTERM)
    #expect(run.wait(timeout: 60) == .exited(130), "\(run.errors)")
    let took = Date().timeIntervalSince(start)
    #expect(took < 6, "took \(took)s")
    #expect(run.errors.contains("interrupted by SIGTERM"), "\(run.errors)")
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports")
    #expect(reports.count == 1)
    let report = try folder.read(".dray/reports/\(reports.first ?? "")")
    #expect(report.contains(#""status":"interrupted""#), "\(report)")
  }

  /// A server that accepts TCP and never speaks fails each connection attempt when
  /// `database.timeouts.connect` passes (dray's own deadline, as libpq's `connect_timeout`
  /// would), retried under the job's policy: exit 1, the message naming the limit.
  @Test(.timeLimit(.minutes(5)))
  func aServerThatNeverSpeaksFailsWhenTheConnectLimitPasses() throws {
    let folder = TemporaryDirectory("dray-pg-silent")
    let listener = try SilentListener(logPrefix: folder.path + "/listener")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: silent
      retry: { count: 1, interval: 100ms, backoff: fixed }
      database:
        url: postgresql://dray:secret@127.0.0.1:\(listener.port)/w
        timeouts: { connect: 2s }
      steps:
        - id: sleepy
          sql: SELECT 1;

      """)
    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    #expect(run.wait(timeout: 60) == .exited(69), "\(run.errors)")  // the connect limit: unavailable
    #expect(
      run.errors.contains(
        "cannot reach PostgreSQL at postgresql://dray:***@127.0.0.1:\(listener.port)/w: no connection within 2s (connect_timeout, database.timeouts.connect); check the host and port"
      ), "\(run.errors)")
    #expect(run.errors.contains("database attempt 1 failed after 2."), "\(run.errors)")
  }

  /// A port nothing listens on (connection refused) still fails the run at once, with the
  /// retries of the job's policy: exit 1, the message naming the server.
  @Test(.timeLimit(.minutes(5)))
  func aRefusedConnectionFailsAtOnce() throws {
    let folder = TemporaryDirectory("dray-pg-refused")
    let port = try PostgresServer.freePort()
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: refused
      retry: { count: 1, interval: 100ms, backoff: fixed }
      database:
        url: postgresql://dray:secret@127.0.0.1:\(port)/w
        timeouts: { connect: 20s }
      steps:
        - id: sleepy
          sql: SELECT 1;

      """)
    let start = Date()
    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    #expect(run.wait(timeout: 60) == .exited(69), "\(run.errors)")  // refused: unavailable
    let took = Date().timeIntervalSince(start)
    #expect(took < 6, "took \(took)s")
    #expect(run.errors.contains("cannot reach PostgreSQL at postgresql://dray:***@127.0.0.1:\(port)/w"), "\(run.errors)")
    #expect(run.errors.contains("Connection refused"), "\(run.errors)")
  }
}
