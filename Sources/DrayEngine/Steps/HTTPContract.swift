internal import DrayJSON
internal import DrayModel
internal import DrayRecords
internal import DrayTarget

/// The data contract of an `http` load's run (`load.contract`, docs/http.md "Contract"):
/// what each record that does not fit the table does before it is staged.
///
/// A field with an empty name (`""`) is never a column: `new_columns: evolve` (and the
/// default) fails on it, naming the record; `freeze` fails; `discard_row` sets the record
/// aside and `discard_value` loads it without the field. A field of `load.primary_key` is
/// never trimmed: under `discard_value` a record whose key does not fit is set aside.
/// A field is a new column when the table exists (or `load.columns` are declared) and has
/// no column of its name; a value does not fit when its column's type (the table's, else the
/// declared one) does not hold it (`ColumnType.holds`); a `merge` record without a value at
/// its primary key is judged by `types`, since no column can evolve to take it. Columns
/// first seen in this run take the type that holds all their values, as they always have.
final class RecordContract {
  let load: HTTPStep.Load
  let newColumns: HTTPStep.Rule?
  let types: HTTPStep.TypeRule
  /// The columns whose types are fixed, by name: the declared ones, then the table's.
  private var fixed: [IdentifierKey: ColumnType?] = [:]
  /// Whether a field without a column is a new column.
  let checksNew: Bool
  /// Fields that are not columns of the table (the deleted mark), never new.
  private let marks: Set<IdentifierKey>
  /// For each column `evolve` widened in this run, the first value that made it widen:
  /// `record 2 holds 5.25` (the record counted from 1 in its page), for the publish's note.
  private(set) var widenings: [IdentifierKey: String] = [:]
  /// Whether a `freeze` failed a record: the step's staged pages are dropped, so that the
  /// next run fetches them again (`StepRunner.runHTTP`).
  private(set) var froze = false

  /// Why a record was set aside or trimmed.
  enum Kind: String, CaseIterable {
    case newColumn = "new_column"
    case type
    case primaryKey = "primary_key"
  }

  struct Finding {
    var kind: Kind
    /// `new column 'priority'`, `'amount': "12.50" is text, the column is INTEGER`.
    var reason: String
  }

  /// What the contract made of a record.
  struct Verdict {
    /// The record as staged; nil when it is set aside.
    var record: Record?
    var findings: [Finding] = []
    /// Columns `evolve` widens for this record.
    var widened: [(name: String, type: ColumnType)] = []
  }

  /// - Parameter table: the columns of `load.table` and their types (empty when it does not
  ///   exist), read when the step starts.
  init(load: HTTPStep.Load, table: [(name: String, type: ColumnType?)]) {
    self.load = load
    newColumns = load.contract.newColumnsRule(declaredColumns: load.columns != nil)
    types = load.contract.types
    for column in load.columns ?? [] { fixed[IdentifierKey(column.name)] = column.type }
    for column in table { fixed[IdentifierKey(column.name)] = column.type }
    checksNew = !table.isEmpty || load.columns != nil
    var marks: Set<IdentifierKey> = [IdentifierKey(RecordChecks.deletedColumn)]
    if let deleted = load.deleted, deleted.tokens.count == 1 { marks.insert(IdentifierKey(deleted.tokens[0])) }
    self.marks = marks
  }

  /// Whether the reader keeps the fields declared columns do not name (`RecordReader.keepingExtra`).
  var keepsExtraFields: Bool { load.columns != nil && newColumns != nil }

  /// The columns a page's records are staged with, from those inferred from them: a new
  /// column that does not evolve is not staged (its values are trimmed or set aside), and a
  /// column of fixed type keeps it unless `types` lets the values through (`as_given`) or
  /// widens it (`evolve`).
  func staged(_ inferred: [(name: String, type: ColumnType?)]) -> [(name: String, type: ColumnType?)] {
    inferred.compactMap { column in
      // A field with an empty name is never a column (`apply`).
      guard !column.name.isEmpty else { return nil }
      let key = IdentifierKey(column.name)
      guard let known = fixed[key] else {
        return checksNew && newColumns != .evolve && !marks.contains(key) ? nil : column
      }
      guard let type = known else { return column }
      switch types {
      case .asGiven: return column
      case .evolve: return (column.name, type.widened(for: column.type))
      case .freeze, .discardRow, .discardValue: return (column.name, type)
      }
    }
  }

  /// Judges record `number` (from 1, in its page).
  /// - Throws: `RecordError` naming the record and field under `freeze`.
  func apply(_ record: Record, number: Int) throws -> Verdict {
    if load.write == .merge {
      for name in load.primaryKey {
        let value = record.first { IdentifierKey($0.name) == IdentifierKey(name) }?.value
        guard value == nil || value == .null else { continue }
        let reason = "no value at the primary key /\(name)"
        switch types {
        case .asGiven, .evolve: break  // `RecordChecks` refuses the page, as it always has.
        case .freeze: throw frozen(number, reason, rule: "types")
        case .discardRow, .discardValue: return Verdict(record: nil, findings: [Finding(kind: .primaryKey, reason: reason)])
        }
      }
    }
    var verdict = Verdict()
    var kept: Record = []
    var setAside = false
    // A record whose deleted mark is true deletes its row and is never written as one: it
    // needs only its key and the mark, so a field the table lacks or a value that does not
    // fit is left out of it, not judged (a tombstone often carries `deleted_at`).
    let tombstone = isTombstone(record)
    for field in record {
      if tombstone && !isKey(IdentifierKey(field.name)) && field.name != load.deleted?.tokens.first && !fits(field) { continue }
      // No database column can be named "": such a field is never one, whatever the rules.
      if field.name.isEmpty {
        guard let rule = newColumns else { continue }  // declared columns: unnamed fields are not loaded
        let reason = "an empty field name (\"\")"
        switch rule {
        case .evolve:
          throw RecordError(
            "record \(number): \(reason) cannot be a column (load.contract.new_columns: evolve); nothing of this step was "
              + "published. Set load.contract.new_columns: discard_value to load the record without it, or discard_row "
              + "to set the record aside in the quarantine")
        case .freeze: throw frozen(number, reason, rule: "new_columns")
        case .discardRow:
          verdict.findings.append(Finding(kind: .newColumn, reason: reason))
          setAside = true
        case .discardValue: verdict.findings.append(Finding(kind: .newColumn, reason: reason))
        }
        continue
      }
      let key = IdentifierKey(field.name)
      // A boolean is stored as 1 or 0: at a key it would merge into the row of that key.
      if case .boolean(let flag) = field.value, isKey(key) {
        let reason = "'\(field.name)': \(flag) is a boolean, which is not a primary key value"
        switch types {
        case .asGiven, .evolve: kept.append(field)  // `RecordChecks` refuses the page.
        case .freeze: throw frozen(number, reason, rule: "types")
        case .discardRow, .discardValue:
          verdict.findings.append(Finding(kind: .type, reason: reason))
          setAside = true
        }
        continue
      }
      guard let known = fixed[key] else {
        guard checksNew, !marks.contains(key), let rule = newColumns, rule != .evolve else {
          kept.append(field)
          continue
        }
        let reason = "new column '\(field.name)'"
        if rule == .freeze { throw frozen(number, reason, rule: "new_columns") }
        verdict.findings.append(Finding(kind: .newColumn, reason: reason))
        // A record without its key cannot be loaded: a key is never trimmed.
        if rule == .discardRow || isKey(key) { setAside = true }
        continue
      }
      let found = field.value.inferredType
      let exact = field.value.fitsADouble
      guard let type = known, !type.holds(found, integersFitADouble: exact), let found else {
        kept.append(field)
        continue
      }
      let kind =
        if case .bigInteger = field.value {
          "an integer beyond 64 bits"
        } else if !exact {
          "an integer beyond ±2^53, which a double may not hold exactly"
        } else {
          found.rawValue.lowercased()
        }
      let reason = "'\(field.name)': \(RecordContract.json(field.value).json) is \(kind), the column is \(type.rawValue)"
      switch types {
      case .asGiven: kept.append(field)
      case .evolve:
        kept.append(field)
        let wider = type.widened(for: found, integersFitADouble: exact)
        fixed[key] = wider
        verdict.widened.append((field.name, wider))
        if widenings[key] == nil { widenings[key] = "record \(number) holds \(RecordContract.json(field.value).json)" }
      case .freeze: throw frozen(number, reason, rule: "types")
      case .discardRow:
        verdict.findings.append(Finding(kind: .type, reason: reason))
        setAside = true
      case .discardValue:
        verdict.findings.append(Finding(kind: .type, reason: reason))
        // A record without its key cannot be loaded: a key is never trimmed.
        if isKey(key) { setAside = true }
      }
    }
    verdict.record = setAside ? nil : kept
    return verdict
  }

  /// Whether `record`'s deleted mark (`load.deleted`) is true.
  private func isTombstone(_ record: Record) -> Bool {
    guard let deleted = load.deleted else { return false }
    switch RecordChecks.resolve(deleted, in: record) {
    case .bool(true)?, .integer(1)?: return true
    default: return false
    }
  }

  /// Whether `field` goes into the table as it is: a column of its name holds its value, or
  /// it makes a new column the rules let in.
  private func fits(_ field: (name: String, value: RecordValue)) -> Bool {
    guard !field.name.isEmpty else { return false }
    let key = IdentifierKey(field.name)
    guard let known = fixed[key] else { return !checksNew || marks.contains(key) || newColumns == nil || newColumns == .evolve }
    guard let type = known else { return true }
    return type.holds(field.value.inferredType, integersFitADouble: field.value.fitsADouble)
  }

  /// Whether `key` names a field of `load.primary_key`: a value there that does not fit is
  /// never trimmed (the record could not be merged without it), the record is set aside.
  private func isKey(_ key: IdentifierKey) -> Bool {
    load.primaryKey.contains { IdentifierKey($0) == key }
  }

  /// The `freeze` failure of record `number`, with the rules `rule` may choose instead: with
  /// declared `columns`, `new_columns: evolve` is refused at validation, so the advice names
  /// declaring the column instead.
  private func frozen(_ number: Int, _ reason: String, rule: String) -> RecordError {
    froze = true
    let advice =
      rule == "new_columns" && load.columns != nil
      ? "Declare the column in load.columns, or choose discard_row or discard_value"
      : "Change the table or the API to match, or choose evolve, discard_row or discard_value"
    return RecordError("record \(number): \(reason) (load.contract.\(rule): freeze); nothing of this step was published. \(advice)")
  }

  /// A record's value as JSON (nested arrays and objects were read as their JSON text).
  static func json(_ value: RecordValue) -> JSONValue {
    switch value {
    case .null: .null
    case .integer(let i): .integer(i)
    case .boolean(let b): .bool(b)
    case .real(let d): .number("\(d)")
    case .decimal(let text): .number(text)
    case .text(let t): .string(t)
    case .bigInteger(let digits): .number(digits)
    }
  }

  /// A record as a JSON object of its fields, for the quarantine.
  static func json(_ record: Record) -> String { JSONValue.object(record.map { ($0.name, json($0.value)) }).json }
}

/// The quarantine of an `http` load (`load.quarantine`, docs/http.md "Contract"): records
/// the contract set aside or trimmed, staged with the page they came from (in its
/// transaction) and appended to the quarantine table with the load.
enum Quarantine {
  /// The quarantine table's columns, all text, in order: what makes a table a quarantine.
  static let columns = ["run_id", "step", "partition", "page_url", "record", "reason", "kind", "action"]

  /// `action`: the record was not loaded.
  static let setAside = "set_aside"
  /// `action`: the record was loaded without the fields named in `reason`.
  static let trimmed = "trimmed"

  /// The staging table of a step's quarantined records: `_dray_http_rejected__<job>__<step>`.
  static func staging(job: String, step: String) -> String { "_dray_http_rejected__\(job)__\(step)" }

  /// What a run's quarantine came to, for the report and the bounds.
  struct Counts: Equatable {
    var setAside = 0
    var trimmed = 0
    /// Records by the kind of their first reason (`RecordContract.Kind`).
    var byKind: [String: Int] = [:]
    var total: Int { setAside + trimmed }

    /// Reads the staged quarantine `staged` (columns as `Quarantine.columns`).
    init(_ staged: any StagedTable) throws {
      let names = staged.columns.map { IdentifierKey($0.name) }
      guard let kind = names.firstIndex(of: IdentifierKey("kind")), let action = names.firstIndex(of: IdentifierKey("action")) else {
        return
      }
      try staged.forEachRow { row in
        if case .text(let word) = row[action], word == Quarantine.trimmed { trimmed += 1 } else { setAside += 1 }
        if case .text(let word) = row[kind] { byKind[word, default: 0] += 1 }
      }
    }

    init() {}

    /// `2 set aside, 1 trimmed (new_column: 2, type: 1)`.
    var summary: String {
      "\(setAside) set aside, \(trimmed) trimmed ("
        + byKind.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        + ")"
    }
  }
}

/// The quarantined records of one page, staged in its transaction (`Quarantine.staging`).
struct Quarantined {
  let table: any StagedTable
  let runID: String
  let step: String
  /// The member's step id, for a partition of a partitioned step.
  let partition: String?
  /// The page's URL as stored (`StepRunner.storedURL`): every secret masked.
  let url: String

  /// Stages `record` with what `verdict` found in it.
  func add(_ record: Record, _ verdict: RecordContract.Verdict) throws {
    if table.columns.isEmpty { try table.prepare(Quarantine.columns.map { ($0, .text) }, widen: false) }
    let values: [SQLValue] = [
      .text(runID), .text(step), partition.map { .text($0) } ?? .null, .text(url), .text(RecordContract.json(record)),
      .text(verdict.findings.map(\.reason).joined(separator: "; ")), .text(verdict.findings.first?.kind.rawValue ?? ""),
      .text(verdict.record == nil ? Quarantine.setAside : Quarantine.trimmed),
    ]
    try table.insert(Array(zip(Quarantine.columns, values)).map { (name: $0.0, value: $0.1) })
  }
}

extension Quarantine {
  /// A quarantine some step of a job writes to: an `http` load's, or a `table_stream`
  /// load's under `load.contract` (docs/steps.md, "Scheme drift").
  enum Load {
    case http(HTTPStep.Load)
    /// `partitioned`: each partition loads tables of its own parameters.
    case tableStream(TableStreamStep, partitioned: Bool)

    /// The quarantine's name in `store`; nil for a `table_stream` load whose derived name
    /// (`<first output table>_rejected`) is not known yet: its resource has no scheme in the
    /// store, or each partition names its own tables. The load checks such a name itself
    /// (`StepRunner.quarantine`), with the same message (`refusal`).
    func name(in store: any TargetStore) throws -> String? {
      switch self {
      case .http(let load): return store.naming.quarantine(of: load.table, named: load.quarantine.table)
      case .tableStream(let options, let partitioned):
        if let named = options.quarantine.table { return store.naming.quarantine(of: named, named: named) }
        guard !partitioned, let scheme = try store.scheme(for: options.resource), let first = scheme.outputs.first else { return nil }
        let table = store.naming.physicalName(resource: scheme.name, table: first.name, params: options.params)
        return store.naming.quarantine(of: table, named: nil)
      }
    }
  }

  /// The first load of `manifest` (`loads`) whose quarantine is a table of `store` that is
  /// not a quarantine (its columns are not `Quarantine.columns`), as a message naming the
  /// step, the table and what to do; nil when there is none. Checked when a run starts,
  /// before any step.
  static func clash(in manifest: Manifest, store: () throws -> any TargetStore) throws -> String? {
    let loads = Quarantine.loads(manifest.steps)
    guard !loads.isEmpty else { return nil }
    let store = try store()
    for (id, load) in loads {
      guard let name = try load.name(in: store) else { continue }
      let columns = try store.write { try $0.columnTypes(ofTable: name) }.map(\.name)
      if let refusal = refusal(step: id, table: name, columns: columns, outcome: "nothing was run") { return refusal }
    }
    return nil
  }

  /// The refusal of table `table` as the quarantine of step `step`, with `columns`: nil
  /// when it does not exist or is a quarantine. `outcome` says what was left undone.
  static func refusal(step: String, table: String, columns: [String], outcome: String) -> String? {
    guard !columns.isEmpty, columns.map(IdentifierKey.init) != Quarantine.columns.map(IdentifierKey.init) else { return nil }
    return "step \(step): table \(table) exists and is not a quarantine (its columns are \(columns.joined(separator: ", ")); "
      + "a quarantine's are \(Quarantine.columns.joined(separator: ", "))), so the records load.contract sets aside cannot go there; "
      + "\(outcome). Name another table with load.quarantine: NAME, or rename yours"
  }

  /// The loads of `steps` that quarantine, those of parallel groups included, by step id.
  static func loads(_ steps: [Step]) -> [(id: String, load: Load)] {
    steps.flatMap { step -> [(id: String, load: Load)] in
      switch step.kind {
      case .http(let http): http.load.map { [(step.id, .http($0))] } ?? []
      case .tableStream(let options) where options.contract != nil:
        [(step.id, .tableStream(options, partitioned: step.partitions != nil))]
      case .parallel(let group): loads(group.steps)
      default: []
      }
    }
  }
}
