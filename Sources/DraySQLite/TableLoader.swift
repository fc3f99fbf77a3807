internal import DrayJSON
internal import DrayModel
internal import DrayTarget

/// Applies a table answer (platform-api.md §3) from a file to the store, streaming.
///
/// `TableAnswerScanner` reads the file in 1 MiB chunks; each value is classified into a batch
/// of rows (`RowBinder`, the row sink) that a second thread inserts (`InsertWriter`), so
/// memory stays bounded whatever the answer's size. Both shapes are read:
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// JSON objects are unordered, so the keys of a table object may come in any order. The
/// loader applies what it can in one pass over the file and reads the file again for what
/// had to wait (`LoadPlan`: at most three passes, each streaming).
///
/// The parts: this file runs the passes; `TableLoader+Structure.swift` is the scanner's sink
/// for the answer's tables and lists, asking `TableAnswerApplier` (the rules of every store)
/// what each list does; `RowBinder.swift` takes each value (the per-value path);
/// `InsertWriter.swift` inserts the batches; `LoadPlan` decides the passes. Values follow
/// the rule in `docs/store.md`.
struct TableLoader {
  /// One output table of the resource, as the loader fills it.
  struct Target {
    var sourceName: String
    var physicalName: String
    /// Names and platform types of the row's values, the row id first for a cached resource.
    var columns: [ResourceScheme.Column]
    var kinds: [ColumnKind]
    var cached: Bool
  }

  /// What the answer did, per output table (source names).
  struct Outcome {
    var inserted: [String: Int] = [:]
    var deleted: [String: Int] = [:]
    /// The first `mismatchDetailLimit` values that did not fit their column's type.
    var mismatches: [ValueMismatch] = []
    /// Every value that did not fit, counted.
    var mismatchCount = 0
  }

  /// How many mismatches are described one by one; the rest are only counted.
  static let mismatchDetailLimit = 100

  let database: Database
  /// The rules: what each list does, the refusals, the tables named and skipped.
  let applier: TableAnswerApplier
  /// By source table name.
  let targets: [String: Target]
  /// Checked between 1 MiB pieces of the file: a cancelled load stops there.
  let cancellation: Cancellation?
  /// The part a download is still writing, read by the first pass as it grows (`GrowingFile`);
  /// nil when `file` is whole.
  var growing: GrowingFile? = nil

  /// Parses the answer in `file` and applies it inside the caller's transaction.
  /// - Throws: `LoadError` naming resource, table, row and column.
  func run(file: String) throws -> Outcome {
    let session = LoadSession(loader: self)
    defer { session.writer.stop() }
    var pass = LoadPlan.Pass.main
    while true {
      try session.read(file: file, pass: pass)
      guard let next = session.plan.pass(after: pass) else { break }
      pass = next
    }
    return session.outcome
  }
}

/// Everything off the per-value path: passes, tables, statements, errors, reports. The
/// scanner's sink (`TableLoader+Structure.swift`).
final class LoadSession {
  let loader: TableLoader
  var pass = LoadPlan.Pass.main
  var plan: LoadPlan
  /// The table object being read, in `plan.objects` (the last one read, between objects).
  var index = -1
  /// Whether a table object is being read (its `{` came, its `}` not yet).
  var inObject = false
  var bindings: [String: RowBinder] = [:]
  /// Inserts the bound rows on a thread of its own; the connection is this session's only
  /// after `drain()`.
  let writer = InsertWriter()
  var outcome = TableLoader.Outcome()

  init(loader: TableLoader) {
    self.loader = loader
    plan = LoadPlan(isDelta: loader.applier.delta, targets: Set(loader.targets.keys))
  }

  var current: LoadPlan.Object {
    get { plan.objects[index] }
    set { plan.objects[index] = newValue }
  }

  var target: TableLoader.Target? { current.name.flatMap { loader.targets[$0] } }

  /// Reads the answer once, for `pass`.
  /// - Throws: `LoadError` naming resource, table, row and column.
  func read(file: String, pass: LoadPlan.Pass) throws {
    self.pass = pass
    index = -1
    let scanner = TableAnswerScanner(sink: self)
    do {
      let growing = pass == .main ? loader.growing : nil
      var pieces = 0
      do {
        try scanner.scan(file: file, growing: growing) {
          if loader.cancellation?.isCancelled == true { throw loader.applier.interrupted }
          // The rows read so far go to the writer before the next read, which may wait for
          // more bytes of an answer still arriving: they are inserted meanwhile.
          try flush()
          guard growing != nil else { return }
          // Every 8 MiB of an answer read as it arrives, the disk takes the WAL written so far
          // while the download goes on.
          pieces += 1
          if pieces % 8 == 0 { loader.database.startWALWriteback() }
        }
        try drain()
      } catch {
        // Whatever stopped the scan came after every complete row read so far: they are
        // inserted first (at most a few batches), so that a row SQLite refuses among them is
        // the load's error whichever thread got there first. `flush()` throws only the
        // writer's failure, which `drain()` returns.
        try? flush()
        let failure = writer.drain()
        if let fault = failure as? SQLiteError, fault.isInterrupt { throw loader.applier.interrupted }
        throw failure ?? error
      }
    } catch let error as TableAnswerError {
      // The plan knows a table's name on a later pass even before the object's `name` comes;
      // between objects and after the last, none is being read.
      let table = error.table ?? (inObject && index < plan.objects.count ? plan.objects[index].name : nil)
      throw LoadError(resource: loader.applier.scheme.name, table: table, row: error.row, column: error.column, message: error.message)
    } catch let error as LoadError {
      throw error
    } catch let stop as GrowingFile.Stop {
      throw stop
    } catch {
      // SQLite's errors preparing a table's statements or replacing it, named by table.
      throw LoadError(resource: loader.applier.scheme.name, table: index >= 0 ? current.name : nil, message: "\(error)")
    }
  }

  /// Hands every binder's rows to the writer and waits until they are inserted: the
  /// connection is then free for this thread's statements.
  /// - Throws: the refusal of a row the writer met (`TableAnswerError`, placed).
  func drain() throws {
    try flush()
    if let failure = writer.drain() { throw failure }
  }

  /// Hands every binder's rows to the writer.
  /// - Throws: the refusal of a row the writer met (`TableAnswerError`, placed).
  func flush() throws {
    for binding in bindings.values { try binding.flush() }
  }

  /// Notes a value that did not fit its column's type: described while fewer than
  /// `TableLoader.mismatchDetailLimit` are, counted always.
  func mismatch(target: TableLoader.Target, row: Int, column: Int, found: String, value: @autoclosure () -> String, storedAs: String) {
    outcome.mismatchCount += 1
    guard outcome.mismatches.count < TableLoader.mismatchDetailLimit else { return }
    let text = PrintableText.excerpt(value())
    let declared = target.columns[column]
    outcome.mismatches.append(
      ValueMismatch(
        table: target.sourceName, row: row, column: column + 1, columnName: declared.name, declaredType: declared.type,
        found: found, value: text, storedAs: storedAs))
  }
}
