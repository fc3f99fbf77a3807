import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// A `table_stream` step's `load.contract` (docs/steps.md, "Scheme drift"): a scheme that
/// gains a column, changes a type or loses a column between runs follows the contract's
/// rules, the report naming each change, the quarantine holding the rows set aside or
/// trimmed; on both targets. The emulator's scheme changes through `POST /admin/schemes/`.
@Suite struct PlatformDriftTests {
  let folder = TemporaryDirectory()
  static let table = "test_resource__output_table"
  static let quarantine = "test_resource__output_table_rejected"

  func run(_ emulator: Emulator, _ target: TargetDatabase, _ load: String?) throws -> RunReport {
    try runJob(
      folder,
      JobText.header(job: "drift", emulator: emulator) + target.manifestBlock
        + "steps:\n  - id: items\n    table_stream: { resource: test_resource\(load.map { ", load: \($0)" } ?? "") }\n"
    ).1
  }

  /// The emulator's `test_resource` with the three rows loaded once: the table has id, value.
  func loaded(_ target: TargetDatabase, _ load: String) throws -> Emulator {
    let emulator = try Emulator()
    let first = try run(emulator, target, load)
    try #require(first.exitCode == 0, "\(first.steps.first?.errorMessage ?? "")")
    #expect(first.steps[0].contract?.changes == [])
    return emulator
  }

  func change(_ emulator: Emulator, columns: String, rows: String) throws {
    let answer = try emulator.admin("POST", "schemes/test_resource", json: #"{"columns": \#(columns), "rows": \#(rows)}"#)
    #expect(answer.isEmpty, "\(String(decoding: answer, as: UTF8.self))")
  }

  func quarantined(_ target: TargetDatabase) throws -> [[String?]] {
    try target.rows("SELECT step, partition, record, reason, kind, action FROM \(Self.quarantine) ORDER BY record")
  }

  func hasQuarantine(_ target: TargetDatabase) throws -> Bool { try !target.columnNames(Self.quarantine).isEmpty }

  @Test(arguments: TargetDatabase.Kind.allCases, ["evolve", "freeze", "discard_row", "discard_value"])
  func aNewColumnFollowsNewColumns(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let load = "{ contract: { new_columns: \(rule) } }"
    let emulator = try loaded(target, load)
    try change(
      emulator, columns: #"[["id", "BIGINT", "int8"], ["value", "TEXT", "text"], ["priority", "DOUBLE", "numeric"]]"#,
      rows: #"[[1, "one", null], [2, "two", 2.5], [3, "three", 0.5]]"#)
    let report = try run(emulator, target, load)
    let step = try #require(report.steps.first)
    let change = "scheme 'test_resource' table 'output_table': new column 'priority' (DOUBLE) → \(rule)"
    let columns = try target.columnNames(Self.table)
    switch rule {
    case "evolve":
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(columns == ["id", "value", "priority"])
      #expect(try target.rows("SELECT id, priority FROM \(Self.table) ORDER BY id") == [["1", nil], ["2", "2.5"], ["3", "0.5"]])
      #expect(
        step.contract == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 0, byKind: [:], changes: [change]))
      #expect(try !hasQuarantine(target))
      #expect(!step.notes.contains { $0.contains("into table") }, "\(step.notes)")
    case "freeze":
      #expect(report.exitCode == 1)
      #expect(step.errorCode == "bad_answer")
      #expect(
        step.errorMessage?.contains(
          "scheme 'test_resource' table 'output_table': new column 'priority' (DOUBLE) (load.contract.new_columns: freeze); nothing of this step was published"
        ) == true, "\(step.errorMessage ?? "")")
      #expect(columns == ["id", "value"])
      #expect(try target.rows("SELECT count(*) FROM \(Self.table)") == [["3"]])
    case "discard_row":
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(columns == ["id", "value"])
      #expect(try target.rows("SELECT id, value FROM \(Self.table) ORDER BY id") == [["1", "one"]])
      #expect(
        step.contract
          == ContractReport(quarantine: Self.quarantine, loaded: 1, setAside: 2, trimmed: 0, byKind: ["new_column": 2], changes: [change]))
      // Said as an `http` load says it (the console prints the step's notes).
      #expect(step.notes.contains("2 set aside, 0 trimmed (new_column: 2) into table \(Self.quarantine)"), "\(step.notes)")
      #expect(
        try quarantined(target) == [
          [
            "items", nil, #"{"id":2,"value":"two","priority":2.5}"#, "table 'output_table': new column 'priority' (DOUBLE)", "new_column",
            "set_aside",
          ],
          [
            "items", nil, #"{"id":3,"value":"three","priority":0.5}"#, "table 'output_table': new column 'priority' (DOUBLE)", "new_column",
            "set_aside",
          ],
        ])
    default:
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(columns == ["id", "value"])
      #expect(try target.rows("SELECT id, value FROM \(Self.table) ORDER BY id") == [["1", "one"], ["2", "two"], ["3", "three"]])
      #expect(
        step.contract
          == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 2, byKind: ["new_column": 2], changes: [change]))
      #expect(step.notes.contains("0 set aside, 2 trimmed (new_column: 2) into table \(Self.quarantine)"), "\(step.notes)")
      #expect(try quarantined(target).map { $0[5] } == ["trimmed", "trimmed"])
    }
    if rule != "freeze" { #expect(step.notes.contains(change), "\(step.notes)") }
    // The report, `changes` included, is one docs/report.schema.json allows.
    #expect(try ReportCheck.problems([try folder.write("report.json", report.json())]) == "")
    let written = try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any]
    let steps = written?["steps"] as? [[String: Any]]
    let contract = steps?.first?["contract"] as? [String: Any]
    #expect(rule == "freeze" ? contract == nil : contract?["changes"] as? [String] == [change])
  }

  @Test(arguments: TargetDatabase.Kind.allCases, ["as_given", "evolve", "freeze", "discard_row", "discard_value"])
  func aTypeChangeFollowsTypes(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let load = "{ contract: { types: \(rule) } }"
    let emulator = try loaded(target, load)
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#, rows: #"[[1, "one"], [2.5, "two"], [3, "three"]]"#)
    let report = try run(emulator, target, load)
    let step = try #require(report.steps.first)
    let change = "scheme 'test_resource' table 'output_table': column 'id' changed type from BIGINT to DOUBLE → \(rule)"
    let rows = try target.rows("SELECT value, id FROM \(Self.table) ORDER BY value")
    switch rule {
    case "as_given", "evolve":
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(rows.map { $0[0] } == ["one", "three", "two"])
      #expect(rows[2][1] == "2.5")
      #expect(
        step.contract == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 0, byKind: [:], changes: [change]))
      if kind == .postgres {
        #expect(
          try target.rows("SELECT data_type FROM information_schema.columns WHERE table_name = '\(Self.table)' AND column_name = 'id'")
            == [["double precision"]])
      }
    case "freeze":
      #expect(report.exitCode == 1)
      #expect(
        step.errorMessage?.contains(
          "column 'id' changed type from BIGINT to DOUBLE (load.contract.types: freeze); nothing of this step was published")
          == true, "\(step.errorMessage ?? "")")
      #expect(rows == [["one", "1"], ["three", "3"], ["two", "2"]])
    case "discard_row":
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(rows == [["one", "1"], ["three", "3"]])
      #expect(
        step.contract
          == ContractReport(quarantine: Self.quarantine, loaded: 2, setAside: 1, trimmed: 0, byKind: ["type": 1], changes: [change]))
      #expect(
        try quarantined(target) == [
          [
            "items", nil, #"{"id":2.5,"value":"two"}"#, "table 'output_table': 'id': 2.5 is real, the column is BIGINT", "type",
            "set_aside",
          ]
        ])
    default:
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(rows == [["one", "1"], ["three", "3"], ["two", nil]])
      #expect(
        step.contract
          == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 1, byKind: ["type": 1], changes: [change]))
      #expect(try quarantined(target).map { $0[5] } == ["trimmed"])
    }
  }

  /// A column the server no longer sends is kept, its rows NULL, whatever the rules; the
  /// report names the change on every run that still lacks it.
  @Test(arguments: TargetDatabase.Kind.allCases, ["evolve", "freeze", "discard_row", "discard_value"])
  func aLostColumnIsKeptWithNull(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let load = "{ contract: { new_columns: \(rule), types: \(rule) } }"
    let emulator = try loaded(target, load)
    try change(emulator, columns: #"[["id", "BIGINT", "int8"]]"#, rows: #"[[1], [2], [4]]"#)
    let change = "scheme 'test_resource' table 'output_table': column 'value' is no longer sent → kept, its rows NULL"
    for _ in 0..<2 {
      let report = try run(emulator, target, load)
      let step = try #require(report.steps.first)
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(try target.columnNames(Self.table) == ["id", "value"])
      #expect(try target.rows("SELECT id, value FROM \(Self.table) ORDER BY id") == [["1", nil], ["2", nil], ["4", nil]])
      #expect(
        step.contract == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 0, byKind: [:], changes: [change]))
      #expect(try !hasQuarantine(target))
    }
  }

  /// Without `load`, the tables follow the scheme the store keeps, as they always have: no
  /// scheme is fetched, nothing is reported, and rows of another shape are refused.
  @Test func withoutLoadNothingChanges() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let emulator = try Emulator()
    #expect(try run(emulator, target, nil).exitCode == 0)
    try change(emulator, columns: #"[["id", "BIGINT", "int8"]]"#, rows: #"[[1]]"#)
    let report = try run(emulator, target, nil)
    #expect(report.steps[0].contract == nil)
    // The kept scheme has two columns; the server's rows one: refused, as before contracts.
    #expect(report.steps[0].errorMessage?.contains("the row has 1 value; the table has 2 columns") == true)
  }

  /// A cached resource's rows carry their row id first: it stays, and the rows are reshaped after it.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCachedResourcesRowIDStays(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    let job = { (load: String) in
      JobText.header(job: "drift", emulator: emulator) + target.manifestBlock
        + "steps:\n  - id: fruits\n    table_stream: { resource: FRUITS, load: \(load) }\n"
    }
    let load = "{ contract: { new_columns: discard_value }, quarantine: { table: fruits_rejected } }"
    #expect(try runJob(folder, job(load)).1.exitCode == 0)
    try emulator.admin(
      "POST", "schemes/FRUITS",
      json:
        #"{"columns": [["id", "BIGINT", "int8"], ["name", "TEXT", "varchar"], ["colour", "TEXT", "varchar"]], "rows": [[1, "apple", "red"], [9, "lime", null]]}"#
    )
    let report = try runJob(folder, job(load)).1
    #expect(report.exitCode == 0, "\(report.steps[0].errorMessage ?? "")")
    #expect(try target.columnNames("FRUITS__output_table") == ["hhive_id", "id", "name", "price", "in_season"])
    #expect(
      try target.rows(#"SELECT id, name, price FROM "FRUITS__output_table" ORDER BY id"#) == [["1", "apple", nil], ["9", "lime", nil]])
    #expect(try target.rows("SELECT kind, action FROM fruits_rejected") == [["new_column", "trimmed"]])
    #expect(report.steps[0].contract?.changes.count == 3)
  }
}
