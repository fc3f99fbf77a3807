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

  /// A `schemes` step before the `table_stream` step keeps the server's new types, yet the
  /// drift check compares the server's scheme with the types the table was last loaded with
  /// (`_dray_tables.column_types`; PostgreSQL's column types show the same), so the type
  /// change follows the contract; a change the table never takes is named again next run.
  @Test(arguments: TargetDatabase.Kind.allCases, ["as_given", "evolve", "freeze", "discard_row", "discard_value"])
  func aSchemesStepBeforeHidesNoTypeChange(kind: TargetDatabase.Kind, rule: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    func run() throws -> RunReport {
      try runJob(
        folder,
        JobText.header(job: "drift", emulator: emulator) + target.manifestBlock + """
          steps:
            - id: schemes
              schemes: { resources: [test_resource] }
            - id: items
              table_stream: { resource: test_resource, load: { contract: { types: \(rule) } } }

          """
      ).1
    }
    func recorded() throws -> [[String?]] {
      try target.rows("SELECT column_types FROM _dray_tables WHERE name = '\(Self.table)'")
    }
    func idType() throws -> [[String?]] {
      try target.rows(
        "SELECT data_type FROM information_schema.columns WHERE table_name = '\(Self.table)' AND column_name = 'id'")
    }
    let bigint = #"[{"name":"id","type":"BIGINT"},{"name":"value","type":"TEXT"}]"#
    let double = #"[{"name":"id","type":"DOUBLE"},{"name":"value","type":"TEXT"}]"#
    let first = try run()
    try #require(first.exitCode == 0, "\(first.steps.last?.errorMessage ?? "")")
    #expect(first.steps[1].contract?.changes == [])
    #expect(try recorded() == [[bigint]])
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#, rows: #"[[1, "one"], [2.5, "two"], [3, "three"]]"#)
    let report = try run()
    #expect(report.steps[0].status == .succeeded)
    let step = try #require(report.steps.last)
    let change = "scheme 'test_resource' table 'output_table': column 'id' changed type from BIGINT to DOUBLE → \(rule)"
    let rows = try target.rows("SELECT value, id FROM \(Self.table) ORDER BY value")
    // What the table's `id` holds after the run, and so what the next run compares with.
    let widened = rule == "as_given" || rule == "evolve"
    #expect(try recorded() == [[widened ? double : bigint]])
    if kind == .postgres { #expect(try idType() == [[widened ? "double precision" : "bigint"]]) }
    switch rule {
    case "as_given", "evolve":
      #expect(report.exitCode == 0, "\(step.errorMessage ?? "")")
      #expect(rows == [["one", "1"], ["three", "3"], ["two", "2.5"]] || rows == [["one", "1.0"], ["three", "3.0"], ["two", "2.5"]])
      #expect(
        step.contract == ContractReport(quarantine: Self.quarantine, loaded: 3, setAside: 0, trimmed: 0, byKind: [:], changes: [change]))
      #expect(try !hasQuarantine(target))
    case "freeze":
      #expect(report.exitCode == 1)
      #expect(step.errorCode == "bad_answer")
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
      #expect(
        try quarantined(target) == [
          ["items", nil, #"{"id":2.5,"value":"two"}"#, "table 'output_table': 'id': 2.5 is real, the column is BIGINT", "type", "trimmed"]
        ])
    }
    // The next run, its `schemes` step keeping DOUBLE again: a widened table has nothing to
    // change; one that kept BIGINT names the change again.
    let again = try run()
    let next = try #require(again.steps.last)
    #expect(again.exitCode == (rule == "freeze" ? 1 : 0), "\(next.errorMessage ?? "")")
    if rule != "freeze" { #expect(next.contract?.changes == (widened ? [] : [change])) }
    #expect(try recorded() == [[widened ? double : bigint]])
  }

  /// A database an older dray made has no `_dray_tables.column_types`: opening it adds the
  /// column, a table without recorded types is compared with the scheme dray keeps, and
  /// the load records them.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDatabaseAnOlderDrayMadeGainsColumnTypes(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let load = "{ contract: { types: discard_row } }"
    let emulator = try loaded(target, load)
    try target.execute("ALTER TABLE _dray_tables DROP COLUMN column_types")
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#, rows: #"[[1, "one"], [2.5, "two"], [3, "three"]]"#)
    let report = try run(emulator, target, load)
    #expect(report.exitCode == 0, "\(report.steps.first?.errorMessage ?? "")")
    #expect(
      report.steps.first?.contract?.changes == [
        "scheme 'test_resource' table 'output_table': column 'id' changed type from BIGINT to DOUBLE → discard_row"
      ])
    #expect(try target.rows("SELECT id FROM \(Self.table) ORDER BY id") == [["1"], ["3"]])
    #expect(
      try target.rows("SELECT column_types FROM _dray_tables") == [[#"[{"name":"id","type":"BIGINT"},{"name":"value","type":"TEXT"}]"#]])
  }

  /// A table of the quarantine's name that is not a quarantine (the name derived from the
  /// scheme the store keeps, or given) is refused when the run starts, before any step
  /// fetches anything: an earlier step loads nothing, and the run fails as other refusals at
  /// its start do.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableOfTheQuarantinesNameIsRefusedAtRunStart(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try loaded(target, "{ contract: { types: discard_row } }")
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#, rows: #"[[1, "one"], [2.5, "two"], [3, "three"]]"#)
    try target.execute("CREATE TABLE \(Self.quarantine) (id integer, note text)")
    try target.execute("CREATE TABLE notes (id integer)")
    func run(_ quarantine: String) throws -> RunReport {
      try runJob(
        folder,
        JobText.header(job: "drift", emulator: emulator) + target.manifestBlock + """
          steps:
            - id: fruits
              table_stream: { resource: FRUITS }
            - id: items
              table_stream: { resource: test_resource, load: { contract: { types: discard_row }\(quarantine) } }

          """
      ).1
    }
    for (quarantine, table, columns) in [("", Self.quarantine, "id, note"), (", quarantine: notes", "notes", "id")] {
      let asked = try emulator.requests().count
      let report = try run(quarantine)
      #expect(report.exitCode == 1)
      #expect(report.status == .failed)
      let message = report.errorMessage ?? ""
      #expect(
        message.hasPrefix(
          "step items: table \(table) exists and is not a quarantine (its columns are \(columns); a quarantine's are run_id, step, partition"
        ),
        "\(message)")
      #expect(message.contains("nothing was run. Name another table with load.quarantine: NAME, or rename yours"), "\(message)")
      #expect(report.steps.map(\.status) == [.notRun, .notRun])
      #expect(try emulator.requests().count == asked)
      #expect(try target.columnNames("FRUITS__output_table") == [])
      #expect(try target.rows("SELECT count(*) FROM \(Self.table)") == [["3"]])
    }
    // Without the user's table, the same job runs and quarantines.
    try target.execute("DROP TABLE \(Self.quarantine)")
    let report = try run("")
    #expect(report.exitCode == 0, "\(report.steps.last?.errorMessage ?? "")")
    #expect(try quarantined(target).map { $0[4] } == ["type"])
  }

  /// `max_rows` and `max_share` bound the rows a load sets aside or trims: past either, the
  /// step fails with `quarantine_full` and publishes nothing (table, quarantine, the types
  /// its table is recorded with); within them, the next run loads.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func passingAQuarantineBoundPublishesNothing(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let contract = "contract: { types: discard_row }"
    let emulator = try loaded(target, "{ \(contract) }")
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#,
      rows: #"[[1, "one"], [2.5, "two"], [3.5, "three"], [4, "four"]]"#)
    let recorded = try target.rows("SELECT column_types FROM _dray_tables")
    for (bound, passed) in [
      ("max_rows: 1", "load.quarantine.max_rows (1)"), ("max_share: 0.4", "load.quarantine.max_share (0.4 of 4 rows)"),
    ] {
      let report = try run(emulator, target, "{ \(contract), quarantine: { \(bound) } }")
      let step = try #require(report.steps.first)
      #expect(report.exitCode == 1)
      #expect(step.errorCode == "quarantine_full", "\(step.errorMessage ?? "")")
      #expect(
        step.errorMessage?.contains(
          "2 of 4 rows did not fit the tables (2 set aside, 0 trimmed (type: 2)), more than \(passed); nothing was published") == true,
        "\(step.errorMessage ?? "")")
      #expect(try target.rows("SELECT id, value FROM \(Self.table) ORDER BY id") == [["1", "one"], ["2", "two"], ["3", "three"]])
      #expect(try !hasQuarantine(target))
      #expect(try target.rows("SELECT column_types FROM _dray_tables") == recorded)
    }
    // Exactly the share is within the bound.
    let report = try run(emulator, target, "{ \(contract), quarantine: { max_rows: 2, max_share: 0.5 } }")
    #expect(report.exitCode == 0, "\(report.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT id, value FROM \(Self.table) ORDER BY id") == [["1", "one"], ["4", "four"]])
    #expect(try quarantined(target).count == 2)
  }

  /// A partitioned step's bounds count over its partitions (docs/http.md, "Contract"): the
  /// partition whose rows pass the bound fails with `quarantine_full` and publishes nothing,
  /// those published before it stay.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func quarantineBoundsCountAcrossPartitions(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    func run() throws -> RunReport {
      try runJob(
        folder,
        JobText.header(job: "drift", emulator: emulator) + target.manifestBlock + """
          steps:
            - id: items
              partitions: { list: [{ v: one }, { v: two }, { v: three }] }
              table_stream:
                resource: test_resource
                params: { value: "{v}" }
                load: { contract: { types: discard_row }, quarantine: { table: rejects, max_rows: 1 } }

          """
      ).1
    }
    let first = try run()
    try #require(first.exitCode == 0, "\(first.steps.first?.members.compactMap(\.errorMessage) ?? [])")
    let tables = try #require(first.steps.first?.members.map { $0.tables.first ?? "" })
    #expect(try tables.map { try target.rows("SELECT value FROM \"\($0)\"") } == [[["one"]], [["two"]], [["three"]]])
    // Partition one keeps its row; two and three each set theirs aside: two passes max_rows.
    try change(
      emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#,
      rows: #"[[1, "one"], [2.5, "two"], [3.5, "three"]]"#)
    let report = try run()
    let members = try #require(report.steps.first?.members)
    #expect(report.exitCode == 1)
    #expect(members.map(\.status) == [.succeeded, .succeeded, .failed])
    #expect(members[2].errorCode == "quarantine_full")
    #expect(
      members[2].errorMessage?.contains(
        "2 of 3 rows did not fit the tables (1 set aside, 0 trimmed (type: 1)), more than load.quarantine.max_rows (1) across the partitions of step items; nothing was published"
      ) == true, "\(members[2].errorMessage ?? "")")
    #expect(
      try target.rows("SELECT partition, reason FROM rejects") == [
        ["items[v=two]", "table 'output_table': 'id': 2.5 is real, the column is BIGINT"]
      ])
    #expect(try tables.map { try target.rows("SELECT id, value FROM \"\($0)\"") } == [[["1", "one"]], [], [["3", "three"]]])
  }

  /// A partition's derived quarantine is named by its own tables, not known at run start:
  /// a table of that name that is not a quarantine is refused when the partition's load
  /// would write to it, with the run-start check's message; nothing of it is published.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPartitionsQuarantineNameTakenIsRefusedWhenItLoads(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    func run() throws -> RunReport {
      try runJob(
        folder,
        JobText.header(job: "drift", emulator: emulator) + target.manifestBlock + """
          steps:
            - id: items
              partitions: { list: [{ v: one }, { v: two }] }
              table_stream: { resource: test_resource, params: { value: "{v}" }, load: { contract: { types: discard_row } } }

          """
      ).1
    }
    let first = try run()
    try #require(first.exitCode == 0, "\(first.steps.first?.members.compactMap(\.errorMessage) ?? [])")
    let tables = try #require(first.steps.first?.members.map { $0.tables.first ?? "" })
    try target.execute("CREATE TABLE \"\(tables[1])_rejected\" (id integer)")
    try change(emulator, columns: #"[["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"]]"#, rows: #"[[1, "one"], [2.5, "two"]]"#)
    let report = try run()
    let members = try #require(report.steps.first?.members)
    #expect(members.map(\.status) == [.succeeded, .failed])
    #expect(
      members[1].errorMessage?.contains(
        "step items: table \(tables[1])_rejected exists and is not a quarantine (its columns are id; a quarantine's are run_id, step, partition"
      ) == true, "\(members[1].errorMessage ?? "")")
    #expect(members[1].errorMessage?.contains("nothing of this step was published. Name another table with load.quarantine: NAME") == true)
    #expect(try target.rows("SELECT id, value FROM \"\(tables[1])\"") == [["2", "two"]])
    #expect(try target.rows("SELECT count(*) FROM \"\(tables[1])_rejected\"") == [["0"]])
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
    // The same answer again is kept unchanged: nothing loaded or noted, the changes the
    // table never took named again.
    let again = try runJob(folder, job(load)).1
    let step = try #require(again.steps.first)
    #expect(again.exitCode == 0, "\(step.errorMessage ?? "")")
    #expect(step.unchanged == true)
    #expect(
      step.contract
        == ContractReport(
          quarantine: "fruits_rejected", loaded: 0, setAside: 0, trimmed: 0, byKind: [:], changes: report.steps[0].contract?.changes ?? []))
    #expect(step.notes.contains("scheme 'FRUITS' table 'output_table': new column 'colour' (TEXT) → discard_value"), "\(step.notes)")
    #expect(try target.rows("SELECT count(*) FROM fruits_rejected") == [["1"]])
  }
}
