internal import CYAJL
public import DrayModel
internal import Foundation

/// Reads a table answer file (platform-api.md §3) row by row, without holding it in memory.
///
/// The answer is a JSON list of tables, each `{"name": "output_table", "data": [[...], ...]}`;
/// yajl parses the file in 256 KiB chunks and each row reaches `row` as soon as its closing
/// bracket is read. Keys other than `name` and `data` are skipped; a table's `name` must come
/// before its `data`, as the platform sends it.
///
/// ```swift
/// try AnswerReader(path: "fruits.answer").read(
///   table: { name in print("table", name) },
///   row: { values in print(values.map(\.json)) })
/// ```
public struct AnswerReader {
  /// The answer file.
  public let path: String

  public init(path: String) { self.path = path }

  /// Parses the whole file, calling `table` at the start of each table's rows and `row` for
  /// each row, in order.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(table: (String) throws -> Void, row: ([JSONValue]) throws -> Void) throws {
    guard let input = FileHandle(forReadingAtPath: path) else {
      throw AnswerReadError(message: "cannot read the answer file \(path)")
    }
    defer { try? input.close() }
    try withoutActuallyEscaping(table) { table in
      try withoutActuallyEscaping(row) { row in
        let state = AnswerParseState(onTable: table, onRow: row)
        try parse(input, state)
      }
    }
  }

  private func parse(_ input: FileHandle, _ state: AnswerParseState) throws {
    let context = Unmanaged.passUnretained(state).toOpaque()
    var callbacks = yajl_callbacks(
      yajl_null: { ctx in AnswerParseState.from(ctx).scalar(.null) },
      yajl_boolean: { ctx, value in AnswerParseState.from(ctx).scalar(.bool(value != 0)) },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        let raw = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
        return AnswerParseState.from(ctx).scalar(Int64(raw).map { .integer($0) } ?? .number(raw))
      },
      yajl_string: { ctx, text, length in
        AnswerParseState.from(ctx).scalar(.string(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)))
      },
      yajl_start_map: { ctx in AnswerParseState.from(ctx).start(isArray: false) },
      yajl_map_key: { ctx, text, length in
        AnswerParseState.from(ctx).key(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self))
      },
      yajl_end_map: { ctx in AnswerParseState.from(ctx).end() },
      yajl_start_array: { ctx in AnswerParseState.from(ctx).start(isArray: true) },
      yajl_end_array: { ctx in AnswerParseState.from(ctx).end() })
    guard let parser = yajl_alloc(&callbacks, nil, context) else {
      throw AnswerReadError(message: "out of memory starting the JSON parser")
    }
    defer { yajl_free(parser) }
    var offset = 0
    while true {
      let chunk = input.readData(ofLength: 256 * 1024)
      let status: yajl_status
      if chunk.isEmpty {
        status = yajl_complete_parse(parser)
      } else {
        status = chunk.withUnsafeBytes { yajl_parse(parser, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
      }
      if status == yajl_status_client_canceled {
        if let place = state.tooDeep {
          let byte = offset + max(0, Int(yajl_get_bytes_consumed(parser)) - 1)
          throw AnswerReadError(message: "\(place) \(JSONValue.nestingMessage(at: byte)); dray reads at most \(JSONValue.maxDepth) levels")
        }
        throw state.failure ?? AnswerReadError(message: "reading stopped")
      }
      if status == yajl_status_error {
        if chunk.isEmpty {
          throw AnswerReadError(message: "the answer ends before its JSON is complete (\(offset) bytes)")
        }
        let detail = chunk.withUnsafeBytes { buffer in
          let message = yajl_get_error(parser, 0, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count)
          defer { yajl_free_error(parser, message) }
          return message.map { String(cString: $0) } ?? "invalid JSON"
        }
        let near = offset + Int(yajl_get_bytes_consumed(parser))
        throw AnswerReadError(
          message: "the answer is not valid JSON (\(detail.trimmingCharacters(in: .whitespacesAndNewlines)), near byte \(near))")
      }
      offset += chunk.count
      if chunk.isEmpty { break }
    }
    if !state.sawList { throw AnswerReadError(message: "the answer is empty; expected a JSON list of tables") }
  }
}

/// A table answer that could not be read.
public struct AnswerReadError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}

/// The parser's place in the answer, fed by yajl's callbacks.
private final class AnswerParseState {
  /// A row, or a container inside a row's cell, being built.
  enum Frame {
    case array([JSONValue])
    case object([(key: String, value: JSONValue)], key: String)
  }

  let onTable: (String) throws -> Void
  let onRow: ([JSONValue]) throws -> Void
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

  init(onTable: @escaping (String) throws -> Void, onRow: @escaping ([JSONValue]) throws -> Void) {
    self.onTable = onTable
    self.onRow = onRow
  }

  static func from(_ ctx: UnsafeMutableRawPointer?) -> AnswerParseState {
    Unmanaged<AnswerParseState>.fromOpaque(ctx!).takeUnretainedValue()
  }

  func fail(_ message: String) -> Int32 {
    failure = AnswerReadError(message: message)
    return 0
  }

  /// Runs a callback, turning its error into a stop.
  func call(_ body: () throws -> Void) -> Int32 {
    do {
      try body()
      return 1
    } catch {
      failure = error
      return 0
    }
  }

  var place: String { tableName.map { "table '\($0)', row \(rowNumber)" } ?? "the answer" }

  func start(isArray: Bool) -> Int32 {
    if skipping > 0 {
      skipping += 1
      return 1
    }
    switch depth {
    case 0:
      guard isArray else { return fail("the answer is a JSON object; expected a list of tables") }
      sawList = true
    case 1:
      guard !isArray else { return fail("the answer holds a list where a table object was expected") }
      tableName = nil
      inRows = false
    case 2:
      if key == "data" && isArray {
        guard let name = tableName else { return fail("a table's rows come before its name") }
        inRows = true
        rowNumber = 0
        depth += 1
        return call { try onTable(name) }
      }
      skipping = 1
      return 1
    case 3:
      guard isArray else { return fail("row \(rowNumber + 1) of table '\(tableName ?? "")' is not a list of values") }
      rowNumber += 1
      frames = [.array([])]
    default:
      guard depth < JSONValue.maxDepth else {
        tooDeep = "row \(rowNumber) of table '\(tableName ?? "")' is"
        return 0
      }
      frames.append(isArray ? .array([]) : .object([], key: ""))
    }
    depth += 1
    return 1
  }

  func key(_ text: String) -> Int32 {
    if skipping > 0 { return 1 }
    if depth == 2 {
      key = text
    } else if case .object(let pairs, _)? = frames.last {
      frames[frames.count - 1] = .object(pairs, key: text)
    }
    return 1
  }

  func scalar(_ value: JSONValue) -> Int32 {
    if skipping > 0 { return 1 }
    switch depth {
    case 0: return fail("the answer is a single value; expected a list of tables")
    case 1: return fail("the answer holds a value where a table object was expected")
    case 2:
      if key == "name" {
        guard case .string(let name) = value else { return fail("a table's name is not a string") }
        tableName = name
      }
      return 1
    case 3: return fail("row \(rowNumber + 1) of table '\(tableName ?? "")' is not a list of values")
    default:
      append(value)
      return 1
    }
  }

  func end() -> Int32 {
    if skipping > 0 {
      skipping -= 1
      return 1
    }
    depth -= 1
    switch depth {
    case 3:
      guard case .array(let values)? = frames.popLast() else { return 1 }
      return call { try onRow(values) }
    case 2:
      inRows = false
    case 0, 1:
      break
    default:
      guard let frame = frames.popLast() else { return 1 }
      switch frame {
      case .array(let items): append(.array(items))
      case .object(let pairs, _): append(.object(pairs))
      }
    }
    return 1
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
