// Times dray's JSON reading in one process, for Benchmarks/json-parse.py, which builds it from
// two trees (before and after a change) and alternates them. Only public API that both the
// yajl-era and the lexer-era DrayJSON have, so the one file builds against either.
//
//     dray-bench-json document MB      # one scheme-like document of about MB megabytes into JSONValue
//     dray-bench-json tokens COUNT     # COUNT small token answers into JSONValue, one by one
//     dray-bench-json answer ROWS      # a table answer of ROWS rows x 8 columns through
//                                      # TableAnswerScanner, 1 MiB chunks, into a sink that
//                                      # touches every value (the load's per-value path)
//
// Prints the seconds the timed part took (the input is made before the clock starts).
import DrayJSON
import DrayModel
import Foundation

/// A scheme-like document: a list of resources, each with columns, parameters and notes.
func document(megabytes: Int) -> [UInt8] {
  var text = "{\"resources\": ["
  var index = 0
  while text.utf8.count < megabytes * 1_000_000 {
    if index > 0 { text += ", " }
    text += """
      {"name": "RESOURCE_\(index)", "version": \(index % 97), "etag": "W/\\"\(index)-abc\\"", "columns": [\
      {"name": "id", "type": "INTEGER", "nullable": false}, {"name": "name", "type": "TEXT", "nullable": true}, \
      {"name": "price", "type": "REAL", "nullable": true, "scale": 0.01}, {"name": "note", "type": "TEXT", \
      "description": "Zeile \(index): préféré, \\u00e9t\\u00e9 \\ud83d\\ude00, tab\\tnewline\\n"}], \
      "params": {"region": ["EU", "US", "APAC"], "year": \(2000 + index % 30), "limit": 1.5e3, "strict": true, "cursor": null}}
      """
    index += 1
  }
  return Array((text + "]}").utf8)
}

/// A token answer as the platform sends it.
func token(_ index: Int) -> [UInt8] {
  Array(
    """
    {"status": "ok", "result": {"token": "eyJhbGciOiJIUzI1NiJ9.\(index).c2lnbmF0dXJl", "expires_in": 3600, \
    "user": {"id": \(index), "name": "user \(index)", "roles": ["reader", "loader"]}}}
    """.utf8)
}

/// A table answer of `rows` rows x 8 mixed columns (the shape of Emulator/generated.py's).
func answer(rows: Int) -> [UInt8] {
  var text = #"[{"name": "output_table", "data": ["#
  text.reserveCapacity(rows * 110)
  for i in 0..<rows {
    if i > 0 { text += "," }
    text += #"[\#(i),"item \#(i) \u00e9t\u00e9","word \#(i % 13)",\#(Double(i % 100_000) / 100 + 0.25),\#(i &* 7919 % 1_000_003),"#
    text += i % 3 == 0 ? "true" : "false"
    text += #","2024-0\#(i % 9 + 1)-1\#(i % 9)","#
    text += i % 7 == 0 ? "null]" : #""note \#(i % 1000)"]"#
  }
  return Array((text + "]}]").utf8)
}

/// Reads every list, touching each value's bytes as a loader would (a checksum of lengths).
final class TouchingSink: TableAnswerSink, TableAnswerRowSink {
  var sum = 0

  func beginTable() {}
  func tableName(_ name: String) {}
  func endTable() {}
  func beginList(_ key: TableAnswerKey) -> TableAnswerList { key == .deleteIDs ? .ids : .rows(self) }
  func endList(_ key: TableAnswerKey, items: Int) {}
  func deleteID(_ token: JSONToken, item: Int) {}
  func value(_ token: JSONToken, row: Int, column: Int) {
    switch token {
    case .null: sum &+= 1
    case .bool(let flag): sum &+= flag ? 2 : 3
    case .number(let text), .string(let text), .nested(let text): sum &+= text.count
    }
  }
  func endRow(_ row: Int, values: Int) { sum &+= values }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  try body()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let size = Int(arguments[2]) else {
  FileHandle.standardError.write(Data("usage: dray-bench-json document|tokens|answer SIZE\n".utf8))
  exit(2)
}
switch arguments[1] {
case "document":
  let bytes = document(megabytes: size)
  var count = 0
  let time = try seconds { count = try JSONValue(parsing: bytes)["resources"]?.arrayValue?.count ?? 0 }
  precondition(count > 0)
  print(String(format: "%.4f", time))
case "tokens":
  let answers = (0..<size).map(token)
  var expires: Int64 = 0
  let time = try seconds {
    for bytes in answers { expires &+= try JSONValue(parsing: bytes)["result"]?["expires_in"]?.intValue ?? 0 }
  }
  precondition(expires == 3600 * Int64(size))
  print(String(format: "%.4f", time))
case "answer":
  let bytes = answer(rows: size)
  let sink = TouchingSink()
  let time = try seconds {
    let scanner = TableAnswerScanner(sink: sink)
    try bytes.withUnsafeBytes { all in
      var start = 0
      while start < all.count {
        let end = min(start + TableAnswerScanner.chunkSize, all.count)
        try scanner.feed(UnsafeRawBufferPointer(rebasing: all[start..<end]))
        start = end
      }
    }
    try scanner.finish()
  }
  precondition(sink.sum > 0)
  print(String(format: "%.4f", time))
default:
  FileHandle.standardError.write(Data("usage: dray-bench-json document|tokens|answer SIZE\n".utf8))
  exit(2)
}
