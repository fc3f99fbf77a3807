internal import DrayModel
internal import DrayTarget
internal import Foundation

/// Writes rows with named columns to an `OutputFile` in one of the step output formats.
///
/// - `json`: the SDK's query answer, `{"status":"ok","result":{"database":{"records":[{...}, ...]}}}`,
///   one object per row with the column names as keys (what `dray query` prints);
/// - `ndjson`: one JSON object per row and per line, keys in column order;
/// - `csv`: RFC 4180: a header row of column names, then one record per row, lines ending
///   in CRLF; a field holding `,`, `"`, CR or LF is quoted with inner quotes doubled. A null
///   is an empty field and an empty string is `""`, so the two stay apart. Numbers keep the
///   digits the server sent; booleans are `true` and `false`; a nested list or object is its
///   JSON text.
struct RowWriter {
  let format: OutputFormat
  let columns: [String]
  let file: OutputFile
  private var rows = 0

  init(format: OutputFormat, columns: [String], file: OutputFile) throws {
    self.format = format
    self.columns = columns
    self.file = file
    switch format {
    case .json: try file.write(#"{"status":"ok","result":{"database":{"records":["#)
    case .ndjson: break
    case .csv: try file.write(columns.map(RowWriter.csvField).joined(separator: ",") + "\r\n")
    }
  }

  /// Rows written so far.
  var count: Int { rows }

  /// Writes one row; `values` are in column order.
  mutating func write(_ values: [JSONValue]) throws {
    switch format {
    case .json:
      try file.write((rows == 0 ? "" : ",") + object(values).json)
    case .ndjson:
      try file.write(object(values).json + "\n")
    case .csv:
      try file.write(values.map(RowWriter.csvField).joined(separator: ",") + "\r\n")
    }
    rows += 1
  }

  /// Ends the document (the JSON envelope) and commits the file.
  func finish() throws {
    if format == .json { try file.write("]}}}\n") }
    try file.commit()
  }

  private func object(_ values: [JSONValue]) -> JSONValue {
    .object(zip(columns, values).map { (key: $0, value: $1) })
  }

  static func csvField(_ value: JSONValue) -> String {
    switch value {
    case .null: ""
    case .string(let s): s.isEmpty ? "\"\"" : csvField(s)
    case .integer(let i): String(i)
    case .number(let text): text
    case .bool(let b): b ? "true" : "false"
    case .array, .object: csvField(value.json)
    }
  }

  static func csvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return text }
    return "\"" + text.replacing("\"", with: "\"\"") + "\""
  }

  /// An SQLite value as JSON: integers and text as they are, a real as its shortest
  /// round-trip digits (null when not finite), a blob as base64.
  static func json(_ value: SQLValue) -> JSONValue {
    switch value {
    case .null: .null
    case .integer(let i): .integer(i)
    case .real(let d): d.isFinite ? .number("\(d)") : .null
    case .text(let s): .string(s)
    case .blob(let b): .string(Data(b).base64EncodedString())
    }
  }
}
