import DrayEngine
import DrayManifest
import DrayModel
import DrayPostgres
import DrayTarget
import DrayTestSupport
import Foundation
import Synchronization
import Testing

/// Random histories of the REST test server's `/orders` (inserts, updates, deletes, bursts
/// sharing one cursor value, records arriving late at a value already given, a record
/// changed while a pull is between its pages, nanosecond timestamps), for an inclusive and
/// an exclusive API: after every run the merged table equals the server's live records,
/// and the appended table holds every version a run could see exactly once
/// (docs/http.md, "Cursor boundaries"). A record moved between the pages of an append pull
/// follows the rule dray documents ("A record that moves between pages"): no version is
/// appended twice, and one passed over is not appended. Histories run on a few workers at
/// once, each with its own server process reset between its histories, each history with an
/// empty database: a fresh SQLite file (on /dev/shm when there is one), or on PostgreSQL the
/// worker's own database with its schema dropped and made again (CREATE DATABASE cost more
/// than the history). The servers' admin calls go over one kept-alive socket per worker.
/// A failing history prints its seed; `DRAY_CURSOR_SEED=N` runs that one again.
///
/// Each run is a real job run (HTTP over loopback to the Python server, a real database),
/// built for debugging as `swift test` builds it: a history (4 to 8 runs) costs about
/// 0.14 s of CPU on SQLite and 0.7 s on PostgreSQL (the server's share included), so the
/// defaults below take about 100 s of a quiet 2-core machine (docs/http.md, "A record that
/// moves between pages").
@Suite struct CursorPropertyTests {
  /// The admin calls of a history, straight over loopback.
  struct Admin {
    let url: String
    /// Kept alive from one call to the next.
    let connection: LoopbackHTTP.Connection
    init(url: String) throws {
      self.url = url
      connection = try LoopbackHTTP.Connection(url)
    }
    func json(_ method: String, _ path: String, _ body: String? = nil) throws -> [[String: Any]] {
      let data = try connection.send(method, "/" + path, body: body)
      return method == "GET" ? ((try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []) : []
    }
    func orders() throws -> [[String: Any]] { try json("GET", "admin/orders") }
    func allOrders() throws -> [[String: Any]] { try json("GET", "admin/orders/all") }
    func change(_ body: String) throws { _ = try json("POST", "admin/orders", body) }
    func mode(_ body: String) throws { _ = try json("POST", "admin/orders/mode", body) }
  }

  /// Runs one incremental step over `/orders`: `orders` (merge) or `events` (append).
  func run(_ server: Admin, _ target: TargetDatabase, _ folder: TemporaryDirectory, merge: Bool, boundary: String, perPage: Int)
    throws -> RunReport
  {
    let load =
      merge
      ? "{ table: orders, records: /data, write: merge, primary_key: [id], deleted: /deleted }"
      : "{ table: events, records: /data, write: append }"
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: \(merge ? "orders" : "events")
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: \(perPage) }
            load: \(load)
            paginate: { next: /links/next }
            incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z', boundary: \(boundary) }
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  /// One random change of the orders (the server's `POST /admin/orders` form).
  func change(_ random: inout SeededRandom, live: [Int], latest: String?) -> String {
    var parts: [String] = []
    let inserts = random.below(4)
    if let latest, random.below(4) == 0 {
      // A record arriving late at the newest value given so far.
      parts.append(#""insert": [{"customer": "late", "updated_at": "\#(latest)"}]"#)
    } else if inserts > 0 {
      parts.append(#""insert": \#(inserts)"#)
    }
    let updates = live.filter { _ in random.below(3) == 0 }
    if !updates.isEmpty {
      parts.append(#""update": \#(updates), "set": {"status": "s\#(random.below(100))"}"#)
    }
    let deletes = live.filter { !updates.contains($0) && random.below(6) == 0 }
    if !deletes.isEmpty { parts.append(#""delete": \#(deletes)"#) }
    if random.below(3) == 0 { parts.append(#""burst": true"#) }
    return "{" + parts.joined(separator: ", ") + "}"
  }

  /// The rows of `sql`; none while `table` does not exist (no run has loaded a record).
  func rows(_ target: TargetDatabase, _ database: Database?, _ sql: String, table: String) throws -> [[String?]] {
    guard let database else { return try target.columnNames(table).isEmpty ? [] : target.rows(sql) }
    let exists = try database.connection.textRows("SELECT to_regclass('public.\(table)') IS NOT NULL") == [["1"]]
    return exists ? try database.connection.textRows(sql) : []
  }

  /// A worker's PostgreSQL database, emptied before each of its histories (its schema
  /// `public` dropped and made again), and a superuser connection to it kept open.
  struct Database {
    let name: String
    let connection: PostgresConnection
    init() throws {
      let server = try PostgresServer.shared()
      name = try server.createDatabase("cursor")
      connection = try server.admin(database: name)
    }
    func empty() throws {
      _ = try connection.execute("DROP SCHEMA IF EXISTS public CASCADE")
      _ = try connection.execute("CREATE SCHEMA public AUTHORIZATION \(PostgresServer.user)")
    }
  }

  /// One history, on `database` for PostgreSQL; nil when it holds, otherwise what went wrong.
  func history(seed: UInt64, server: Admin, kind: TargetDatabase.Kind, database: Database?) throws -> String? {
    var random = SeededRandom(seed: seed)
    let shm = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : nil
    let folder = TemporaryDirectory("dray-cursor", base: shm)
    let target: TargetDatabase
    if let database {
      try database.empty()
      target = try TargetDatabase(postgresDatabase: database.name, folder: folder.path)
    } else {
      target = try TargetDatabase(kind, folder: folder.path)
    }
    let boundary = random.below(2) == 0 ? "inclusive" : "exclusive"
    let nanos = random.below(2) == 0
    let perPage = random.int(in: 1...4)
    try server.mode(#"{"reset": true, "boundary": "\#(boundary)", "nanos": \#(nanos)}"#)
    var versions: Set<String> = []
    // Once a record moved between the pages of an append pull, a version passed over is
    // not appended (docs/http.md): the appended table then holds each version at most once.
    var appendMoved = false
    let rounds = random.int(in: 1...3)
    // The last round changes nothing: a record passed over while another moved between
    // pages is fetched by the run after, so the merged table is checked after runs whose
    // pull saw no move.
    for round in 1...rounds + 1 {
      let last = round > rounds
      let all = try server.allOrders()
      let live = all.filter { $0["deleted"] == nil }.compactMap { ($0["id"] as? NSNumber)?.intValue }
      // One history writes every value in one form (whole seconds, or nine fraction digits).
      let latest = all.compactMap { $0["updated_at"] as? String }.max()
      for _ in 0..<(last ? 0 : random.int(in: 1...2)) {
        try server.change(change(&random, live: live, latest: latest))
      }
      // Changed while a pull is between pages: page 2 is asked after it; in the merge pull
      // or in the append pull.
      func move() throws -> Bool {
        let moved = try server.orders().compactMap { ($0["id"] as? NSNumber)?.intValue }
        guard !last && !moved.isEmpty && random.below(2) == 0 else { return false }
        let id = random.element(of: moved)
        let change = random.below(3) == 0 ? #"{"delete": [\#(id)]}"# : #"{"update": [\#(id)], "set": {"status": "moved"}}"#
        try server.mode(#"{"before_page": {"page": 2, "change": \#(change)}}"#)
        return true
      }
      let movesInAppend = random.below(3) == 0
      let movedBetweenPages = movesInAppend ? false : try move()
      let merged = try run(server, target, folder, merge: true, boundary: boundary, perPage: perPage)
      try server.mode("{}")
      guard merged.status == .succeeded else { return "round \(round): merge failed: \(merged.steps.first?.errorMessage ?? "")" }
      let expected = try server.orders().map { "\($0["id"] ?? "")|\($0["status"] ?? "")|\($0["updated_at"] ?? "")" }.sorted()
      let table = try rows(target, database, "SELECT id, status, updated_at FROM orders ORDER BY id", table: "orders").map {
        "\($0[0] ?? "")|\($0[1] ?? "")|\($0[2] ?? "")"
      }.sorted()
      guard table == expected || movedBetweenPages else { return "round \(round): merged table \(table), server \(expected)" }
      for order in try server.allOrders() { versions.insert("\(order["id"] ?? "")@\(order["updated_at"] ?? "")") }
      if movesInAppend, try move() { appendMoved = true }
      let appended = try run(server, target, folder, merge: false, boundary: boundary, perPage: perPage)
      try server.mode("{}")
      guard appended.status == .succeeded else { return "round \(round): append failed: \(appended.steps.first?.errorMessage ?? "")" }
      // A version changed during the append pull is one too.
      for order in try server.allOrders() { versions.insert("\(order["id"] ?? "")@\(order["updated_at"] ?? "")") }
      let events = try rows(target, database, "SELECT id, updated_at FROM events", table: "events").map { "\($0[0] ?? "")@\($0[1] ?? "")" }
        .sorted()
      if appendMoved {
        guard Set(events).count == events.count, Set(events).isSubset(of: versions) else {
          return "round \(round): after a move between append pages, appended \(events), versions \(versions.sorted())"
        }
      } else if events != versions.sorted() {
        return "round \(round): appended \(events), versions \(versions.sorted())"
      }
    }
    return nil
  }

  /// Workers running histories at once, each with its own server process.
  static let workers = 4

  /// Many histories per database in the suite's time (each run of a job is real: HTTP over
  /// loopback, a real database), spread over `workers`; `DRAY_CURSOR_HISTORIES=N` runs N on
  /// each. The smallest failing seed is printed.
  @Test(arguments: [(TargetDatabase.Kind.sqlite, 1000), (.postgres, 120)])
  func randomHistoriesLoseAndDoubleNothing(kind: TargetDatabase.Kind, histories: Int) throws {
    let histories = ProcessInfo.processInfo.environment["DRAY_CURSOR_HISTORIES"].flatMap(Int.init) ?? histories
    let fixed = ProcessInfo.processInfo.environment["DRAY_CURSOR_SEED"].flatMap(UInt64.init)
    let first = SeededRandom.seed(fromEnvironment: "DRAY_CURSOR_FIRST_SEED")
    let count = fixed == nil ? histories : 1
    let workers = min(Self.workers, count)
    let servers = try (0..<workers).map { _ in try RestServer() }
    let failures = Mutex<[(seed: UInt64, failure: String)]>([])
    let ran = Mutex(0)
    let started = Date()
    DispatchQueue.concurrentPerform(iterations: workers) { worker in
      // What a worker needs, or why it could not have it (each history then fails with that).
      let setup = Result { (try Admin(url: servers[worker].url), kind == .postgres ? try Database() : nil) }
      var index = worker
      while index < count && failures.withLock({ $0.isEmpty }) {
        let seed = fixed ?? first &+ UInt64(index)
        let failure: String?
        do {
          let (admin, database) = try setup.get()
          failure = try history(seed: seed, server: admin, kind: kind, database: database)
        } catch {
          failure = "\(error)"
        }
        if let failure { failures.withLock { $0.append((seed, failure)) } }
        ran.withLock { $0 += 1 }
        index += workers
      }
    }
    if let failed = failures.withLock({ $0.min { $0.seed < $1.seed } }) {
      Issue.record("\(kind) history seed \(failed.seed) (DRAY_CURSOR_SEED=\(failed.seed) runs it again): \(failed.failure)")
    }
    print("CursorPropertyTests: \(ran.withLock { $0 }) \(kind) histories in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
  }
}
