internal import CYAJL
public import DrayModel
public import Foundation

/// Receives the events of a JSON document as yajl's event parser reads it, values already
/// decoded: integers that fit in Int64 as `.integer`, every other number as its exact text
/// (`.number`), strings and keys with every character (`\u0000` included). Returning false
/// stops the parse (`JSONEvents.Failure.stopped`).
public protocol JSONEventHandler: AnyObject {
  /// A null, boolean, number or string.
  func scalar(_ value: JSONValue) -> Bool
  /// The start of an array (`isArray`) or an object.
  func start(isArray: Bool) -> Bool
  /// An object member's key.
  func key(_ key: String) -> Bool
  /// The end of the innermost open array or object.
  func end() -> Bool
}

/// yajl's event parser (https://lloyd.github.io/yajl/) feeding a `JSONEventHandler`, over
/// a document held in memory or a file read in 256 KiB chunks: the one place dray drives
/// yajl into `JSONValue`s (table answers are read by `TableAnswerScanner`'s own lexer
/// instead, their bytes bound straight into the database).
public enum JSONEvents {
  /// The yajl loaded at run time (`yajl_version`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "yajl", packed: Int(yajl_version()))
  }

  /// How a parse ended early. Byte offsets count from 0 in the whole input.
  public enum Failure: Error, Sendable {
    /// The handler returned false at the byte `byte`.
    case stopped(byte: Int)
    /// Not JSON: yajl's reason (spaces trimmed) and the byte it stopped near.
    case invalid(reason: String, byte: Int)
    /// The input ended, after `bytes` bytes, before its JSON was complete.
    case truncated(reason: String, bytes: Int)
    /// The input held no JSON value at all: nothing (`bytes` is 0), or only whitespace
    /// (`BlankAnswer`).
    case empty(bytes: Int)
    case outOfMemory
    /// The input could not be read: `FileChunks.Unreadable`, or the `GrowingFile.Stop` of a
    /// part that a download failed or started again.
    case unreadable(any Error)
  }

  /// Parses `bytes`.
  /// - Parameters:
  ///   - allowComments: accept `/* */` and `//` comments, as yajl's tree parser does.
  ///   - verboseErrors: reasons quote the text around the error (yajl's verbose form).
  /// - Throws: `Failure`.
  public static func parse(
    _ bytes: Data, into handler: any JSONEventHandler, allowComments: Bool = false, verboseErrors: Bool = false
  ) throws(Failure) {
    var pending: Data? = bytes
    try parse(chunks: { pending.take() }, into: handler, allowComments: allowComments, verbose: verboseErrors)
  }

  /// The size of the chunks a file is read in: 256 KiB.
  public static let chunkSize = 256 * 1024

  /// Parses the file (or growing part) `input`, holding one chunk at a time (open it with
  /// `chunkSize`).
  /// - Throws: `Failure`.
  public static func parse(_ input: FileChunks, into handler: any JSONEventHandler) throws(Failure) {
    try parse(chunks: { try input.next().map { Data($0) } }, into: handler, allowComments: false, verbose: false)
  }

  /// Parses the chunks `next` returns, in order, until it returns nil.
  /// - Throws: `Failure`.
  public static func parse(chunks next: () -> Data?, into handler: any JSONEventHandler) throws(Failure) {
    try parse(chunks: next, into: handler, allowComments: false, verbose: false)
  }

  /// Parses the file (or growing part) `input` as `parse(_:into:)` does, with dray's own
  /// lexer instead of yajl (`JSONLexer`: RFC 8259 and RFC 3629 checked strictly, where yajl
  /// lets through UTF-8 with overlong forms or encoded surrogates, reads a lone UTF-16
  /// surrogate escape as `?`, and takes a vertical tab for whitespace). Nesting is not
  /// bounded here beyond one level past `JSONValue.maxDepth`: the handler bounds it (and
  /// says where), or the parse is refused as too deep.
  /// - Throws: `Failure`; `.invalid` carries what was wrong and the byte it is at (from 0).
  public static func parseStrictly(_ input: FileChunks, into handler: any JSONEventHandler) throws(Failure) {
    let lexer = JSONLexer(maxDepth: JSONValue.maxDepth + 1)
    let events = HandlerEvents(handler: handler)
    do {
      while let chunk = try input.next() { try lexer.feed(chunk, events) }
      try lexer.finish(events)
    } catch let failure as JSONLexer.Failure {
      switch failure {
      case .stopped(let byte): throw .stopped(byte: byte)
      case .invalid(let detail, let byte): throw .invalid(reason: detail, byte: byte)
      case .nonNumber(let token, let byte):
        throw .invalid(reason: "\(token) is not a JSON number (JSON has no NaN or Infinity)", byte: byte)
      case .tooDeep(let byte): throw .invalid(reason: "arrays and objects nested deeper than \(lexer.maxDepth) levels", byte: byte)
      case .truncated(let bytes): throw .truncated(reason: "the JSON ends before its value is complete", bytes: bytes)
      case .empty(let bytes): throw .empty(bytes: bytes)
      }
    } catch {
      throw .unreadable(error)
    }
  }

  /// Whether the file at `path` holds a whole JSON document: false when it stops before
  /// the document's end (an empty file too), which is how an answer without a length shows
  /// that the connection closed mid-answer. A file that is not JSON at all counts as whole
  /// here, for its reader to refuse with its own message.
  public static func endsWhole(path: String) -> Bool {
    guard let input = try? FileChunks(path: path, growing: nil, chunkSize: chunkSize) else { return false }
    do throws(Failure) {
      try parse(input, into: IgnoringHandler())
    } catch .truncated {
      return false
    } catch {}
    return true
  }

  /// Why the file at `path` is not one JSON document, read strictly by dray's lexer (RFC
  /// 8259 and RFC 3629: `NaN`, an HTML page or a blank body is none), in the words the
  /// table answer scanner uses for the same bytes (`JSONLexer.Failure.answerProblem`); nil
  /// when it is one. The `request` step's check of an answer that should be JSON (docs/steps.md,
  /// "An answer that should be JSON").
  public static func documentProblem(path: String) -> String? {
    let unreadable = "cannot read the downloaded answer at \(path)"
    guard let input = try? FileChunks(path: path, growing: nil, chunkSize: chunkSize) else { return unreadable }
    let lexer = JSONLexer()
    let events = HandlerEvents(handler: IgnoringHandler())
    do {
      while let chunk = try input.next() { try lexer.feed(chunk, events) }
      try lexer.finish(events)
      return nil
    } catch let failure as JSONLexer.Failure {
      return failure.answerProblem
    } catch {
      return unreadable
    }
  }

  /// Whether `bytes` hold a whole JSON document, as `endsWhole(path:)`.
  public static func endsWhole(_ bytes: [UInt8]) -> Bool {
    do throws(Failure) {
      try parse(Data(bytes), into: IgnoringHandler())
    } catch .truncated {
      return false
    } catch {}
    return true
  }

  private static func parse(
    chunks next: () throws -> Data?, into handler: any JSONEventHandler, allowComments: Bool, verbose: Bool
  ) throws(Failure) {
    let box = HandlerBox(handler)
    var callbacks = yajl_callbacks(
      yajl_null: { ctx in HandlerBox.from(ctx).scalar(.null) },
      yajl_boolean: { ctx, value in HandlerBox.from(ctx).scalar(.bool(value != 0)) },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        let raw = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
        return HandlerBox.from(ctx).scalar(Int64(raw).map { .integer($0) } ?? .number(raw))
      },
      yajl_string: { ctx, text, length in
        HandlerBox.from(ctx).scalar(.string(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)))
      },
      yajl_start_map: { ctx in HandlerBox.from(ctx).handler.start(isArray: false) ? 1 : 0 },
      yajl_map_key: { ctx, text, length in
        HandlerBox.from(ctx).handler.key(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)) ? 1 : 0
      },
      yajl_end_map: { ctx in HandlerBox.from(ctx).handler.end() ? 1 : 0 },
      yajl_start_array: { ctx in HandlerBox.from(ctx).handler.start(isArray: true) ? 1 : 0 },
      yajl_end_array: { ctx in HandlerBox.from(ctx).handler.end() ? 1 : 0 })
    guard let parser = yajl_alloc(&callbacks, nil, Unmanaged.passUnretained(box).toOpaque()) else { throw .outOfMemory }
    defer { yajl_free(parser) }
    if allowComments { _ = dray_yajl_allow_comments(parser) }
    /// yajl's reason for the error, read against the chunk it stopped in.
    func reason(_ chunk: Data) -> String {
      chunk.withUnsafeBytes { buffer in
        let start = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard let message = yajl_get_error(parser, verbose ? 1 : 0, start, buffer.count) else { return "" }
        defer { yajl_free_error(parser, message) }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
      }
    }
    var offset = 0
    var last = Data()
    // Whether a byte other than JSON whitespace (RFC 8259 §2) came: only the leading
    // whitespace is ever scanned.
    var sawText = false
    while true {
      let read: Data?
      do { read = try next() } catch { throw .unreadable(error) }
      guard let chunk = read else { break }
      if !sawText { sawText = chunk.contains { !BlankAnswer.isWhitespace($0) } }
      let status = chunk.withUnsafeBytes { yajl_parse(parser, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) }
      let consumed = Int(yajl_get_bytes_consumed(parser))
      if status == yajl_status_client_canceled { throw .stopped(byte: offset + max(0, consumed - 1)) }
      if status == yajl_status_error { throw .invalid(reason: reason(chunk), byte: offset + consumed) }
      offset += chunk.count
      last = chunk
    }
    let status = yajl_complete_parse(parser)
    if status == yajl_status_client_canceled { throw .stopped(byte: max(0, offset - 1)) }
    if status == yajl_status_error {
      if !sawText { throw .empty(bytes: offset) }
      throw .truncated(reason: reason(last), bytes: offset)
    }
  }
}

/// The handler behind yajl's context pointer.
private final class HandlerBox {
  let handler: any JSONEventHandler
  init(_ handler: any JSONEventHandler) { self.handler = handler }

  static func from(_ ctx: UnsafeMutableRawPointer?) -> HandlerBox {
    Unmanaged<HandlerBox>.fromOpaque(ctx!).takeUnretainedValue()
  }

  func scalar(_ value: JSONValue) -> Int32 { handler.scalar(value) ? 1 : 0 }
}

/// The lexer's events as a `JSONEventHandler` takes them: integers that fit in Int64 as
/// `.integer`, every other number as its text, strings and keys decoded.
private struct HandlerEvents: JSONLexerEvents {
  let handler: any JSONEventHandler

  func null() -> Bool { handler.scalar(.null) }
  func bool(_ flag: Bool) -> Bool { handler.scalar(.bool(flag)) }
  func number(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    let raw = String(decoding: text, as: UTF8.self)
    return handler.scalar(Int64(raw).map { .integer($0) } ?? .number(raw))
  }
  func string(_ text: UnsafeBufferPointer<UInt8>) -> Bool { handler.scalar(.string(String(decoding: text, as: UTF8.self))) }
  func key(_ text: UnsafeBufferPointer<UInt8>) -> Bool { handler.key(String(decoding: text, as: UTF8.self)) }
  func startArray() -> Bool { handler.start(isArray: true) }
  func endArray() -> Bool { handler.end() }
  func startObject() -> Bool { handler.start(isArray: false) }
  func endObject() -> Bool { handler.end() }
}

/// Takes every event and keeps nothing: a parse for the document's shape only.
private final class IgnoringHandler: JSONEventHandler {
  func scalar(_ value: JSONValue) -> Bool { true }
  func start(isArray: Bool) -> Bool { true }
  func key(_ key: String) -> Bool { true }
  func end() -> Bool { true }
}

extension JSONLexer.Failure {
  /// What this failure says of an answer that should be a JSON document, in the words of
  /// every reader of one (`TableAnswerScanner`, `JSONEvents.documentProblem`): one rule for
  /// the `table` and `request` steps (docs/steps.md, "An answer that should be JSON").
  var answerProblem: String {
    switch self {
    case .stopped: "reading the answer stopped"
    case .invalid(let detail, let byte): "the answer is not valid JSON (\(detail), at byte \(byte))"
    case .nonNumber(let token, _): "\(token) is not a JSON number; the answer is refused (JSON has no NaN or Infinity)"
    case .tooDeep(let byte): "the answer is nested deeper than \(JSONValue.maxDepth) levels at byte \(byte)"
    case .truncated(let bytes): "the answer ends before its JSON is complete (\(bytes) bytes); the download was cut short"
    case .empty(let bytes): BlankAnswer.describe(bytes: bytes)
    }
  }
}
