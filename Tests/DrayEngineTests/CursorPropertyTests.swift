import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Random histories of the REST test server's `/orders` (inserts, updates, deletes, bursts
/// sharing one cursor value, records arriving late at a value already given, a record
/// changed while a pull is between its pages, nanosecond timestamps), for an inclusive and
/// an exclusive API: after every run the merged table equals the server's live records,
/// and the appended table holds every version a run could see exactly once
/// (docs/http.md, "Cursor boundaries"). One server process, reset between histories. A
/// failing history prints its seed; `DRAY_CURSOR_SEED=N` runs that one again.
@Suite struct CursorPropertyTests {
  /// Runs one incremental step over `/orders`: `orders` (merge) or `events` (append).
  func run(_ server: RestServer, _ target: TargetDatabase, _ folder: TemporaryDirectory, merge: Bool, boundary: String, perPage: Int)
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
  func rows(_ target: TargetDatabase, _ sql: String, table: String) throws -> [[String?]] {
    try target.columnNames(table).isEmpty ? [] : target.rows(sql)
  }

  /// One history; nil when it holds, otherwise what went wrong.
  func history(seed: UInt64, server: RestServer, kind: TargetDatabase.Kind) throws -> String? {
    var random = SeededRandom(seed: seed)
    let folder = TemporaryDirectory("dray-cursor")
    let target = try TargetDatabase(kind, folder: folder.path)
    let boundary = random.below(2) == 0 ? "inclusive" : "exclusive"
    let nanos = random.below(2) == 0
    let perPage = random.int(in: 1...4)
    try server.setOrdersMode(#"{"reset": true, "boundary": "\#(boundary)", "nanos": \#(nanos)}"#)
    var versions: Set<String> = []
    let rounds = random.int(in: 2...4)
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
        try server.changeOrders(change(&random, live: live, latest: latest))
      }
      let moved = try server.orders().compactMap { ($0["id"] as? NSNumber)?.intValue }
      var movedBetweenPages = false
      if !last && !moved.isEmpty && random.below(2) == 0 {
        movedBetweenPages = true
        // Changed while the merge pull is between pages: page 2 is asked after it.
        let id = random.element(of: moved)
        let change = random.below(3) == 0 ? #"{"delete": [\#(id)]}"# : #"{"update": [\#(id)], "set": {"status": "moved"}}"#
        try server.setOrdersMode(#"{"before_page": {"page": 2, "change": \#(change)}}"#)
      }
      let merged = try run(server, target, folder, merge: true, boundary: boundary, perPage: perPage)
      try server.setOrdersMode("{}")
      guard merged.status == .succeeded else { return "round \(round): merge failed: \(merged.steps.first?.errorMessage ?? "")" }
      let expected = try server.orders().map { "\($0["id"] ?? "")|\($0["status"] ?? "")|\($0["updated_at"] ?? "")" }.sorted()
      let table = try rows(target, "SELECT id, status, updated_at FROM orders ORDER BY id", table: "orders").map {
        "\($0[0] ?? "")|\($0[1] ?? "")|\($0[2] ?? "")"
      }.sorted()
      guard table == expected || movedBetweenPages else { return "round \(round): merged table \(table), server \(expected)" }
      for order in try server.allOrders() { versions.insert("\(order["id"] ?? "")@\(order["updated_at"] ?? "")") }
      let appended = try run(server, target, folder, merge: false, boundary: boundary, perPage: perPage)
      guard appended.status == .succeeded else { return "round \(round): append failed: \(appended.steps.first?.errorMessage ?? "")" }
      let events = try rows(target, "SELECT id, updated_at FROM events", table: "events").map { "\($0[0] ?? "")@\($0[1] ?? "")" }.sorted()
      guard events == versions.sorted() else {
        return "round \(round): appended \(events), versions \(versions.sorted())"
      }
    }
    return nil
  }

  /// A few histories per database in the suite's time (each run of a job is real: HTTP over
  /// loopback, a real database); `DRAY_CURSOR_HISTORIES=N` runs N on each.
  @Test(arguments: [(TargetDatabase.Kind.sqlite, 12), (.postgres, 3)])
  func randomHistoriesLoseAndDoubleNothing(kind: TargetDatabase.Kind, histories: Int) throws {
    let histories = ProcessInfo.processInfo.environment["DRAY_CURSOR_HISTORIES"].flatMap(Int.init) ?? histories
    let server = try RestServer()
    let fixed = ProcessInfo.processInfo.environment["DRAY_CURSOR_SEED"].flatMap(UInt64.init)
    let first = SeededRandom.seed(fromEnvironment: "DRAY_CURSOR_FIRST_SEED")
    for index in 0..<(fixed == nil ? histories : 1) {
      let seed = fixed ?? first &+ UInt64(index)
      let failure: String?
      do {
        failure = try history(seed: seed, server: server, kind: kind)
      } catch {
        failure = "\(error)"
      }
      if let failure {
        Issue.record("\(kind) history seed \(seed) (DRAY_CURSOR_SEED=\(seed) runs it again): \(failure)")
        return
      }
    }
  }
}
