public import DrayModel

/// Receives the events of a JSON document as `JSONEvents` reads it, values already decoded:
/// integers that fit in Int64 as `.integer`, every other number as its exact text
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

/// A JSON document read from a file (or a growing part) in 256 KiB chunks by dray's one JSON
/// reader (`JSONLexer`: RFC 8259 and RFC 3629 checked strictly, no comments), its events fed
/// to a `JSONEventHandler` (the `http` step's record reader); and the checks of a downloaded
/// document: whether it ends whole, and why it is not JSON.
public enum JSONEvents {
  /// How a parse ended early. Byte offsets count from 0 in the whole input.
  public enum Failure: Error, Sendable {
    /// The handler returned false at the token starting at byte `byte`.
    case stopped(byte: Int)
    /// Not JSON: what was wrong, and the byte it is at.
    case invalid(reason: String, byte: Int)
    /// The input ended, after `bytes` bytes, before its JSON was complete.
    case truncated(reason: String, bytes: Int)
    /// The input held no JSON value at all: nothing (`bytes` is 0), or only whitespace
    /// (`BlankAnswer`).
    case empty(bytes: Int)
    /// The input could not be read: `FileChunks.Unreadable`, or the `GrowingFile.Stop` of a
    /// part that a download failed or started again.
    case unreadable(any Error)
  }

  /// The size of the chunks a file is read in: 256 KiB.
  public static let chunkSize = 256 * 1024

  /// Parses the file (or growing part) `input`, holding one chunk at a time (open it with
  /// `chunkSize`). Nesting is not bounded here beyond one level past `JSONValue.maxDepth`:
  /// the handler bounds it (and says where), or the parse is refused as too deep.
  /// - Throws: `Failure`; `.invalid` carries what was wrong and the byte it is at (from 0).
  public static func parse(_ input: FileChunks, into handler: any JSONEventHandler) throws(Failure) {
    let lexer = JSONLexer(maxDepth: JSONValue.maxDepth + 1)
    var events = HandlerEvents(handler: handler)
    do {
      while let chunk = try input.next() { try lexer.feed(chunk, &events) }
      try lexer.finish(&events)
    } catch let failure as JSONLexer.Failure {
      switch failure {
      case .stopped(let byte, _): throw .stopped(byte: byte)
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
  /// the document's end, which is how an answer without a length shows that the connection
  /// closed mid-answer, or when it cannot be opened. A file that is not JSON at all (a blank
  /// one too) counts as whole here, for its reader to refuse with its own message.
  public static func endsWhole(path: String) -> Bool {
    guard let input = try? FileChunks(path: path, growing: nil, chunkSize: chunkSize) else { return false }
    return endsWhole { try input.next() }
  }

  /// Whether `bytes` hold a whole JSON document, as `endsWhole(path:)`.
  public static func endsWhole(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { all in
      var pending: UnsafeRawBufferPointer? = all
      return endsWhole { pending.take() }
    }
  }

  /// Whether the chunks `next` returns hold a whole JSON document: false only when they stop
  /// before its end.
  private static func endsWhole(_ next: () throws -> UnsafeRawBufferPointer?) -> Bool {
    let lexer = JSONLexer()
    var events = IgnoredEvents()
    do {
      while let chunk = try next() { try lexer.feed(chunk, &events) }
      try lexer.finish(&events)
    } catch JSONLexer.Failure.truncated {
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
    var events = IgnoredEvents()
    do {
      while let chunk = try input.next() { try lexer.feed(chunk, &events) }
      try lexer.finish(&events)
      return nil
    } catch let failure as JSONLexer.Failure {
      return failure.answerProblem
    } catch {
      return unreadable
    }
  }
}

/// The lexer's events as a `JSONEventHandler` takes them: integers that fit in Int64 as
/// `.integer`, every other number as its text, strings and keys decoded.
private struct HandlerEvents: JSONLexerEvents {
  /// Thrown when the handler returns false.
  struct Stop: Error {}

  let handler: any JSONEventHandler

  private func check(_ going: Bool) throws { if !going { throw Stop() } }

  func null() throws { try check(handler.scalar(.null)) }
  func bool(_ flag: Bool) throws { try check(handler.scalar(.bool(flag))) }
  func number(_ text: UnsafeBufferPointer<UInt8>) throws { try check(handler.scalar(JSONValue(number: text))) }
  func string(_ text: UnsafeBufferPointer<UInt8>) throws { try check(handler.scalar(.string(String(decoding: text, as: UTF8.self)))) }
  func key(_ text: UnsafeBufferPointer<UInt8>) throws { try check(handler.key(String(decoding: text, as: UTF8.self))) }
  func startArray() throws { try check(handler.start(isArray: true)) }
  func endArray() throws { try check(handler.end()) }
  func startObject() throws { try check(handler.start(isArray: false)) }
  func endObject() throws { try check(handler.end()) }
}

/// Takes every event and keeps nothing: a parse for the document's shape only.
private struct IgnoredEvents: JSONLexerEvents {
  func null() {}
  func bool(_ flag: Bool) {}
  func number(_ text: UnsafeBufferPointer<UInt8>) {}
  func string(_ text: UnsafeBufferPointer<UInt8>) {}
  func key(_ text: UnsafeBufferPointer<UInt8>) {}
  func startArray() {}
  func endArray() {}
  func startObject() {}
  func endObject() {}
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
