import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// `load.contract` and `load.quarantine` (docs/http.md, "Contract"): a new field, a type
/// change and a missing primary key under each rule, against the REST test server's
/// `/orders`, with the quarantine's rows and the report's counts checked; on both targets.
@Suite struct ContractTests {
  let folder = TemporaryDirectory()

  /// Runs a job whose one `http` step merges `/orders` (3 a page) into `orders`, with
  /// `contract` and `quarantine` added to its `load`.
  func run(
    _ server: RestServer, _ target: TargetDatabase, contract: String? = nil, quarantine: String? = nil, incremental: Bool = false,
    columns: String? = nil
  ) throws -> RunReport {
    let extra =
      (contract.map { ", contract: \($0)" } ?? "") + (quarantine.map { ", quarantine: \($0)" } ?? "")
      + (columns.map { ", columns: \($0)" } ?? "")
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: orders
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: 3 }
            load: { table: orders, records: /data, write: merge, primary_key: [id]\(extra) }
            paginate: { next: /links/next }
      \(incremental ? "      incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z' }" : "")
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  /// A server with four orders holding `qty` (integers), loaded once: the table `orders`
  /// has the columns id, customer, total, status, qty, updated_at.
  func loaded(_ target: TargetDatabase) throws -> RestServer {
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 1}, {"qty": 2}, {"qty": 3}, {"qty": 4}]}"#)
    let first = try run(server, target)
    try #require(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    return server
  }

  /// The quarantine's rows as `[step, partition, page_url has /orders, reason, kind, action]`.
  func quarantine(_ target: TargetDatabase, _ name: String = "orders_rejected") throws -> [[String?]] {
    try target.rows("SELECT step, partition, reason, kind, action, run_id FROM \(name) ORDER BY reason")
  }

  func hasTable(_ target: TargetDatabase, _ name: String) throws -> Bool {
    try !target.columnNames(name).isEmpty
  }

  @Test(arguments: TargetDatabase.Kind.allCases, ["evolve", "freeze", "discard_row", "discard_value"])
  func aNewFieldFollowsNewColumns(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 5, "priority": "high"}]}"#)
    let report = try run(server, target, contract: "{ new_columns: \(rule) }")
    let step = try #require(report.steps.first)
    let columns = try target.columnNames("orders")
    switch rule {
    case "evolve":
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(columns.contains("priority"))
      #expect(try target.rows("SELECT priority FROM orders WHERE id = 5") == [["high"]])
      #expect(try !hasTable(target, "orders_rejected"))
      #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 5, setAside: 0, trimmed: 0, byKind: [:]))
    case "freeze":
      #expect(report.status == .failed)
      #expect(
        step.errorMessage?.contains(
          "record 2: new column 'priority' (load.contract.new_columns: freeze); nothing of this step was published") == true,
        "\(step.errorMessage ?? "")")
      #expect(!columns.contains("priority"))
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
      #expect(try !hasTable(target, "orders_rejected"))
    case "discard_row":
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(!columns.contains("priority"))
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
      #expect(try quarantine(target) == [["orders", nil, "new column 'priority'", "new_column", "set_aside", report.runID]])
      #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 4, setAside: 1, trimmed: 0, byKind: ["new_column": 1]))
      #expect(try ReportCheck.problems([try folder.write("report.json", report.json())]) == "")
      let record = try #require(try target.rows("SELECT record, page_url FROM orders_rejected").first)
      #expect(record[0]?.contains(#""priority":"high""#) == true, "\(record[0] ?? "")")
      #expect(record[1]?.contains("/orders?page=2&per_page=3") == true, "\(record[1] ?? "")")
    default:
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(!columns.contains("priority"))
      #expect(try target.rows("SELECT qty FROM orders WHERE id = 5") == [["5"]])
      #expect(try quarantine(target) == [["orders", nil, "new column 'priority'", "new_column", "trimmed", report.runID]])
      #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 5, setAside: 0, trimmed: 1, byKind: ["new_column": 1]))
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases, ["as_given", "evolve", "freeze", "discard_row", "discard_value"])
  func aTypeChangeFollowsTypes(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": "12.50"}]}"#)
    if kind == .sqlite {
      try target.execute("CREATE TABLE seen (id integer)")
      try target.execute("CREATE TRIGGER orders_seen AFTER INSERT ON orders BEGIN INSERT INTO seen VALUES (new.id); END")
      try target.execute("CREATE VIEW big_orders AS SELECT id, qty FROM orders WHERE id > 4")
    }
    let report = try run(server, target, contract: "{ types: \(rule) }")
    let step = try #require(report.steps.first)
    let reason = #"'qty': "12.50" is text, the column is INTEGER"#
    let qtyType = try target.columnTypes("orders").first { $0.first == "qty" }?.last ?? nil
    switch rule {
    case "as_given" where kind == .sqlite:
      // SQLite stores the value as given (its INTEGER column turns "12.50" into 12.5).
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT qty FROM orders WHERE id = 5") == [["12.5"]])
      #expect(qtyType == "INTEGER")
    case "as_given":
      #expect(report.status == .failed)
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
      #expect(qtyType == "bigint")
    case "evolve":
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(qtyType == (kind == .sqlite ? "TEXT" : "text"))
      if kind == .sqlite {
        // Made again, the table keeps its indexes (the merge key's) and triggers.
        #expect(try target.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'orders'") == [["_dray_key__orders"]])
        #expect(try target.rows("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'orders_seen'") == [["1"]])
        #expect(try target.rows("SELECT id, qty FROM big_orders") == [["5", "12.50"]])
      }
      #expect(try target.rows("SELECT qty FROM orders WHERE id IN (1, 5) ORDER BY id") == [["1"], ["12.50"]])
      #expect(try !hasTable(target, "orders_rejected"))
    case "freeze":
      #expect(report.status == .failed)
      #expect(step.errorMessage?.contains("record 2: \(reason) (load.contract.types: freeze)") == true, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
    case "discard_row":
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
      #expect(try quarantine(target) == [["orders", nil, reason, "type", "set_aside", report.runID]])
      #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 4, setAside: 1, trimmed: 0, byKind: ["type": 1]))
    default:
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT qty FROM orders WHERE id = 5") == [[nil]])
      #expect(qtyType == (kind == .sqlite ? "INTEGER" : "bigint"))
      #expect(try quarantine(target) == [["orders", nil, reason, "type", "trimmed", report.runID]])
      #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 5, setAside: 0, trimmed: 1, byKind: ["type": 1]))
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases, ["as_given", "evolve", "freeze", "discard_row", "discard_value"])
  func aMissingPrimaryKeyFollowsTypes(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 5, "id": null}]}"#)
    let report = try run(server, target, contract: "{ types: \(rule) }")
    let step = try #require(report.steps.first)
    switch rule {
    case "as_given", "evolve":
      #expect(report.status == .failed)
      #expect(step.errorMessage?.contains("record 2 has no value for the primary key 'id'") == true, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
    case "freeze":
      #expect(report.status == .failed)
      #expect(
        step.errorMessage?.contains("record 2: no value at the primary key /id (load.contract.types: freeze)") == true,
        "\(step.errorMessage ?? "")")
      #expect(try !hasTable(target, "orders_rejected"))
    default:
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
      #expect(try quarantine(target) == [["orders", nil, "no value at the primary key /id", "primary_key", "set_aside", report.runID]])
      #expect(
        step.contract == ContractReport(quarantine: "orders_rejected", loaded: 4, setAside: 1, trimmed: 0, byKind: ["primary_key": 1]))
    }
  }

  /// A primary key value that does not fit its column was once trimmed under
  /// `discard_value`, and the page then failed with "no value for the primary key" on every
  /// run. A key is never trimmed: the record is set aside, naming the type, and the others
  /// are merged.
  @Test(arguments: TargetDatabase.Kind.allCases, ["discard_row", "discard_value"])
  func aPrimaryKeyOfTheWrongTypeIsSetAsideNeverTrimmed(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 5, "id": "9"}, {"qty": 6}]}"#)
    let report = try run(server, target, contract: "{ types: \(rule) }")
    let step = try #require(report.steps.first)
    #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
    #expect(try target.rows("SELECT id, qty FROM orders WHERE id > 4 ORDER BY id") == [["6", "6"]])
    #expect(
      try quarantine(target) == [["orders", nil, #"'id': "9" is text, the column is INTEGER"#, "type", "set_aside", report.runID]])
    #expect(step.contract == ContractReport(quarantine: "orders_rejected", loaded: 5, setAside: 1, trimmed: 0, byKind: ["type": 1]))
  }

  /// A boolean at the primary key was once stored as 1 and merged over the row of id 1,
  /// wiping its other fields. It is no key value: set aside under `discard_row` and
  /// `discard_value`, refused with its page under `as_given` and `evolve`; row 1 keeps its
  /// values either way.
  @Test(arguments: TargetDatabase.Kind.allCases, ["as_given", "evolve", "freeze", "discard_row", "discard_value"])
  func aBooleanPrimaryKeyNeverMergesIntoTheRowOfOne(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    let before = try target.rows("SELECT id, customer, qty FROM orders WHERE id = 1")
    try server.changeOrders(#"{"insert": [{"qty": 9, "id": true}]}"#)
    let report = try run(server, target, contract: "{ types: \(rule) }")
    let step = try #require(report.steps.first)
    #expect(try target.rows("SELECT id, customer, qty FROM orders WHERE id = 1") == before)
    #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
    switch rule {
    case "as_given", "evolve":
      #expect(report.status == .failed)
      #expect(
        step.errorMessage?.contains("record 2 has the boolean true at the primary key 'id' (load.primary_key), which is not a key value")
          == true, "\(step.errorMessage ?? "")")
    case "freeze":
      #expect(report.status == .failed)
      #expect(step.errorMessage?.contains("record 2: 'id': true is a boolean, which is not a primary key value") == true)
    default:
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(
        try quarantine(target) == [
          ["orders", nil, "'id': true is a boolean, which is not a primary key value", "type", "set_aside", report.runID]
        ])
    }
  }

  /// A publish refused for the data's sake drops the staged pages, as `freeze` and
  /// `quarantine_full` do: once the API is fixed, the next run fetches every page again and
  /// succeeds (it does not resume the refused pages). PostgreSQL refuses a text value in a
  /// bigint column under `as_given`; SQLite stores it, so `freeze` stands for the class there.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPublishRefusedForTheDataFetchesAgainOnTheNextRun(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    // Order 5 is on page 2: page 1 is staged before the refusal.
    try server.changeOrders(#"{"insert": [{"qty": "abc"}]}"#)
    let contract = kind == .postgres ? nil : "{ types: freeze }"
    let refused = try run(server, target, contract: contract)
    let step = try #require(refused.steps.first)
    #expect(refused.status == .failed)
    if kind == .postgres {
      #expect(step.errorCode == "load_error")
      let message = step.errorMessage ?? ""
      #expect(message.contains(#"column "qty" is of type bigint but expression is of type text"#), "\(message)")
      #expect(
        message.hasSuffix(
          "nothing was published, and the next run fetches the pages again. Make the column's type hold the API's values, "
            + "or set load.contract.types: evolve (widen the column) or discard_row (set such records aside)"), "\(message)")
    }
    #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
    try server.changeOrders(#"{"update": [5], "set": {"qty": 5}}"#)
    let before = try server.requests().count
    let fixed = try run(server, target, contract: contract)
    #expect(fixed.status == .succeeded, "\(fixed.steps.first?.errorMessage ?? "")")
    #expect(fixed.steps.first?.notes.contains { $0.hasPrefix("resuming") } == false, "\(fixed.steps.first?.notes ?? [])")
    // Page 1 was fetched again: the refused run's staged pages were dropped.
    #expect(try server.requests().dropFirst(before).contains { $0.records.contains(1) })
    #expect(try target.rows("SELECT qty FROM orders WHERE id = 5") == [["5"]])
  }

  /// A number with a fraction for an integer column under the default (`as_given`):
  /// PostgreSQL's assignment cast would round it (2.5 → 2), so the write is refused naming
  /// the record and column, nothing published, in each write mode; a number without a
  /// fraction (5.0) is stored as its integer, as on SQLite. SQLite stores 2.5 as given.
  @Test(arguments: ["merge, primary_key: [id]", "append", "replace"])
  func aFractionForABigintColumnIsRefusedNeverRounded(write: String) throws {
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 1}, {"qty": 2}, {"qty": 3}, {"qty": 4}]}"#)
    func load() throws -> RunReport {
      let path = try folder.write(
        "fractions.yaml",
        """
        version: 1
        job: shop
        \(target.manifestBlock)retry: { count: 1, interval: 10ms }
        steps:
          - id: orders
            http: { base_url: '\(server.url)', path: orders, query: { per_page: 3 }, load: { table: counts, records: /data, write: \(write) }, paginate: { next: /links/next } }
        """)
      return Runner(
        manifest: try ManifestLoader().load(path: path), options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()
      ).run()
    }
    try #require(try load().status == .succeeded)
    try server.changeOrders(#"{"insert": [{"qty": 5.0}, {"qty": 2.5}]}"#)
    let refused = try load()
    let message = refused.steps.first?.errorMessage ?? ""
    #expect(refused.status == .failed)
    #expect(
      message.contains("record 6, column 'qty': 2.5 is a number with a fraction, and the table's column is bigint, which would round it"),
      "\(message)")
    #expect(try target.rows("SELECT count(*), sum(qty) FROM counts") == [["4", "10"]])
    try server.changeOrders(#"{"update": [6], "set": {"qty": 6}}"#)
    let fixed = try load()
    #expect(fixed.status == .succeeded, "\(fixed.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT qty FROM counts WHERE id IN (5, 6) ORDER BY id") == [["5"], ["6"]])
  }

  /// A tombstone (its deleted mark true) deletes its row whatever else it carries: a field
  /// the table lacks (`deleted_at`) or a value that does not fit is left out of it, not set
  /// aside (which would keep the deleted row for good, the cursor moving past it).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTombstoneDeletesWhateverFieldsItCarries(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    func load() throws -> RunReport {
      let path = try folder.write(
        "tombstones.yaml",
        """
        version: 1
        job: shop
        \(target.manifestBlock)steps:
          - id: orders
            http:
              base_url: '\(server.url)'
              path: orders
              load: { table: orders, records: /data, write: merge, primary_key: [id], deleted: /deleted, contract: { new_columns: discard_row, types: discard_row } }
              incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z' }
        """)
      return Runner(
        manifest: try ManifestLoader().load(path: path), options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()
      ).run()
    }
    try #require(try load().status == .succeeded)
    try server.changeOrders(#"{"delete": [2], "tombstone": {"deleted_at": "2024-01-01", "total": "gone"}}"#)
    let report = try load()
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT id FROM orders ORDER BY id") == [["1"], ["3"]])
    #expect(try !hasTable(target, "orders_rejected"))
    #expect(report.steps.first?.contract?.setAside ?? 0 == 0)
  }

  /// An SQLite STRICT table refuses a value of another type (SQLITE_CONSTRAINT_DATATYPE)
  /// where an ordinary one stores it: the same class as PostgreSQL's refusal, so the staged
  /// pages are dropped and the next run, the API fixed, fetches them again.
  @Test func aStrictSQLiteTablesRefusalFetchesAgainOnTheNextRun() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try loaded(target)
    let index = try #require(try target.rows("SELECT sql FROM sqlite_master WHERE name = '_dray_key__orders'").first?.first ?? nil)
    try target.execute("ALTER TABLE orders RENAME TO old_orders")
    try target.execute(
      "CREATE TABLE orders (id ANY, customer ANY, total ANY, status ANY, qty INTEGER, updated_at ANY) STRICT")
    try target.execute("INSERT INTO orders SELECT id, customer, total, status, qty, updated_at FROM old_orders")
    try target.execute("DROP TABLE old_orders")
    try target.execute(index)
    try server.changeOrders(#"{"insert": [{"qty": "abc"}]}"#)
    let refused = try run(server, target)
    let message = refused.steps.first?.errorMessage ?? ""
    #expect(refused.status == .failed)
    #expect(message.contains("nothing was published, and the next run fetches the pages again"), "\(message)")
    try server.changeOrders(#"{"update": [5], "set": {"qty": 5}}"#)
    let before = try server.requests().count
    let fixed = try run(server, target)
    #expect(fixed.status == .succeeded, "\(fixed.steps.first?.errorMessage ?? "")")
    #expect(try server.requests().dropFirst(before).contains { $0.records.contains(1) })
    #expect(try target.rows("SELECT qty FROM orders WHERE id = 5") == [["5"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func passingMaxRowsPublishesNothing(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": "x"}, {"qty": "y"}], "update": [1], "set": {"qty": 10}}"#)
    let report = try run(server, target, contract: "{ types: discard_row }", quarantine: "{ table: rejects, max_rows: 1 }")
    let step = try #require(report.steps.first)
    #expect(report.status == .failed)
    #expect(step.errorCode == "quarantine_full")
    #expect(
      step.errorMessage?.hasPrefix(
        "2 of 6 records did not fit the table (2 set aside, 0 trimmed (type: 2)), more than load.quarantine.max_rows (1)")
        == true, "\(step.errorMessage ?? "")")
    // Nothing published: neither order 1's update, nor the quarantine.
    #expect(try target.rows("SELECT qty FROM orders WHERE id = 1") == [["1"]])
    #expect(try !hasTable(target, "rejects"))
    let shared = try run(server, target, contract: "{ types: discard_row }", quarantine: "{ table: rejects, max_share: 0.25 }")
    #expect(shared.status == .failed)
    let passing = try run(server, target, contract: "{ types: discard_row }", quarantine: "{ table: rejects, max_share: 0.34 }")
    #expect(passing.status == .succeeded, "\(passing.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT qty FROM orders WHERE id = 1") == [["10"]])
    #expect(try target.rows("SELECT count(*) FROM rejects") == [["2"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableOfTheQuarantinesNameIsRefusedAtRunStart(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    // An empty file is an empty SQLite database, which the test's connection opens.
    try FileManager.default.createDirectory(atPath: folder.path + "/data", withIntermediateDirectories: true)
    #expect(FileManager.default.createFile(atPath: folder.path + "/" + TargetDatabase.sqlitePath, contents: Data()))
    try target.execute("CREATE TABLE orders_rejected (id integer, note text)")
    let report = try run(server, target)
    #expect(report.status == .failed)
    #expect(
      report.errorMessage?.hasPrefix(
        "step orders: table orders_rejected exists and is not a quarantine (its columns are id, note; a quarantine's are run_id, step, partition"
      )
        == true, "\(report.errorMessage ?? "")")
    #expect(report.steps.first?.status == .notRun)
    #expect(try !hasTable(target, "orders"))
    #expect(try server.requests().filter { $0.path.hasPrefix("/orders") }.isEmpty)
    // A quarantine of an earlier run is a quarantine: the run goes on.
    try target.execute("DROP TABLE orders_rejected")
    let first = try run(server, target, contract: "{ types: discard_row }")
    #expect(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func evolveWidensAnIntegerColumnToRealForADecimal(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 2.5}]}"#)
    let report = try run(server, target, contract: "{ types: evolve }")
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    let qtyType = try target.columnTypes("orders").first { $0.first == "qty" }?.last ?? nil
    #expect(qtyType == (kind == .sqlite ? "REAL" : "double precision"))
    #expect(try target.rows("SELECT qty FROM orders WHERE id IN (1, 5) ORDER BY id") == [["1.0"], ["2.5"]])
    // Said as an added column is (page 2 holds orders 4 and 5).
    let notes = report.steps.first?.notes ?? []
    #expect(
      notes.contains("widened column qty of table orders from INTEGER to REAL (load.contract.types: evolve): record 2 holds 2.5"),
      "\(notes)")
    // Then to TEXT, and a run that widens nothing says nothing.
    try server.changeOrders(#"{"insert": [{"qty": "many"}]}"#)
    let text = try run(server, target, contract: "{ types: evolve }")
    #expect(
      text.steps.first?.notes.contains(
        #"widened column qty of table orders from REAL to TEXT (load.contract.types: evolve): record 3 holds "many""#) == true,
      "\(text.steps.first?.notes ?? [])")
    let again = try run(server, target, contract: "{ types: evolve }")
    #expect(again.steps.first?.notes.contains { $0.hasPrefix("widened") } == false, "\(again.steps.first?.notes ?? [])")
  }

  /// Integers beyond ±2^53 are never rounded through a double: a column holding them that
  /// meets a decimal becomes NUMERIC (SQLite keeps each value as INTEGER or REAL in it,
  /// PostgreSQL's numeric both), whether they arrive with the decimal or are already in the
  /// table that `evolve` widens.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func integersADoubleCannotHoldMakeANumericColumnNeverReal(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 9007199254740993}, {"qty": 9223372036854775807}]}"#)
    try #require(try run(server, target, incremental: true).status == .succeeded)
    // Order 3 alone is fetched: the widening reads the table's rows.
    try server.changeOrders(#"{"insert": [{"qty": 2.5}]}"#)
    let report = try run(server, target, contract: "{ types: evolve }", incremental: true)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    let numeric = kind == .sqlite ? "NUMERIC" : "numeric"
    #expect(try target.columnTypes("orders").first { $0.first == "qty" }?.last == numeric)
    #expect(
      try target.rows("SELECT CAST(qty AS TEXT) FROM orders ORDER BY id") == [["9007199254740993"], ["9223372036854775807"], ["2.5"]])
    #expect(
      report.steps.first?.notes.contains(
        "widened column qty of table orders from INTEGER to NUMERIC (load.contract.types: evolve): record 1 holds 2.5") == true,
      "\(report.steps.first?.notes ?? [])")
  }

  /// With no contract, one answer holding an integer beyond ±2^53 and a decimal infers
  /// NUMERIC for a new table, never REAL.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func inferenceMakesNumericForIntegersADoubleCannotHoldWithADecimal(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let numeric = kind == .sqlite ? "NUMERIC" : "numeric"
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": -9007199254740993}, {"qty": 0.5}]}"#)
    let report = try run(server, target)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    #expect(try target.columnTypes("orders").first { $0.first == "qty" }?.last == numeric)
    #expect(try target.rows("SELECT CAST(qty AS TEXT) FROM orders ORDER BY id") == [["-9007199254740993"], ["0.5"]])
  }

  /// A REAL column does not hold an integer beyond ±2^53: `freeze` refuses it and
  /// `discard_row` sets it aside as a type mismatch; `evolve` widens the column to NUMERIC.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anIntegerADoubleCannotHoldDoesNotFitARealColumn(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 2.5}]}"#)
    try #require(try run(server, target, contract: "{ types: evolve }").status == .succeeded)
    try server.changeOrders(#"{"insert": [{"qty": 9007199254740995}]}"#)
    let reason = "'qty': 9007199254740995 is an integer beyond ±2^53, which a double may not hold exactly, the column is REAL"
    let frozen = try run(server, target, contract: "{ types: freeze }")
    #expect(frozen.status == .failed)
    #expect(frozen.steps.first?.errorMessage?.contains("record 3: " + reason) == true, "\(frozen.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT count(*) FROM orders") == [["5"]])
    let discarded = try run(server, target, contract: "{ types: discard_row }")
    #expect(discarded.status == .succeeded, "\(discarded.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT reason FROM orders_rejected") == [[reason]])
    let evolved = try run(server, target, contract: "{ types: evolve }")
    #expect(evolved.status == .succeeded, "\(evolved.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT CAST(qty AS TEXT) FROM orders WHERE id IN (5, 6) ORDER BY id") == [["2.5"], ["9007199254740995"]])
  }

  /// Widening REAL to TEXT keeps each real's shortest digits that read back as the same
  /// double, on SQLite as on PostgreSQL (SQLite's own conversion keeps 15 digits).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func widenedRealsKeepTheirDigitsAsText(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 0.30000000000000004}, {"qty": 1.0000000000000002}, {"qty": 123456789.12345679}]}"#)
    try #require(try run(server, target, incremental: true).status == .succeeded)
    try server.changeOrders(#"{"insert": [{"qty": "abc"}]}"#)
    let report = try run(server, target, contract: "{ types: evolve }", incremental: true)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    #expect(
      try target.rows("SELECT qty FROM orders ORDER BY id") == [
        ["0.30000000000000004"], ["1.0000000000000002"], ["123456789.12345679"], ["abc"],
      ])
  }

  /// A decimal staged into a TEXT column keeps its shortest digits that read back as the
  /// same double, whatever else its page holds (SQLite's own conversion keeps 15).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func decimalsKeepTheirDigitsInATextColumn(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": "abc"}, {"qty": 12.345678901234567}, {"qty": 0.30000000000000004}]}"#)
    let report = try run(server, target)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT qty FROM orders ORDER BY id") == [["abc"], ["12.345678901234567"], ["0.30000000000000004"]])
  }

  /// The quarantine keeps the record as read: a JSON integer beyond 64 bits stays a number
  /// (its digits), and the reason says what it is, not "text".
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aBigIntegerSetAsideStaysANumberInTheQuarantine(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": 12345678901234567890123}, {"qty": "12345678901234567890123"}]}"#)
    let report = try run(server, target, contract: "{ types: discard_row }")
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    let rows = try target.rows("SELECT record, reason FROM orders_rejected").sorted { ($0[1] ?? "") < ($1[1] ?? "") }
    #expect(
      rows.map { $0[1] } == [
        #"'qty': "12345678901234567890123" is text, the column is INTEGER"#,
        "'qty': 12345678901234567890123 is an integer beyond 64 bits, the column is INTEGER",
      ])
    #expect(rows.first?[0]?.contains(#""qty":"12345678901234567890123""#) == true, "\(rows)")
    #expect(rows.last?[0]?.contains(#""qty":12345678901234567890123"#) == true, "\(rows)")
  }

  @Test func whatAColumnHoldsAndWhatItWidensTo() {
    #expect(ColumnType.integer.holds(.integer) && !ColumnType.integer.holds(.real) && !ColumnType.integer.holds(.text))
    #expect(ColumnType.real.holds(.integer) && ColumnType.numeric.holds(.real) && !ColumnType.numeric.holds(.text))
    #expect(ColumnType.text.holds(.integer) && ColumnType.integer.holds(nil))
    #expect(ColumnType.integer.widened(for: .real) == .real)
    #expect(ColumnType.integer.widened(for: .text) == .text)
    #expect(ColumnType.real.widened(for: .text) == .text)
    #expect(ColumnType.numeric.widened(for: .integer) == .numeric)
    #expect(!ColumnType.real.holds(.integer, integersFitADouble: false) && ColumnType.numeric.holds(.integer, integersFitADouble: false))
    #expect(ColumnType.real.widened(for: .integer, integersFitADouble: false) == .numeric)
    #expect(ColumnType.integer.widened(for: .real, integersFitADouble: false) == .numeric)
    #expect(ColumnType.join(.integer, .real, integersFitADouble: false) == .numeric && ColumnType.join(.numeric, .real) == .numeric)
    #expect(ColumnType.doubleHolds(1 << 53) && !ColumnType.doubleHolds((1 << 53) + 1) && !ColumnType.doubleHolds(Int64.min))
  }

  /// A record set aside still moves an incremental step's cursor: it was seen whole, and the
  /// next run does not fetch it (nor quarantine it) again.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRecordSetAsideMovesTheCursor(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": "x"}]}"#)
    let last = try #require(try server.orders().last?["updated_at"] as? String)
    let first = try run(server, target, contract: "{ types: discard_row }", incremental: true)
    #expect(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT value FROM _dray_http_cursors") == [[#""\#(last)""#]])
    let second = try run(server, target, contract: "{ types: discard_row }", incremental: true)
    #expect(second.status == .succeeded, "\(second.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT count(*) FROM orders_rejected") == [["1"]])
  }

  /// Each partition of a partitioned step quarantines its own records, naming the step and
  /// the member (docs/partitions.md); a `replace` step's partitions quarantine into the
  /// step's table's quarantine, not the gathering table's.
  @Test(arguments: TargetDatabase.Kind.allCases, ["merge", "replace"])
  func partitionsNameTheirMemberInTheQuarantine(kind: TargetDatabase.Kind, write: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"insert": [{"qty": "x"}]}"#)
    // Both partitions fetch every order: the replaced table holds each twice.
    if write == "replace" { try target.execute("DROP INDEX _dray_key__orders") }
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: orders
          partitions: { list: [{ s: a }, { s: b }] }
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: 3, tag: '{s}' }
            load: { table: orders, records: /data, write: \(write)\(write == "merge" ? ", primary_key: [id]" : ""), contract: { types: discard_row } }
            paginate: { next: /links/next }
      """)
    let manifest = try ManifestLoader().load(path: path)
    let report = Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.status == .succeeded, "\(report.steps.first?.members.compactMap(\.errorMessage) ?? [])")
    #expect(
      try target.rows("SELECT step, partition, reason FROM orders_rejected ORDER BY partition") == [
        ["orders", "orders[s=a]", #"'qty': "x" is text, the column is INTEGER"#],
        ["orders", "orders[s=b]", #"'qty': "x" is text, the column is INTEGER"#],
      ])
  }

  /// `max_rows` and `max_share` bound the step, not each partition: the partitions' records
  /// set aside count together, so the partition that passes the bound publishes nothing.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func quarantineBoundsCountAcrossPartitions(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    // Each partition fetches every order: 5 records, one set aside.
    try server.changeOrders(#"{"insert": [{"qty": "x"}]}"#)
    func job(_ quarantine: String) throws -> RunReport {
      let path = try folder.write(
        "job.yaml",
        """
        version: 1
        job: shop
        \(target.manifestBlock)retry: { count: 1, interval: 10ms }
        steps:
          - id: orders
            partitions: { list: [{ s: a }, { s: b }] }
            http:
              base_url: '\(server.url)'
              path: orders
              query: { per_page: 3, tag: '{s}' }
              load: { table: orders, records: /data, write: merge, primary_key: [id], contract: { types: discard_row }, quarantine: \(quarantine) }
              paginate: { next: /links/next }
        """)
      let manifest = try ManifestLoader().load(path: path)
      return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    }
    let report = try job("{ max_rows: 1 }")
    let members = try #require(report.steps.first?.members)
    #expect(report.status == .failed)
    #expect(members.map(\.status) == [.succeeded, .failed])
    #expect(members[1].errorCode == "quarantine_full")
    #expect(
      members[1].errorMessage?.hasPrefix(
        "2 of 10 records did not fit the table (1 set aside, 0 trimmed (type: 1)), more than load.quarantine.max_rows (1) across the partitions of step orders (1 of them from the 5 records of partitions published before this one)"
      ) == true, "\(members[1].errorMessage ?? "")")
    #expect(try target.rows("SELECT partition FROM orders_rejected") == [["orders[s=a]"]])
    // Each partition alone would pass: 1 of max_rows 2 each, 2 together.
    let wider = try job("{ max_rows: 2 }")
    #expect(wider.status == .succeeded, "\(wider.steps.first?.members.compactMap(\.errorMessage) ?? [])")
  }

  /// With declared `columns`, `new_columns: evolve` is refused at validation: a `freeze` of
  /// a new field (`extra: refuse`, its old spelling) advises only what may be chosen.
  @Test(arguments: ["contract: { new_columns: freeze }", "extra: refuse"])
  func aFrozenNewFieldWithDeclaredColumnsAdvisesWhatIsAllowed(spelling: String) throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)steps:
        - id: orders
          http:
            base_url: '\(server.url)'
            path: orders
            load: { table: orders, records: /data, write: merge, primary_key: [id], columns: { id: INTEGER }, \(spelling) }
      """)
    let manifest = try ManifestLoader().load(path: path)
    let report = Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    let message = report.steps.first?.errorMessage ?? ""
    #expect(report.status == .failed)
    #expect(message.contains("(load.contract.new_columns: freeze); nothing of this step was published"), "\(message)")
    #expect(message.hasSuffix("Declare the column in load.columns, or choose discard_row or discard_value"), "\(message)")
    #expect(!message.contains("evolve"), "\(message)")
  }

  /// Declared columns are the contract's types before the table exists: a value they do not
  /// hold is trimmed on the first run too, and a field they do not name is noted.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func declaredColumnsFixTypesBeforeTheTableExists(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 1}, {"qty": "x"}, {"qty": 3}]}"#)
    let report = try run(
      server, target, contract: "{ new_columns: discard_value, types: discard_value }",
      columns: "{ id: INTEGER, qty: INTEGER, status: TEXT }")
    let step = try #require(report.steps.first)
    #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
    #expect(try target.rows("SELECT id, qty FROM orders ORDER BY id") == [["1", "1"], ["2", nil], ["3", "3"]])
    #expect(try target.columnNames("orders") == ["id", "qty", "status"])
    let reasons = try target.rows("SELECT reason FROM orders_rejected ORDER BY page_url, record").map { $0.first ?? nil }
    #expect(reasons.count == 3)
    #expect(
      reasons.contains(
        #"'qty': "x" is text, the column is INTEGER; new column 'customer'; new column 'total'; new column 'updated_at'"#))
    #expect(
      step.contract
        == ContractReport(quarantine: "orders_rejected", loaded: 3, setAside: 0, trimmed: 3, byKind: ["type": 1, "new_column": 2]))
  }

  /// A step whose path holds a secret (`secrets:`) and whose query sends a key under a
  /// secret name: after a run that quarantines a record and a run that fails (`freeze`),
  /// no file in the job folder (the database, the journal, `.dray/downloads`, the page
  /// files' sidecars) and no quarantine row holds either secret; `page_url` is the masked URL.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func noStoredURLHoldsASecret(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let pin = "PinCode4242"
    let key = "ApiKeyValue77"
    _ = try folder.write("secrets/pin.txt", pin)
    _ = try folder.write("secrets/key.txt", key)
    let server = try RestServer()
    func serve(_ value: String) throws {
      let body = #"{\"data\": [{\"id\": 1, \"n\": 1}, {\"id\": 2, \"n\": \#(value)}]}"#
      try server.setRules(#"[{"path": "/recs/\#(pin)", "status": 200, "body": "\#(body)"}]"#)
    }
    func run(_ types: String) throws -> RunReport {
      let path = try folder.write(
        "job.yaml",
        """
        version: 1
        job: pins
        secrets: ["${file:secrets/pin.txt}"]
        \(target.manifestBlock)retry: { count: 0 }
        steps:
          - id: recs
            http:
              base_url: '\(server.url)'
              path: "recs/${file:secrets/pin.txt}"
              query: { token: "${file:secrets/key.txt}" }
              load: { table: recs, records: /data, write: merge, primary_key: [id], contract: { types: \(types) } }
        """)
      let manifest = try ManifestLoader().load(path: path)
      return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    }
    try serve("2")
    let first = try run("discard_row")
    try #require(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    try serve(#"\"two\""#)
    let quarantined = try run("discard_row")
    #expect(quarantined.status == .succeeded, "\(quarantined.steps.first?.errorMessage ?? "")")
    let urls = try target.rows("SELECT page_url FROM recs_rejected")
    #expect(urls.count == 1)
    #expect(urls.first?.first??.contains("/recs/***?token=***") == true, "\(urls)")
    let failed = try run("freeze")
    #expect(failed.status == .failed)
    var scanned: [String] = []
    let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
    for file in files where !file.hasSuffix(".yaml") && !file.hasPrefix("secrets") && !file.hasPrefix("out/") {
      var isFolder: ObjCBool = false
      guard FileManager.default.fileExists(atPath: folder.path + "/" + file, isDirectory: &isFolder), !isFolder.boolValue else { continue }
      let bytes = (try? Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + file))) ?? Data()
      scanned.append(file)
      for secret in [pin, key] {
        #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) is written in \(file)")
      }
    }
    // The failed run's page stayed in the downloads folder, with its sidecar.
    #expect(scanned.contains { $0.contains("downloads/pins/recs-") && $0.hasSuffix(".json") }, "\(scanned)")
    if kind == .sqlite { #expect(scanned.contains { $0.hasSuffix(".sqlite") }, "\(scanned)") }
  }

  /// A field named `""` is never a column: under `evolve` (the default) the step fails with
  /// a line naming the record, "an empty field name" and what to do, and creates no column;
  /// `discard_row` sets the record aside and `discard_value` loads it without the field.
  @Test(arguments: TargetDatabase.Kind.allCases, ["evolve", "discard_row", "discard_value"])
  func aFieldWithAnEmptyNameIsNeverAColumn(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let body = #"{\"data\": [{\"id\": 1, \"n\": 1}, {\"id\": 2, \"n\": 2, \"\": \"x\"}]}"#
    try server.setRules(#"[{"path": "/recs", "status": 200, "body": "\#(body)"}]"#)
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: blank
      \(target.manifestBlock)steps:
        - id: recs
          http:
            base_url: '\(server.url)'
            path: recs
            load: { table: recs, records: /data, write: merge, primary_key: [id], contract: { new_columns: \(rule) } }
      """)
    let manifest = try ManifestLoader().load(path: path)
    let report = Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    let step = try #require(report.steps.first)
    switch rule {
    case "evolve":
      #expect(report.status == .failed)
      let message = step.errorMessage ?? ""
      #expect(
        message.contains("record 2: an empty field name") && message.contains("/recs")
          && message.contains("load.contract.new_columns: discard_value") && message.contains("discard_row"), "\(message)")
      #expect(!message.contains("CREATE") && !message.contains("zero-length"), "\(message)")
      #expect(try !hasTable(target, "recs"))
    case "discard_row":
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.columnNames("recs").sorted() == ["id", "n"])
      #expect(try target.rows("SELECT id FROM recs") == [["1"]])
      #expect(
        try quarantine(target, "recs_rejected").map { Array($0.prefix(5)) } == [
          ["recs", nil, #"an empty field name ("")"#, "new_column", "set_aside"]
        ])
    default:
      #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
      #expect(try target.columnNames("recs").sorted() == ["id", "n"])
      #expect(try target.rows("SELECT id, n FROM recs ORDER BY id") == [["1", "1"], ["2", "2"]])
      #expect(
        try quarantine(target, "recs_rejected").map { Array($0.prefix(5)) } == [
          ["recs", nil, #"an empty field name ("")"#, "new_column", "trimmed"]
        ])
    }
  }
}
