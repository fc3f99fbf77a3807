public import DrayModel

/// Reads a table answer (platform-api.md §3), fed by chunks of bytes, and hands its
/// structure to a `TableAnswerSink` and its rows to the row sinks the sink chooses: the one
/// reader of the answer shape for every load and for the `table` step. The JSON is read by
/// `JSONLexer` (RFC 8259, strictly), dray's one JSON reader: a load's time goes mostly here.
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// Keys other than `name`, `data`, `insert_rows` and `delete_ids` are read past, whatever
/// they hold. A value nested inside a row (an array or object) reaches the row sink as its
/// compact JSON text. Nothing is held beyond the current row, so memory stays bounded
/// whatever the answer's size; chunks may come as the answer arrives (`feed(_:)`), cut
/// anywhere, and `finish()` says it is whole.
///
/// ```swift
/// let scanner = TableAnswerScanner(sink: sink)
/// try scanner.scan(file: "answer.json")   // or feed(_:) each chunk, then finish()
/// ```
///
/// A scanner reads one answer once; a load that reads an answer again (`LoadPlan`) uses a
/// new scanner.
public final class TableAnswerScanner {
  /// Where the scan is in the answer; the lexer's events update it (`TableAnswerScan`).
  private var scan: TableAnswerScan
  private let lexer = JSONLexer()
  /// Keeps the sink alive: the scan refers to it without counting.
  private let sink: any TableAnswerSink

  /// Bytes `scan(file:between:)` reads at a time: 1 MiB.
  public static let chunkSize = 1 << 20

  public init(sink: any TableAnswerSink) {
    self.sink = sink
    scan = TableAnswerScan(sink: sink)
  }

  /// The name of the table object being read, once its `name` came.
  public var table: String? { scan.table }

  /// Reads the next bytes of the answer.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func feed(_ bytes: UnsafeRawBufferPointer) throws {
    do {
      try lexer.feed(bytes, &scan)
    } catch let failure as JSONLexer.Failure {
      throw placed(failure)
    }
  }

  /// Says the answer is whole: an answer that stops before its JSON ends is refused.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func finish() throws {
    do {
      try lexer.finish(&scan)
    } catch let failure as JSONLexer.Failure {
      throw placed(failure)
    }
  }

  /// Reads the file at `path` in `chunkSize` pieces, calling `between` before each (a
  /// cancelled load throws there), then `finish()`. With `growing`, reads the part a download
  /// is still writing instead, waiting at its end for more bytes until the download finishes.
  /// - Throws: `TableAnswerError` (also when the file cannot be read), `GrowingFile.Stop`, or
  ///   an error of the sink or of `between` unchanged.
  public func scan(file path: String, growing: GrowingFile? = nil, between: () throws -> Void = {}) throws {
    do {
      let chunks = try FileChunks(path: path, growing: growing, chunkSize: Self.chunkSize)
      while true {
        try between()
        guard let chunk = try chunks.next() else { break }
        try feed(chunk)
      }
    } catch let unreadable as FileChunks.Unreadable {
      throw TableAnswerError(message: "cannot read the downloaded answer at \(path): \(unreadable.reason)")
    }
    try finish()
  }

  /// The error for what stopped the lexer, placed at the table, row and column being read: a
  /// refusal of the scan or of a sink placed, any other error of a sink unchanged.
  private func placed(_ failure: JSONLexer.Failure) -> any Error {
    switch failure {
    case .stopped(_, let error as TableAnswerRefusal):
      return scan.placed(error)
    case .stopped(_, let error):
      return error
    case .invalid, .nonNumber, .tooDeep, .truncated:
      return scan.placed(TableAnswerRefusal(failure.answerProblem))
    case .empty(let bytes):
      return TableAnswerError(message: BlankAnswer.describe(bytes: bytes) + "; expected a JSON list of tables")
    }
  }
}

@available(*, unavailable)
extension TableAnswerScanner: Sendable {}
