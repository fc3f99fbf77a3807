/// Receives a table answer's lists with their table's name (`NamedLists.read`).
public protocol NamedListSink: AnyObject {
  /// A list `key` of table `table` starts: what to do with it.
  func beginList(_ key: TableAnswerKey, of table: String) throws -> TableAnswerList
  /// A list of rows or ids ends (not called for a skipped list); `items` counts them.
  func endList(_ key: TableAnswerKey, of table: String, items: Int) throws
  /// An item of a `delete_ids` list, `item` counted from 1.
  func deleteID(_ token: JSONToken, item: Int) throws
}

/// Reads a table answer file so that each list reaches its sink with its table's name.
///
/// JSON objects are unordered: a list met before its table object's `name` is read on a
/// second pass over the file, which knows every name by then (the scanner refuses a table
/// object without one). The second pass reads only those lists, after all the others; an
/// answer whose names come first is read once.
public enum NamedLists {
  /// Reads the answer at `path` into `sink`, calling `between` before each chunk.
  /// - Throws: `TableAnswerError`, or an error of the sink or of `between` unchanged.
  public static func read(file path: String, into sink: any NamedListSink, between: () throws -> Void = {}) throws {
    let passes = NamedListPasses(sink)
    try TableAnswerScanner(sink: passes).scan(file: path, between: between)
    guard !passes.deferred.isEmpty else { return }
    passes.startSecondPass()
    try TableAnswerScanner(sink: passes).scan(file: path, between: between)
  }
}

/// The scanner's sink behind `NamedLists`: which lists wait for their table's name.
private final class NamedListPasses: TableAnswerSink {
  let sink: any NamedListSink
  /// The table object being read, counted from 0.
  var object = -1
  /// Each table object's name, learnt on the first pass.
  var names: [Int: String] = [:]
  /// Table objects with a list met before their name.
  var deferred: Set<Int> = []
  var isSecondPass = false
  /// The current object's name, when known on this pass (always, on the second).
  var name: String?
  /// The current object's `name` came on this pass.
  var nameMet = false

  init(_ sink: any NamedListSink) { self.sink = sink }

  func startSecondPass() {
    isSecondPass = true
    object = -1
  }

  func beginTable() throws {
    object += 1
    name = isSecondPass ? names[object] : nil
    nameMet = false
  }

  func tableName(_ name: String) throws {
    self.name = name
    names[object] = name
    nameMet = true
  }

  func endTable() throws {}

  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
    // The second pass reads only the lists the first could not name.
    if isSecondPass && (nameMet || !deferred.contains(object)) { return .skip }
    guard let name else {
      deferred.insert(object)
      return .skip
    }
    return try sink.beginList(key, of: name)
  }

  func endList(_ key: TableAnswerKey, items: Int) throws {
    if let name { try sink.endList(key, of: name, items: items) }
  }

  func deleteID(_ token: JSONToken, item: Int) throws { try sink.deleteID(token, item: item) }
}
