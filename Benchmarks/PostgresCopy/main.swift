// Copies N generated rows of 8 mixed columns into PostgreSQL through `PostgresCopyWriter` and
// `PostgresValueRule`, the path a load takes; or writes the same rows as CSV for `psql \copy`.
// Run by Benchmarks/postgres-copy.py, which measures time and peak memory.
//
//     dray-bench-postgres copy URL ROWS     # into table bench (created by the script)
//     dray-bench-postgres csv FILE ROWS     # the same rows as CSV
import DrayJSON
import DrayModel
import DrayPostgres
import Foundation

/// The columns: id, name (quotes, commas, tabs), word (Cyrillic, Greek), price, quantity,
/// active, day, note (NULL every 7th row).
let columns: [PostgresColumnType] = [.bigint, .text, .text, .doublePrecision, .bigint, .boolean, .text, .text]
let words = ["яблоко", "μήλο", "apple, \"red\"", "pear\tgreen", "kiwi", "слива", "δαμάσκηνο", "plum\\dark"]

/// Values that repeat, made once so that the loop measures the copy, not string formatting.
let days = (0..<336).map { "2024-\(String(format: "%02d", $0 % 12 + 1))-\(String(format: "%02d", $0 % 28 + 1))" }
let prices = (0..<100_000).map { "\(Double($0) / 100 + 0.25)" }
let notes = (0..<1000).map { "note \($0)" }

/// Row `i`'s values as JSON tokens (strings unquoted, as a parser hands them over).
func row(_ i: Int) -> [String?] {
  [
    String(i), "item \(i) \(words[i % words.count])", words[(i / 3) % words.count], prices[i % 100_000],
    String(i &* 7919 % 1_000_003), i % 3 == 0 ? "true" : "false", days[i % 336], i % 7 == 0 ? nil : notes[i % 1000],
  ]
}

func copy(url: String, rows: Int) throws {
  let connection = try PostgresConnection(url: PostgresURL(url))
  try connection.transaction {
    let writer = try connection.copyIn("COPY bench FROM STDIN")
    for i in 0..<rows {
      for (value, type) in zip(row(i), columns) {
        guard var value else {
          try PostgresValueRule.append(.null, as: type, to: writer)
          continue
        }
        try value.withUTF8 { bytes in
          let token: JSONToken =
            switch type {
            case .text: .string(bytes)
            case .boolean: .bool(bytes.first == UInt8(ascii: "t"))
            default: .number(bytes)
            }
          try PostgresValueRule.append(token, as: type, to: writer)
        }
      }
      try writer.endRow()
    }
    try writer.finish()
  }
}

func csv(path: String, rows: Int) throws {
  _ = FileManager.default.createFile(atPath: path, contents: nil)
  let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
  var chunk = ""
  for i in 0..<rows {
    chunk +=
      row(i).map { value in
        guard let value else { return "" }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
      }.joined(separator: ",") + "\n"
    if chunk.utf8.count > 1 << 20 {
      file.write(Data(chunk.utf8))
      chunk = ""
    }
  }
  file.write(Data(chunk.utf8))
  try file.close()
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let rows = Int(arguments[3]) else {
  FileHandle.standardError.write(Data("usage: dray-bench-postgres copy URL ROWS | csv FILE ROWS\n".utf8))
  exit(2)
}
do {
  if arguments[1] == "copy" { try copy(url: arguments[2], rows: rows) } else { try csv(path: arguments[2], rows: rows) }
} catch {
  FileHandle.standardError.write(Data("dray-bench-postgres: \(error)\n".utf8))
  exit(1)
}
