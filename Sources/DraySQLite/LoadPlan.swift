internal import DrayJSON
internal import DrayTarget

/// Which passes over an answer file a load makes, from what the first pass learns of each
/// table object (`TableLoader`: at most three passes, each streaming).
///
/// JSON objects are unordered, so a table object's keys may come in any order:
/// - full answer: `data` whose table `name` comes later loads in a second pass (`inserts`);
/// - delta answer: every `delete_ids` applies before any `insert_rows` (else an update, a
///   delete and an insert of the same row id, would lose the new row), so the inserts come
///   from a pass of their own (`inserts`), and `delete_ids` met before their table's `name`
///   from another (`removals`).
struct LoadPlan {
  enum Pass { case main, removals, inserts }

  /// What one table object of the answer holds, learned on the first pass.
  struct Object {
    var name: String?
    var hasRows = false
    var hasData = false
    /// Rows that could not load on the pass that met them (full answer, `name` after `data`).
    var rowsDeferred = false
    /// `delete_ids` met before the table's name.
    var idsDeferred = false
  }

  /// The answer is a delta.
  let isDelta: Bool
  /// The source names of the tables the scheme lists (others are skipped).
  let targets: Set<String>
  /// The answer's table objects, in order.
  var objects: [Object] = []

  init(isDelta: Bool, targets: Set<String>) {
    self.isDelta = isDelta
    self.targets = targets
  }

  /// Notes, on the main pass, that table object `index` holds list `key` (its name known
  /// or not yet).
  mutating func note(_ key: TableAnswerKey, at index: Int) {
    let unnamed = objects[index].name == nil
    if key == .data { objects[index].hasData = true }
    if key != .deleteIDs && isDelta { objects[index].hasRows = true }
    if key == .data && !isDelta && unnamed { objects[index].rowsDeferred = true }
    if key == .deleteIDs && unnamed { objects[index].idsDeferred = true }
  }

  /// Whether `pass` loads list `key` of `object`: a full answer's `data` on the main pass
  /// once its name is known, else on the next; a delta's rows on the inserts pass; its
  /// `delete_ids` on the main pass once its name is known, else on the removals pass.
  func loads(_ key: TableAnswerKey, of object: Object, on pass: Pass) -> Bool {
    switch (key, pass) {
    case (.deleteIDs, .main): object.name != nil
    case (.deleteIDs, .removals): object.idsDeferred
    case (.deleteIDs, .inserts): false
    case (_, .main): !isDelta && object.name != nil
    case (_, .removals): false
    case (_, .inserts): isDelta || object.rowsDeferred
    }
  }

  /// The pass that must follow `pass`, or nil when the answer is applied.
  func pass(after pass: Pass) -> Pass? {
    if isDelta {
      if pass == .main && objects.contains(where: { $0.idsDeferred }) { return .removals }
      if pass != .inserts && objects.contains(where: { $0.hasRows && isTarget($0) }) { return .inserts }
      return nil
    }
    if pass == .main && objects.contains(where: { $0.rowsDeferred && isTarget($0) }) { return .inserts }
    return nil
  }

  private func isTarget(_ object: Object) -> Bool {
    object.name.map { targets.contains($0) } ?? false
  }
}
