public import DrayModel
internal import Foundation

/// Reads a table answer file (platform-api.md §3) row by row, without holding it in memory.
///
/// The answer is a JSON list of tables, each `{"name": "output_table", "data": [[...], ...]}`;
/// yajl parses the file in 256 KiB chunks and each row reaches `row` as soon as its closing
/// bracket is read. A delta's `insert_rows` and `delete_ids` (platform-api.md §3) are read
/// when asked for; other keys are skipped. JSON objects are unordered: rows met before their
/// table's `name` are read on a second pass over the file, which knows the name by then.
///
/// ```swift
/// try AnswerReader(path: "fruits.answer").read(
///   table: { name in print("table", name) },
///   row: { values in print(values.map(\.json)) })
/// ```
public struct AnswerReader {
  /// The answer file.
  public let path: String
  /// The part a download is still writing, read instead of `path` as it grows
  /// (`GrowingFile`); nil when `path` is whole.
  public let growing: GrowingFile?

  public init(path: String, growing: GrowingFile? = nil) {
    self.path = path
    self.growing = growing
  }

  /// The list of a table object that `read` reports (platform-api.md §3).
  public enum Section: String, Sendable, CaseIterable {
    /// `data`: a full answer's rows (a delta's too, for a table it replaces).
    case data
    /// `insert_rows`: a delta's rows to insert, each replacing the row of its row id.
    case insertRows = "insert_rows"
    /// `delete_ids`: a delta's row ids to delete; each reaches `row` as a list of one value.
    case deleteIDs = "delete_ids"
  }

  /// Parses the whole file, calling `table` at the start of each table's rows and `row` for
  /// each row, in order; the rows of a table whose `name` comes after them arrive on a
  /// second pass, after every other table's.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer;
  ///   `GrowingFile.Stop` when the download of a growing part failed or started it again;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(table: (String) throws -> Void, row: ([JSONValue]) throws -> Void) throws {
    try read(sections: [.data], table: { name, _ in try table(name) }, row: row)
  }

  /// Parses the whole file, calling `table` at the start of each list of `sections` (with
  /// the table's name and the list's key) and `row` for each of its items, in order; lists
  /// met before their table's `name` arrive on a second pass. Lists of other keys are
  /// skipped.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer (a
  ///   `delete_ids` item that is not a single value, a table object with rows and no name);
  ///   `GrowingFile.Stop` when the download of a growing part failed or started it again;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(
    sections: Set<Section>, table: (String, Section) throws -> Void, row: ([JSONValue]) throws -> Void
  ) throws {
    try withoutActuallyEscaping(table) { table in
      try withoutActuallyEscaping(row) { row in
        let state = AnswerParseState(sections: sections, onTable: table, onRow: row)
        try parse(state, growing: growing)
        guard !state.deferred.isEmpty else { return }
        if let unnamed = state.deferred.first(where: { state.names[$0] == nil }) {
          throw AnswerReadError(message: "table object \(unnamed + 1) of the answer holds rows but no name")
        }
        state.secondPass()
        // The second pass reads the finished answer at `path`.
        try parse(state, growing: nil)
      }
    }
  }

  /// One pass over the answer: over the part `growing` as it grows, or else the file at `path`.
  private func parse(_ state: AnswerParseState, growing: GrowingFile?) throws {
    let reader = try growing?.takeReader()
    guard let input = reader.map({ FileHandle(fileDescriptor: $0, closeOnDealloc: true) }) ?? FileHandle(forReadingAtPath: path) else {
      throw AnswerReadError(message: "cannot read the answer file \(path)")
    }
    defer { try? input.close() }
    try parse(input, state, growing: growing)
  }

  private func parse(_ input: FileHandle, _ state: AnswerParseState, growing: GrowingFile?) throws {
    var stop: GrowingFile.Stop?
    var offset: Int64 = 0
    /// The file's next 256 KiB; at the end of a part still growing, its next bytes once
    /// they are written, or nil at its end.
    func next() -> Data? {
      var chunk = input.readData(ofLength: 256 * 1024)
      do throws(GrowingFile.Stop) {
        while chunk.isEmpty, let growing, try growing.waitForBytes(after: offset) {
          chunk = input.readData(ofLength: 256 * 1024)
        }
      } catch {
        stop = error
        return nil
      }
      offset += Int64(chunk.count)
      return chunk.isEmpty ? nil : chunk
    }
    do throws(JSONEvents.Failure) {
      try JSONEvents.parse(chunks: next, into: state)
    } catch _ where stop != nil {
      throw stop!
    } catch .stopped(let byte) {
      if let place = state.tooDeep {
        throw AnswerReadError(message: "\(place) \(JSONValue.nestingMessage(at: byte)); dray reads at most \(JSONValue.maxDepth) levels")
      }
      throw state.failure ?? AnswerReadError(message: "reading stopped")
    } catch .invalid(let reason, let byte) {
      throw AnswerReadError(message: "the answer is not valid JSON (\(reason), near byte \(byte))")
    } catch .truncated(_, let bytes) {
      throw AnswerReadError(message: "the answer ends before its JSON is complete (\(bytes) bytes)")
    } catch .empty(let bytes) {
      throw AnswerReadError(message: BlankAnswer.describe(bytes: bytes) + "; expected a JSON list of tables")
    } catch .outOfMemory {
      throw AnswerReadError(message: "out of memory starting the JSON parser")
    }
    // A whole document read from a part whose download then failed is not the answer.
    if let stop { throw stop }
    if !state.sawList { throw AnswerReadError(message: "the answer is empty; expected a JSON list of tables") }
  }
}

/// A table answer that could not be read.
public struct AnswerReadError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}

/// The parser's place in the answer, fed by yajl's callbacks.
private final class AnswerParseState: JSONEventHandler {
  /// A row, or a container inside a row's cell, being built.
  enum Frame {
    case array([JSONValue])
    case object([(key: String, value: JSONValue)], key: String)
  }

  let sections: Set<AnswerReader.Section>
  let onTable: (String, AnswerReader.Section) throws -> Void
  let onRow: ([JSONValue]) throws -> Void
  /// The list being read, inside a table object.
  var section: AnswerReader.Section = .data
  /// The table object being read, counted from 0 in the answer's list.
  var object = -1
  /// Each table object's name, learnt on the first pass.
  var names: [Int: String] = [:]
  /// Table objects with a list met before their name: read again on the second pass.
  var deferred: Set<Int> = []
  /// On the second pass, only the lists of `deferred` objects met before their name are read.
  var isSecondPass = false
  /// The current object's `name` was met on this pass.
  var nameMet = false
  /// Open containers above the current value: 1 inside the list of tables, 2 inside a
  /// table, 3 inside its rows, 4 inside a row.
  var depth = 0
  /// Depth of a skipped container's content (values of keys other than `name` and `data`).
  var skipping = 0
  var key = ""
  var tableName: String?
  var inRows = false
  var frames: [Frame] = []
  var rowNumber = 0
  var sawList = false
  var failure: (any Error)?
  /// Where a container opened past `JSONValue.maxDepth` ("row 3 of table 't' is"), which
  /// stopped the parse.
  var tooDeep: String?

  init(
    sections: Set<AnswerReader.Section>, onTable: @escaping (String, AnswerReader.Section) throws -> Void,
    onRow: @escaping ([JSONValue]) throws -> Void
  ) {
    self.sections = sections
    self.onTable = onTable
    self.onRow = onRow
  }

  /// Starts the pass that reads the lists of `deferred` objects, whose names are known now.
  func secondPass() {
    isSecondPass = true
    depth = 0
    skipping = 0
    object = -1
    frames = []
    sawList = false
  }

  func fail(_ message: String) -> Bool {
    failure = AnswerReadError(message: message)
    return false
  }

  /// Runs a callback, turning its error into a stop.
  func call(_ body: () throws -> Void) -> Bool {
    do {
      try body()
      return true
    } catch {
      failure = error
      return false
    }
  }

  var place: String { tableName.map { "table '\($0)', row \(rowNumber)" } ?? "the answer" }

  func start(isArray: Bool) -> Bool {
    if skipping > 0 {
      skipping += 1
      return true
    }
    switch depth {
    case 0:
      guard isArray else { return fail("the answer is a JSON object; expected a list of tables") }
      sawList = true
    case 1:
      guard !isArray else { return fail("the answer holds a list where a table object was expected") }
      object += 1
      tableName = isSecondPass ? names[object] : nil
      nameMet = false
      inRows = false
    case 2:
      guard isArray, let listed = AnswerReader.Section(rawValue: key), sections.contains(listed) else {
        skipping = 1
        return true
      }
      if isSecondPass {
        guard deferred.contains(object), !nameMet else {
          skipping = 1
          return true
        }
      }
      // On the second pass every object read has a name (`read` checked).
      guard let name = tableName else {
        deferred.insert(object)
        skipping = 1
        return true
      }
      section = listed
      inRows = true
      rowNumber = 0
      depth += 1
      return call { try onTable(name, listed) }
    case 3:
      guard section != .deleteIDs else {
        return fail("delete_ids of table '\(tableName ?? "")' holds row ids; item \(rowNumber + 1) is \(isArray ? "a list" : "an object")")
      }
      guard isArray else { return fail("row \(rowNumber + 1) of table '\(tableName ?? "")' is not a list of values") }
      rowNumber += 1
      frames = [.array([])]
    default:
      guard depth < JSONValue.maxDepth else {
        tooDeep = "row \(rowNumber) of table '\(tableName ?? "")' is"
        return false
      }
      frames.append(isArray ? .array([]) : .object([], key: ""))
    }
    depth += 1
    return true
  }

  func key(_ text: String) -> Bool {
    if skipping > 0 { return true }
    if depth == 2 {
      key = text
    } else if case .object(let pairs, _)? = frames.last {
      frames[frames.count - 1] = .object(pairs, key: text)
    }
    return true
  }

  func scalar(_ value: JSONValue) -> Bool {
    if skipping > 0 { return true }
    switch depth {
    case 0: return fail("the answer is a single value; expected a list of tables")
    case 1: return fail("the answer holds a value where a table object was expected")
    case 2:
      if key == "name" {
        guard case .string(let name) = value else { return fail("a table's name is not a string") }
        tableName = name
        names[object] = name
        nameMet = true
      }
      return true
    case 3:
      guard section == .deleteIDs else { return fail("row \(rowNumber + 1) of table '\(tableName ?? "")' is not a list of values") }
      rowNumber += 1
      return call { try onRow([value]) }
    default:
      append(value)
      return true
    }
  }

  func end() -> Bool {
    if skipping > 0 {
      skipping -= 1
      return true
    }
    depth -= 1
    switch depth {
    case 3:
      guard case .array(let values)? = frames.popLast() else { return true }
      return call { try onRow(values) }
    case 2:
      inRows = false
    case 0, 1:
      break
    default:
      guard let frame = frames.popLast() else { return true }
      switch frame {
      case .array(let items): append(.array(items))
      case .object(let pairs, _): append(.object(pairs))
      }
    }
    return true
  }

  private func append(_ value: JSONValue) {
    guard let last = frames.popLast() else { return }
    switch last {
    case .array(var items):
      items.append(value)
      frames.append(.array(items))
    case .object(var pairs, let key):
      pairs.append((key, value))
      frames.append(.object(pairs, key: ""))
    }
  }
}
