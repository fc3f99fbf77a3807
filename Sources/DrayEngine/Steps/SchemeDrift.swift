internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// What a `table_stream` step's `load.contract` makes of a scheme that changed since its
/// tables were made (docs/steps.md, "Scheme drift"): the scheme the tables are loaded with,
/// the changes the report names, and how each row of the answer is reshaped to it.
///
/// The server's scheme (`GET schema/`, fetched each run) is compared, per output table, with
/// the table as it stands: its columns by name from the database, their types those the
/// table was last made or loaded with (`_dray_tables.column_types`), never a scheme a
/// `schemes` step kept since (for a table an older dray loaded, which recorded none, the
/// scheme dray keeps for the resource, `_dray_resources`). A table that does not exist yet
/// takes the server's scheme: nothing drifted.
///
/// - A column the server sends that the table lacks follows `new_columns`: `evolve` adds
///   it; `freeze` fails the step before any row loads; `discard_row` sets aside each row
///   holding a value (not null) in it; `discard_value` loads such rows without it, noted.
/// - A column whose type changed follows `types`: `as_given` takes the new type (the table
///   is made again with it, as without a contract); `evolve` widens the kept type to hold
///   the new one (BIGINT → DOUBLE → TEXT; a type dray does not know is taken as given);
///   `freeze` fails; `discard_row` and `discard_value` keep the old type, and a value it
///   does not hold sets its row aside, or is loaded as NULL, noted.
/// - A column the table has that the server no longer sends is kept, after the others, and
///   its rows hold NULL.
final class SchemeDrift {
  /// What a row's value in one of the server's columns does.
  enum Check {
    /// A new column that does not evolve: a row with a value in it is set aside or trimmed.
    case newColumn(HTTPStep.Rule, reason: String)
    /// A retyped column that keeps its old type `kept`: a value it does not hold is set
    /// aside or trimmed.
    case type(HTTPStep.Rule, kept: ColumnType, keptName: String)
  }

  /// How the rows of one output table are reshaped.
  struct Shape {
    let table: String
    let server: [ResourceScheme.Column]
    /// For each column of the loaded table, the index of its value in a server row (after
    /// the row id of a cached resource); nil for a kept column the server no longer sends.
    let sources: [Int?]
    /// By index of the server's column.
    let checks: [Int: Check]
  }

  /// A row set aside or trimmed, for the quarantine.
  struct Noted {
    var record: String
    var reason: String
    var kind: String
    var action: String
  }

  /// The changes, one line each: `scheme 'ORDERS' table 'output_table': new column 'priority' (DOUBLE) → evolve`.
  let changes: [String]
  /// The scheme the tables are loaded with.
  let scheme: ResourceScheme
  /// The tables whose rows are reshaped, by source name; empty when the answer loads as sent.
  let shapes: [String: Shape]
  /// Whether the loaded tables' columns change: a delta cannot apply, full data is asked for.
  let reshapes: Bool

  /// What the last reshaping noted, and the rows it read.
  private(set) var noted: [Noted] = []
  private(set) var rowsRead = 0
  /// The report's `contract`, once the load committed.
  var report: ContractReport?

  /// Compares `server` with the tables as they stand.
  /// - Parameters:
  ///   - kept: the scheme dray keeps for the resource; nil when none. Its types serve only
  ///     a table without `recorded` columns.
  ///   - columns: by source name, the columns of an output table's physical table (empty:
  ///     none) and the columns with types it was last made or loaded with (nil: none
  ///     recorded).
  /// - Throws: `HTTPStepError.badAnswer` for a change under `freeze`, naming table and column.
  init(
    server: ResourceScheme, kept: ResourceScheme?, contract: HTTPStep.Contract, url: String,
    columns: (String) throws -> (names: [String], recorded: [ResourceScheme.Column]?)
  ) throws {
    let newColumns = contract.newColumnsRule(declaredColumns: false) ?? .evolve
    var changes: [String] = []
    var outputs: [ResourceScheme.Table] = []
    var shapes: [String: Shape] = [:]
    var reshapes = false
    for table in server.outputs {
      let found = try columns(table.name)
      var existing = found.names
      if server.isCached { existing.removeAll { IdentifierKey($0) == IdentifierKey(ResourceScheme.rowIDColumn) } }
      guard !existing.isEmpty else {
        outputs.append(table)
        continue
      }
      let keptTypes = Dictionary(
        (found.recorded ?? kept?.outputs.first { $0.name == table.name }?.columns ?? []).map { (IdentifierKey($0.name), $0.type) },
        uniquingKeysWith: { a, _ in a })
      let existingKeys = Set(existing.map(IdentifierKey.init))
      let prefix = "scheme '\(server.name)' table '\(table.name)'"
      func frozen(_ change: String, _ rule: String) -> HTTPStepError {
        .badAnswer(
          page: nil, url: url,
          message: "\(change) (load.contract.\(rule): freeze); nothing of this step was published. "
            + "Change the scheme back, or choose evolve, discard_row or discard_value")
      }
      var loaded: [ResourceScheme.Column] = []
      var sources: [Int?] = []
      var checks: [Int: Check] = [:]
      for (index, column) in table.columns.enumerated() {
        let key = IdentifierKey(column.name)
        guard existingKeys.contains(key) else {
          let change = "\(prefix): new column '\(column.name)' (\(column.type))"
          changes.append("\(change) → \(newColumns.rawValue)")
          switch newColumns {
          case .evolve:
            loaded.append(column)
            sources.append(index)
          case .freeze: throw frozen(change, "new_columns")
          case .discardRow, .discardValue: checks[index] = .newColumn(newColumns, reason: "new column '\(column.name)' (\(column.type))")
          }
          continue
        }
        guard let keptType = keptTypes[key], keptType.uppercased() != column.type.uppercased() else {
          loaded.append(column)
          sources.append(index)
          continue
        }
        let change = "\(prefix): column '\(column.name)' changed type from \(keptType) to \(column.type)"
        changes.append("\(change) → \(contract.types.rawValue)")
        let old = SchemeDrift.columnType(keptType)
        switch contract.types {
        case .asGiven: loaded.append(column)
        case .evolve:
          if let old, let new = SchemeDrift.columnType(column.type) {
            loaded.append(.init(name: column.name, type: SchemeDrift.platformType(old.widened(for: new), given: column.type)))
          } else {
            loaded.append(column)
          }
        case .freeze: throw frozen(change, "types")
        case .discardRow, .discardValue:
          loaded.append(.init(name: column.name, type: keptType))
          if let old { checks[index] = .type(contract.types == .discardRow ? .discardRow : .discardValue, kept: old, keptName: keptType) }
        }
        sources.append(index)
      }
      let sent = Set(table.columns.map { IdentifierKey($0.name) })
      for name in existing where !sent.contains(IdentifierKey(name)) {
        changes.append("\(prefix): column '\(name)' is no longer sent → kept, its rows NULL")
        loaded.append(.init(name: name, type: keptTypes[IdentifierKey(name)] ?? "TEXT"))
        sources.append(nil)
      }
      if sources != Array(0..<table.columns.count).map({ Optional($0) }) || !checks.isEmpty {
        shapes[table.name] = Shape(table: table.name, server: table.columns, sources: sources, checks: checks)
      }
      let before = existing.map { name in "\(IdentifierKey(name)):\(keptTypes[IdentifierKey(name)]?.uppercased() ?? "")" }
      let after = loaded.map { "\(IdentifierKey($0.name)):\($0.type.uppercased())" }
      if before != after { reshapes = true }
      outputs.append(.init(name: table.name, columns: loaded))
    }
    var scheme = server
    scheme.outputs = outputs
    self.scheme = scheme
    self.changes = changes
    self.shapes = shapes
    self.reshapes = reshapes
  }

  /// The type a platform type name stands for: BIGINT, DOUBLE, TEXT; nil for another name.
  static func columnType(_ platform: String) -> ColumnType? {
    switch platform.uppercased() {
    case "BIGINT": .integer
    case "DOUBLE": .real
    case "TEXT": .text
    default: nil
    }
  }

  /// The platform's name of `type`; `given` when it is that type already.
  static func platformType(_ type: ColumnType, given: String) -> String {
    if columnType(given) == type { return given }
    return switch type {
    case .integer: "BIGINT"
    case .real, .numeric: "DOUBLE"
    case .text: "TEXT"
    }
  }

  /// The type of an answer's value, as `ColumnType.holds` judges it; nil for null.
  static func valueType(_ value: JSONValue) -> ColumnType? {
    switch value {
    case .null: nil
    case .bool, .integer: .integer
    case .number(let text): text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? .real : .integer
    case .string, .array, .object: .text
    }
  }

  /// Reshapes the answer in `file` into `output`: each row of a table in `shapes` (in `data`
  /// and `insert_rows`) is mapped to the loaded table's columns, and the rows the contract
  /// sets aside or trims are noted (`noted`). Everything else is written as it came.
  /// - Throws: `LoadError` for an answer that is not JSON.
  func reshape(file: String, into output: String, resource: String) throws {
    noted = []
    rowsRead = 0
    let names = AnswerRewriter(drift: self, writer: nil)
    try parse(file, names, resource: resource)
    guard let writer = ChunkWriter(path: output) else {
      throw LoadError(resource: resource, message: "could not create \(output) to reshape the answer")
    }
    defer { writer.close() }
    let rewriter = AnswerRewriter(drift: self, writer: writer)
    rewriter.names = names.names
    try parse(file, rewriter, resource: resource)
    try writer.flush()
  }

  private func parse(_ file: String, _ handler: AnswerRewriter, resource: String) throws {
    do {
      try JSONEvents.parse(FileChunks(path: file, growing: nil, chunkSize: JSONEvents.chunkSize), into: handler)
    } catch let failure as JSONEvents.Failure {
      throw LoadError(resource: resource, message: "the answer could not be read to apply load.contract: \(failure)")
    }
  }

  /// One row of table `shape` (the row id first for a cached resource): the row to load,
  /// nil when it is set aside.
  func reshaped(_ row: [JSONValue], _ shape: Shape, cached: Bool) -> [JSONValue]? {
    let offset = cached ? 1 : 0
    guard row.count == shape.server.count + offset else { return row }  // the loader refuses it, placed
    rowsRead += 1
    var values = row
    var reasons: [(kind: String, reason: String)] = []
    var setAside = false
    for (index, check) in shape.checks.sorted(by: { $0.key < $1.key }) {
      let value = row[index + offset]
      if value == .null { continue }
      switch check {
      case .newColumn(let rule, let reason):
        reasons.append(("new_column", reason))
        if rule == .discardRow { setAside = true }
      case .type(let rule, let kept, let keptName):
        guard let found = SchemeDrift.valueType(value), !kept.holds(found) else { continue }
        reasons.append(
          ("type", "'\(shape.server[index].name)': \(value.json) is \(found.rawValue.lowercased()), the column is \(keptName)"))
        if rule == .discardRow { setAside = true } else { values[index + offset] = .null }
      }
    }
    if !reasons.isEmpty {
      let record = JSONValue.object(
        (cached ? [(ResourceScheme.rowIDColumn, row[0])] : [])
          + shape.server.enumerated().map { ($0.element.name, row[$0.offset + offset]) })
      noted.append(
        Noted(
          record: record.json, reason: "table '\(shape.table)': " + reasons.map(\.reason).joined(separator: "; "),
          kind: reasons[0].kind, action: setAside ? Quarantine.setAside : Quarantine.trimmed))
    }
    if setAside { return nil }
    return (cached ? [values[0]] : []) + shape.sources.map { $0.map { values[$0 + offset] } ?? .null }
  }
}

/// Writes bytes to a file in 1 MiB pieces.
private final class ChunkWriter {
  let handle: FileHandle
  var buffer: [UInt8] = []

  init?(path: String) {
    guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
      return nil
    }
    self.handle = handle
    buffer.reserveCapacity(1 << 20)
  }

  func write(_ text: String) throws {
    buffer.append(contentsOf: text.utf8)
    if buffer.count >= 1 << 20 { try flush() }
  }

  func flush() throws {
    try handle.write(contentsOf: buffer)
    buffer.removeAll(keepingCapacity: true)
  }

  func close() { try? handle.close() }
}

/// The answer's events, written again with the rows of drifted tables reshaped; without a
/// writer, only the table objects' names are read (the first pass: `data` may come before
/// `name`).
private final class AnswerRewriter: JSONEventHandler {
  let drift: SchemeDrift
  let writer: ChunkWriter?
  /// The table objects' names, in order.
  var names: [String?] = []
  /// Open containers: whether each is an array, and how many items it holds so far.
  private var stack: [(isArray: Bool, count: Int)] = []
  /// The last key of the table object being read.
  private var key: String?
  private var object = -1
  /// The row being built, as nested containers.
  private var building: [(isArray: Bool, items: [JSONValue], keys: [String])] = []
  private var failure: (any Error)?

  init(drift: SchemeDrift, writer: ChunkWriter?) {
    self.drift = drift
    self.writer = writer
  }

  /// Whether a value starting now is a row of a table object's `data` or `insert_rows`.
  private var atRow: Bool { stack.count == 3 && stack[2].isArray && (key == "data" || key == "insert_rows") }

  private func emit(_ text: String) -> Bool {
    guard let writer else { return true }
    do {
      try writer.write(text)
      return true
    } catch {
      failure = error
      return false
    }
  }

  /// The separator before a value in the innermost container (none after an object's key).
  private func separate() -> Bool {
    guard let last = stack.indices.last, stack[last].isArray else { return true }
    stack[last].count += 1
    return stack[last].count > 1 ? emit(",") : true
  }

  func scalar(_ value: JSONValue) -> Bool {
    if !building.isEmpty {
      add(value)
      return true
    }
    if writer == nil, stack.count == 2, key == "name", case .string(let name) = value { names[names.count - 1] = name }
    if atRow { return finishRow(value) }
    return separate() && emit(value.json)
  }

  func start(isArray: Bool) -> Bool {
    if !building.isEmpty || atRow {
      building.append((isArray, [], []))
      return true
    }
    guard separate(), emit(isArray ? "[" : "{") else { return false }
    if stack.count == 1 && !isArray {
      object += 1
      if writer == nil { names.append(nil) }
      key = nil
    }
    stack.append((isArray, 0))
    return true
  }

  func key(_ key: String) -> Bool {
    if !building.isEmpty {
      building[building.count - 1].keys.append(key)
      return true
    }
    if stack.count == 2 { self.key = key }
    guard let last = stack.indices.last else { return true }
    stack[last].count += 1
    return emit((stack[last].count > 1 ? "," : "") + JSONValue.string(key).json + ":")
  }

  func end() -> Bool {
    if let done = building.popLast() {
      let value: JSONValue = done.isArray ? .array(done.items) : .object(Array(zip(done.keys, done.items)))
      if building.isEmpty { return finishRow(value) }
      add(value)
      return true
    }
    guard let closed = stack.popLast() else { return true }
    return emit(closed.isArray ? "]" : "}")
  }

  private func add(_ value: JSONValue) { building[building.count - 1].items.append(value) }

  /// Writes a whole row: reshaped when its table drifted, else as it came.
  private func finishRow(_ value: JSONValue) -> Bool {
    guard writer != nil else { return true }
    var row: JSONValue? = value
    if case .array(let values) = value, object >= 0, object < names.count, let name = names[object],
      let shape = drift.shapes[name]
    {
      row = drift.reshaped(values, shape, cached: drift.scheme.isCached).map(JSONValue.array)
    }
    guard let row else { return true }
    return separate() && emit(row.json)
  }
}
