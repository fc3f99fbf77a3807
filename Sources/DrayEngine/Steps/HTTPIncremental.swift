internal import DrayJSON
internal import DrayModel
internal import DrayRecords
internal import DrayTarget
internal import Foundation

/// The cursor of one run of an `incremental` step (docs/http.md, "Incremental loads").
///
/// The value sent is the kept one (`CursorLedger`) moved back by `lag`, or `initial` before
/// any is kept or under `--fresh`. Each page's highest cursor is staged in the
/// transaction that commits the page; the transaction that publishes the pages keeps the
/// highest of the kept and the staged value, so the kept cursor never moves backwards.
final class IncrementalRun {
  let options: HTTPStep.Incremental
  let job: String
  let stepID: String
  /// What the store kept when the run started, then as the pages staged it.
  private(set) var entry: CursorEntry
  /// The value this run sends on its first page.
  let sent: IncrementalCursor.Value
  private let fresh: Bool
  /// The kept value (nil before any, and under `--fresh`), and the digests of the records
  /// at it that the runs which kept it handled (`CursorEntry.boundary`; nil when unknown).
  private let keptValue: IncrementalCursor.Value?
  private let remembered: Set<String>?
  /// How many records at the kept value `isRemembered` found that the contract set aside or
  /// trimmed, and that were not quarantined again.
  private(set) var unquarantined = 0
  /// The records at the kept value this run read and neither loaded nor set aside: those
  /// `append` did not append again, those set aside and not quarantined again.
  private(set) var passedOver = 0
  /// Why the digests of the records at the cursor kept by `publish` are unknown, for its
  /// note; nil when they are known.
  private var boundaryDropped: String?

  /// - Parameter kept: what the store keeps for the step (`StoreTransaction.cursor`).
  /// - Throws: `HTTPStepError.cursorBoundary` when the step is `exclusive` and the kept
  ///   value has no predecessor to send (`HTTPStep.Incremental.sent(kept:)`).
  init(options: HTTPStep.Incremental, kept: CursorEntry, job: String, stepID: String, fresh: Bool) throws {
    self.options = options
    self.job = job
    self.stepID = stepID
    self.fresh = fresh
    entry = kept
    let kept = fresh ? nil : entry.value.flatMap(IncrementalCursor.Value.init(json:))
    if let kept {
      guard let sent = options.sent(kept: kept) else { throw HTTPStepError.cursorBoundary(options.noValueBelow(kept: kept)) }
      self.sent = sent
      below = options.boundary == .exclusive && options.lag == nil ? sent : nil
    } else {
      sent = options.initial
      below = nil
    }
    keptValue = kept
    // An exclusive number cursor gets back the records between the value sent and the kept
    // one, not only those at it (an API may hold finer values than it wrote): those are
    // recognised by the table's rows (`readKeptRows`), as the digests cover the kept value alone.
    remembered = kept == nil || (below != nil && kept?.isNumber == true) ? nil : entry.boundary
  }

  /// Whether `record` (as read, before the contract) is at the kept value and its digest
  /// (`digest`) is among those the runs that kept it handled: the same version an earlier
  /// run appended, merged, set aside or trimmed (docs/http.md, "Cursor boundaries").
  func isRemembered(_ record: Record, digest: () -> String) -> Bool {
    guard let keptValue, let remembered, !remembered.isEmpty, let found = value(in: record),
      let value = IncrementalCursor.Value(json: found), value.compare(keptValue) == 0
    else { return false }
    return remembered.contains(digest())
  }

  /// Counts a record at the kept value `isRemembered` found, of which the contract said
  /// `verdict`: one it set aside or trimmed is not quarantined again (`unquarantined`);
  /// under `append` (`appending`) none is appended again (`repeats`, for those that fit).
  /// - Returns: whether the record is still loaded: under `merge`, one not set aside is
  ///   merged again, unchanged.
  func passOver(_ verdict: RecordContract.Verdict, appending: Bool) -> Bool {
    if !verdict.findings.isEmpty {
      unquarantined += 1
    } else if appending {
      repeats += 1
    }
    guard appending || verdict.record == nil else { return true }
    passedOver += 1
    return false
  }

  /// The SHA-256 (lowercase hex) of `record` as read: its fields sorted by name (their
  /// UTF-8 bytes), as the compact JSON object of `RecordContract.json`. The same record
  /// sent again, in any member order, has the same digest; one changed in any value does not.
  static func digest(of record: Record) -> String {
    let sorted = record.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    return SHA256.hex(RecordContract.json(sorted))
  }

  /// For an `exclusive` step without `lag`: the value sent, below the kept one. The records
  /// above it and at or below the kept value come back (docs/http.md, "Cursor boundaries"),
  /// and `append` recognises those it loaded already (`readKeptRows`).
  private let below: IncrementalCursor.Value?

  /// Starts staging afresh (no page of an earlier run is resumed), in the caller's
  /// transaction of the staging database.
  func start(in transaction: any StagingTransaction) throws {
    entry.staged = nil
    entry.stagedBoundary = nil
    entry.fresh = fresh
    try transaction.saveCursor(entry, job: job, stepID: stepID)
  }

  /// Raises the staged value to `highest` (the highest cursor of a page), in the page's
  /// transaction, with the digests of the records at it (`boundary`, the page's records at
  /// its highest value, `RecordChecks.boundary`): they replace the staged digests when the
  /// value rises and join them when it stays.
  /// Lowered to `ceiling` once a record came twice (`see`, for each of `seen`: the page's
  /// primary keys and cursors, `RecordChecks.keys`); the digests are then unknown.
  func stage(
    _ highest: IncrementalCursor.Value?, boundary: RecordChecks.Boundary? = nil,
    seen: [(key: String, value: IncrementalCursor.Value)] = [], in transaction: any StagingTransaction
  ) throws {
    for (key, value) in seen { see(key: key, value: value) }
    let staged = entry.staged.flatMap(IncrementalCursor.Value.init(json:))
    var next = staged
    var digests = entry.stagedBoundary
    let pageDigests = boundary.flatMap { boundary in highest.map { boundary.value.compare($0) == 0 } == true ? boundary.digests : nil }
    if let highest, next.map({ (highest.compare($0) ?? -1) > 0 }) ?? true {
      next = highest
      digests = pageDigests
    } else if let highest, let current = next, highest.compare(current) == 0 {
      digests = digests.flatMap { kept in pageDigests.map { kept.union($0) } }
    }
    if let ceiling, let value = next, (value.compare(ceiling) ?? -1) > 0 {
      next = ceiling
      digests = nil
    }
    if let count = digests?.count, count > CursorEntry.limit { digests = nil }
    guard let next, next.json != staged?.json || digests != entry.stagedBoundary else { return }
    entry.staged = next.json
    entry.stagedBoundary = digests
    try transaction.saveCursor(entry, job: job, stepID: stepID)
  }

  /// The cursor each primary key had when the pull first saw it.
  private var firstSeen: [String: IncrementalCursor.Value] = [:]
  /// The lowest first-seen cursor of a record the pull saw twice, and that record's key.
  private(set) var ceiling: IncrementalCursor.Value?
  private var movedKey: String?

  /// Notes that the pull saw the record of primary key `key` (its values' text) at
  /// `value`. A record seen twice in one pull changed while the pull was between pages,
  /// and on an API that pages by number or offset its move shifted the records after it:
  /// one at or above its first value may have been passed over. The kept cursor then stays
  /// at that first value (`ceiling`), and the next run reads again from there
  /// (docs/http.md, "Cursor boundaries").
  private func see(key: String, value: IncrementalCursor.Value) {
    guard let earlier = firstSeen[key] else {
      firstSeen[key] = value
      return
    }
    if ceiling.map({ (earlier.compare($0) ?? 1) < 0 }) ?? true {
      ceiling = earlier
      movedKey = key
    }
  }

  /// Keeps the highest of the kept and staged values (only the staged one after a fresh
  /// start), in the transaction that publishes the pages.
  /// With it, the digests of the records at the value kept (`CursorEntry.boundary`): the
  /// staged ones when the value rises, those joined with the kept ones when it stays, the
  /// kept ones when no staged record reached it.
  func publish(_ notes: inout [String], in transaction: any StoreTransaction) throws {
    let kept = entry.fresh ? nil : entry.value.flatMap(IncrementalCursor.Value.init(json:))
    let staged = entry.staged.flatMap(IncrementalCursor.Value.init(json:))
    var next = kept ?? staged
    var digests = kept == nil ? entry.stagedBoundary : entry.boundary
    if let kept, let staged {
      switch staged.compare(kept) {
      case 1?:
        next = staged
        digests = entry.stagedBoundary
      case 0?: digests = entry.stagedBoundary.map { $0.union(entry.boundary ?? []) }
      default: break
      }
    }
    if let count = digests?.count, count > CursorEntry.limit { digests = nil }
    if next != nil, entry.staged != nil, digests == nil {
      boundaryDropped =
        ceiling != nil
        ? "a record moved while the pull was between pages"
        : "more than \(CursorEntry.limit) records share it, or the run resumed pages staged by a dray that kept none"
    }
    entry = CursorEntry(value: next?.json, boundary: next == nil ? nil : digests)
    try transaction.saveCursor(entry, job: job, stepID: stepID)
    notes.append("kept cursor \(next?.text ?? "none (the next run sends initial)")")
    if let boundaryDropped, let next {
      notes.append(
        "the records at the kept cursor \(next.text) are not remembered (\(boundaryDropped)): the next run compares those it "
          + "gets again with the table's rows (append) and quarantines again those the contract sets aside")
    }
    if let ceiling, let movedKey {
      notes.append(
        "the record \(movedKey) changed while the pull was between pages, so records after its first cursor \(ceiling.text) "
          + "may have moved past the pages read: the kept cursor goes no further than that, and the next run reads from there")
    }
    if repeats > 0 {
      notes.append(
        "\(repeats) record\(repeats == 1 ? "" : "s") at the kept cursor \((keptRowsAt ?? keptValue)?.text ?? "")"
          + "\(keptRowsAbove.map { " (or below it, above \($0.text), the value sent)" } ?? "") already appended by an earlier run "
          + "\(repeats == 1 ? "was" : "were") not appended again")
    }
    if unquarantined > 0 {
      notes.append(
        "\(unquarantined) record\(unquarantined == 1 ? "" : "s") at the kept cursor \(keptValue?.text ?? "") already set aside or "
          + "trimmed by an earlier run \(unquarantined == 1 ? "was" : "were") not quarantined again")
    }
  }

  /// The value the cursor pointer selects in `record`, for checks.
  ///
  /// An integer beyond 64 bits is compared by its digits (docs/http.md, "Precision"); where
  /// the value sent is a number, a string of such digits is read as that number too.
  func value(in record: Record) -> JSONValue? {
    let found = RecordChecks.resolve(options.cursor, in: record)
    if case .string(let text)? = found, sent.isNumber, IncrementalCursor.isLongInteger(text) { return .number(text) }
    return found
  }

  /// For `append`: the rows `table` holds at the kept value (for a number sent `exclusive`:
  /// above the value sent and at or below the kept one),
  /// each as the text of its values by column, with how many such rows there are. The
  /// records at the kept value come back in each run (docs/http.md, "Cursor boundaries"),
  /// and one equal to such a row is the version an earlier run appended (`isRepeat`).
  private var keptRows: [[IdentifierKey: String]: Int] = [:]
  private var keptColumns: Set<IdentifierKey> = []
  /// The kept value `keptRows` were read at, and the value sent when they were read above it.
  private var keptRowsAt: IncrementalCursor.Value?
  private var keptRowsAbove: IncrementalCursor.Value?
  /// How many records `isRepeat` found appended by an earlier run.
  private(set) var repeats = 0

  /// Reads `keptRows` from `table` of `target`: nothing without a kept value (or under
  /// `--fresh`), when the table does not exist, lacks the cursor's column, or the cursor
  /// points inside a column's JSON.
  /// - Throws: the database's errors.
  /// - Parameter columns: the table's columns (none when it does not exist).
  func readKeptRows(from target: any TargetStore, table: String, columns names: [String]) throws {
    guard !fresh, remembered == nil, options.cursor.tokens.count == 1, let column = options.cursor.tokens.first,
      let kept = entry.value.flatMap(IncrementalCursor.Value.init(json:))
    else { return }
    let columns = names.map(IdentifierKey.init)
    guard columns.contains(IdentifierKey(column)) else { return }
    func quoted(_ name: String) -> String { "\"" + name.replacing("\"", with: "\"\"") + "\"" }
    func literal(_ value: IncrementalCursor.Value) -> String {
      switch RecordValue(writtenJSON: value.json).sqlValue {
      case .integer(let i): String(i)
      // The double the table's REAL column holds for it (`RecordValue.decimal`).
      case .real(let d): String(d)
      case .text(let t): "'" + t.replacing("'", with: "''") + "'"
      case .null, .blob: "NULL"
      }
    }
    // A number sent as one unit of its last written digit less: the API may hold values
    // between the two (finer fractions), which come back too. (An integer beyond 64 bits is
    // TEXT in the table, where only equality compares as the number does.)
    var condition = "\(quoted(column)) = \(literal(kept))"
    if let below, kept.isNumber, !literal(kept).hasPrefix("'"), !literal(below).hasPrefix("'") {
      condition = "\(quoted(column)) > \(literal(below)) AND \(quoted(column)) <= \(literal(kept))"
      if kept.isWrittenDecimal { keptRowsAbove = below }
    }
    var names: [String] = []
    try target.query(
      "SELECT * FROM \(quoted(table)) WHERE \(condition)", columns: { names = $0 },
      row: { row in
        var key: [IdentifierKey: String] = [:]
        for (name, value) in zip(names, row) where value != .null {
          key[IdentifierKey(name)] = IncrementalRun.text(value)
        }
        keptRows[key, default: 0] += 1
      })
    keptColumns = Set(columns)
    keptRowsAt = kept
  }

  /// Whether `record` (as staged for `append`) equals a row `readKeptRows` found, one not
  /// yet matched: the same non-null value in each column and null in the others.
  func isRepeat(_ record: Record) -> Bool {
    guard !keptRows.isEmpty else { return false }
    var key: [IdentifierKey: String] = [:]
    for field in record where field.name != RecordChecks.deletedColumn && field.value != .null {
      let name = IdentifierKey(field.name)
      guard keptColumns.contains(name) else { return false }
      key[name] = IncrementalRun.text(field.value.sqlValue)
    }
    guard let count = keptRows[key] else { return false }
    keptRows[key] = count > 1 ? count - 1 : nil
    repeats += 1
    passedOver += 1
    return true
  }

  /// A value as text that tells its kind, numbers that are whole read as integers (a
  /// database may give a REAL column's 2.0 back as 2).
  private static func text(_ value: SQLValue) -> String {
    switch value {
    case .null: "n"
    case .integer(let i): "i\(i)"
    case .real(let d): d == d.rounded() && abs(d) < 9.0e15 ? "i\(Int64(d))" : "r\(d)"
    case .text(let t): "t" + t
    case .blob(let b): "b\(b)"
    }
  }
}

/// A record's digest (`IncrementalRun.digest`), computed when first asked and only once.
final class RecordDigest {
  private let record: Record
  private var digest: String?

  init(_ record: Record) { self.record = record }

  func value() -> String {
    if let digest { return digest }
    let computed = IncrementalRun.digest(of: record)
    digest = computed
    return computed
  }
}

/// What a load checks in each record before it is staged: its primary key (`merge`), its
/// cursor (`incremental`), and whether the API marks it deleted (`load.deleted`, kept in
/// the staging column `_dray_deleted`).
struct RecordChecks {
  let load: HTTPStep.Load
  let cursors: IncrementalRun?
  /// The highest cursor among the records checked.
  private(set) var highest: IncrementalCursor.Value?
  /// The records at one cursor value: the value and their digests (`IncrementalRun.digest`).
  struct Boundary {
    var value: IncrementalCursor.Value
    var digests: Set<String>
  }
  /// The page's records at the highest cursor among those `noteBoundary` saw.
  private(set) var boundary: Boundary?
  /// For `merge`: each record's primary key (its values' text) and cursor, in order.
  private(set) var keys: [(key: String, value: IncrementalCursor.Value)] = []
  private var number = 0
  /// Whether `load.deleted` selected a value in a record checked, and the near spelling a
  /// record held where it selected none (`finish`).
  private var deletedMatched = false
  private var deletedNear: JSONPointer?

  /// The staging column that holds 1 for a record the API marks deleted.
  static let deletedColumn = "_dray_deleted"

  init(load: HTTPStep.Load, cursors: IncrementalRun?) {
    self.load = load
    self.cursors = cursors
  }

  /// Columns the staging table holds beside the records'.
  var extraColumns: [(name: String, type: ColumnType?)] {
    load.deleted == nil ? [] : [(RecordChecks.deletedColumn, .integer)]
  }

  /// `record` as staged.
  /// - Throws: `RecordError` naming the record (counted from 1 in its page) when its
  ///   primary key is missing or null, its cursor is missing or does not compare with the
  ///   cursor sent, or its deleted mark is not a boolean.
  mutating func check(_ record: Record) throws -> Record {
    number += 1
    for name in load.write == .merge ? load.primaryKey : [] {
      let value = record.first { IdentifierKey($0.name) == IdentifierKey(name) }?.value
      if value == nil || value == .null {
        throw RecordError(
          "record \(number) has no value for the primary key '\(name)' (load.primary_key), so it cannot be merged; "
            + "nothing of this page was loaded. Name fields every record holds in primary_key")
      }
      if case .boolean(let flag)? = value {
        throw RecordError(
          "record \(number) has the boolean \(flag) at the primary key '\(name)' (load.primary_key), which is not a key value "
            + "(stored as \(flag ? 1 : 0), it would merge into the row of that key); nothing of this page was loaded. "
            + "Set load.contract.types: discard_row to set such records aside")
      }
    }
    if let cursors {
      let pointer = cursors.options.cursor
      guard let found = cursors.value(in: record), found != .null else {
        let fix =
          cursors.value(in: record) == nil
          ? RecordChecks.nearSpelling(pointer, in: record).map { "Did you mean '\($0)'?" } : nil
        throw RecordError(
          "record \(number) has no value at the cursor '\(pointer)' (incremental.cursor), so dray cannot tell how far it has read; "
            + "nothing of this page was loaded. \(fix ?? "Point incremental.cursor at a field every record holds, such as /updated_at")")
      }
      guard let value = IncrementalCursor.Value(json: found), value.compare(cursors.sent) != nil else {
        let kind = IncrementalCursor.Value(json: found)?.kind ?? "neither a string nor a number"
        throw RecordError(
          "record \(number) has the cursor \(found.json) at '\(pointer)', which is \(kind) and cannot be compared with "
            + "\(cursors.sent.text) (\(cursors.sent.kind)), the value sent as \(cursors.options.param); nothing of this page was loaded. "
            + "Cursors compare as numbers, as RFC 3339 instants or as text; give incremental.initial in the API's form")
      }
      if highest.map({ value.compare($0) == 1 }) ?? true { highest = value }
      if load.write == .merge {
        let key = load.primaryKey.map { name in
          record.first { IdentifierKey($0.name) == IdentifierKey(name) }.map { "\(name) \($0.value.sqlValue)" } ?? ""
        }
        keys.append((key.joined(separator: ", "), value))
      }
    }
    guard let deleted = load.deleted else { return record }
    let mark: Int64
    let found = RecordChecks.resolve(deleted, in: record)
    if found != nil {
      deletedMatched = true
    } else if deletedNear == nil {
      deletedNear = RecordChecks.nearSpelling(deleted, in: record)
    }
    switch found {
    case nil, .null?, .bool(false)?, .integer(0)?: mark = 0
    case .bool(true)?, .integer(1)?: mark = 1
    case let other?:
      throw RecordError(
        "record \(number) has \(other.json) at '\(deleted)' (load.deleted), which is not a boolean; nothing of this page was loaded")
    }
    return record + [(RecordChecks.deletedColumn, .integer(mark))]
  }

  /// Notes `record` (as read, before the contract) for `boundary`: its digest (`digest`,
  /// asked only for a record at or above the highest value seen) joins the digests at its
  /// value, or replaces them when its value is higher. A record whose cursor is missing or
  /// does not compare is passed over here (`check` refuses it, if it is loaded).
  mutating func noteBoundary(_ record: Record, digest: () -> String) {
    guard let cursors, let found = cursors.value(in: record), let value = IncrementalCursor.Value(json: found),
      value.compare(cursors.sent) != nil
    else { return }
    guard var boundary else {
      self.boundary = Boundary(value: value, digests: [digest()])
      return
    }
    switch value.compare(boundary.value) {
    case 1?: self.boundary = Boundary(value: value, digests: [digest()])
    case 0?:
      self.boundary = nil
      boundary.digests.insert(digest())
      self.boundary = boundary
    default: break
    }
  }

  /// Raises the highest cursor to that of `record`, a record the contract set aside
  /// (docs/http.md, "Contract"): it was seen whole, so the next run need not ask for it
  /// again. A record whose cursor is missing or does not compare is passed over here.
  mutating func notice(_ record: Record) {
    guard let cursors, let found = cursors.value(in: record), let value = IncrementalCursor.Value(json: found),
      value.compare(cursors.sent) != nil
    else { return }
    if highest.map({ value.compare($0) == 1 }) ?? true { highest = value }
  }

  /// Checks what the page's records said together, once all are checked: a `load.deleted`
  /// that selected nothing in any of them while one held a near spelling is taken as
  /// misspelt (docs/http.md, "A misspelt selector"), since read as absent it would load every
  /// deleted record as a live row. A page without deletes, whose records lack the member and
  /// any near name, passes.
  /// - Throws: `RecordError` naming the near spelling.
  func finish() throws {
    guard let deleted = load.deleted, !deletedMatched, let near = deletedNear else { return }
    throw RecordError(
      "load.deleted '\(deleted)' matches nothing in the page's \(number) record\(number == 1 ? "" : "s"); did you mean '\(near)'? "
        + "A misspelt selector would load deleted records as rows; nothing of this page was loaded")
  }

  /// "Did you mean" for `pointer` that selects nothing in `record`
  /// (`JSONPointer.nearSpelling(members:)`): its first token among the record's fields, the
  /// others among the members of the objects they look in.
  static func nearSpelling(_ pointer: JSONPointer, in record: Record) -> JSONPointer? {
    pointer.nearSpelling { prefix in
      if prefix.isEmpty { return record.map(\.name) }
      guard case .object(let pairs)? = resolve(JSONPointer(tokens: prefix), in: record) else { return [] }
      return pairs.map(\.key)
    }
  }

  /// What `pointer` selects in a record as loaded: its first token names a column, the
  /// rest points into that column's JSON text (nested lists and objects load as JSON).
  static func resolve(_ pointer: JSONPointer, in record: Record) -> JSONValue? {
    guard let first = pointer.tokens.first else { return nil }
    guard let value = record.first(where: { $0.name == first })?.value else { return nil }
    let column: JSONValue =
      switch value {
      case .null: .null
      case .integer(let i): .integer(i)
      case .boolean(let b): .bool(b)
      case .real(let d): .number(String(d))
      case .decimal(let text): .number(text)
      case .text(let s): .string(s)
      case .bigInteger(let digits): .number(digits)
      }
    let rest = Array(pointer.tokens.dropFirst())
    guard !rest.isEmpty else { return column }
    guard case .string(let text) = column, let nested = try? JSONValue(parsing: text) else { return nil }
    return JSONPointer(tokens: rest).resolve(in: nested)
  }
}

extension JSONValue {
  /// This value with `value` at the place `tokens` (a JSON Pointer's) names: members are
  /// replaced or added, array elements replaced; an object is created on the way where
  /// a scalar or nothing is.
  func setting(_ tokens: ArraySlice<String>, to value: JSONValue) -> JSONValue {
    guard let token = tokens.first else { return value }
    switch self {
    case .array(var items):
      if let index = JSONPointer.index(token), index < items.count {
        items[index] = items[index].setting(tokens.dropFirst(), to: value)
        return .array(items)
      }
      return self
    case .object(var pairs):
      if let i = pairs.firstIndex(where: { $0.key == token }) {
        pairs[i].value = pairs[i].value.setting(tokens.dropFirst(), to: value)
      } else {
        pairs.append((token, JSONValue.null.setting(tokens.dropFirst(), to: value)))
      }
      return .object(pairs)
    default:
      return JSONValue.object([]).setting(tokens, to: value)
    }
  }
}
