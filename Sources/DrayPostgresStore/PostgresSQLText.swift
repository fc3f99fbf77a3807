internal import DrayTarget

/// The statements of a step's SQL for PostgreSQL, split before any runs, so that SQL dray
/// does not run is refused before it changed anything (`UserSQLError`).
///
/// A statement ends at a `;` outside quotes and comments: `'...'` (with `''`), `E'...'`
/// (with backslash escapes), `"..."`, dollar quotes (`$$...$$`, `$tag$...$tag$`), `-- ...`
/// and nested `/* ... */` (PostgreSQL 15 documentation, §4.1 "Lexical Structure").
enum PostgresSQLText {
  /// The statements of `sql`, trimmed, without the `;` and without empty ones.
  static func statements(_ sql: String) -> [String] {
    let bytes = Array(sql.utf8)
    var statements: [String] = []
    var start = 0
    var i = 0
    func finish(_ end: Int) {
      let text = String(decoding: bytes[start..<end], as: UTF8.self).trimmingWhitespace
      if !text.isEmpty && !onlyComments(text) { statements.append(text) }
    }
    while i < bytes.count {
      let c = bytes[i]
      switch c {
      case UInt8(ascii: "'"):
        let escapes = i > 0 && (bytes[i - 1] == UInt8(ascii: "E") || bytes[i - 1] == UInt8(ascii: "e"))
        i += 1
        while i < bytes.count {
          if escapes && bytes[i] == UInt8(ascii: "\\") {
            i += 2
            continue
          }
          if bytes[i] == UInt8(ascii: "'") {
            if i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "'") {
              i += 2
              continue
            }
            break
          }
          i += 1
        }
        i += 1
      case UInt8(ascii: "\""):
        i += 1
        while i < bytes.count && bytes[i] != UInt8(ascii: "\"") { i += 1 }
        i += 1
      case UInt8(ascii: "-") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "-"):
        while i < bytes.count && bytes[i] != UInt8(ascii: "\n") { i += 1 }
      case UInt8(ascii: "/") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*"):
        var depth = 0
        while i < bytes.count {
          if bytes[i] == UInt8(ascii: "/") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*") {
            depth += 1
            i += 2
          } else if bytes[i] == UInt8(ascii: "*") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/") {
            depth -= 1
            i += 2
            if depth == 0 { break }
          } else {
            i += 1
          }
        }
      case UInt8(ascii: "$"):
        // A dollar quote's tag: `$`, then letters, digits and `_` (not starting with a digit), then `$`.
        var j = i + 1
        while j < bytes.count && (isTagByte(bytes[j])) { j += 1 }
        let startsWithDigit = j > i + 1 && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i + 1])
        guard j < bytes.count, bytes[j] == UInt8(ascii: "$"), !startsWithDigit else {
          i += 1
          continue
        }
        let tag = Array(bytes[i...j])
        i = j + 1
        while i < bytes.count {
          if bytes[i] == UInt8(ascii: "$") && i + tag.count <= bytes.count && Array(bytes[i..<(i + tag.count)]) == tag {
            i += tag.count
            break
          }
          i += 1
        }
      case UInt8(ascii: ";"):
        finish(i)
        i += 1
        start = i
      default:
        i += 1
      }
    }
    finish(min(i, bytes.count))
    return statements
  }

  private static func isTagByte(_ b: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
      || b == UInt8(ascii: "_") || b >= 0x80
  }

  private static func onlyComments(_ text: String) -> Bool {
    var rest = Substring(text)
    while !rest.isEmpty {
      if rest.hasPrefix("--") {
        rest = rest.drop(while: { $0 != "\n" })
      } else if rest.hasPrefix("/*"), let end = rest.range(of: "*/") {
        rest = rest[end.upperBound...]
      } else {
        return false
      }
      rest = Substring(String(rest).trimmingWhitespace)
    }
    return true
  }

  /// The first word of `statement`, lowercased, past leading comments.
  static func firstWord(_ statement: String) -> String {
    var rest = Substring(statement)
    while true {
      rest = Substring(String(rest).trimmingWhitespace)
      if rest.hasPrefix("--") {
        rest = rest.drop(while: { $0 != "\n" })
      } else if rest.hasPrefix("/*"), let end = rest.range(of: "*/") {
        rest = rest[end.upperBound...]
      } else {
        break
      }
    }
    return String(rest.prefix { $0.isLetter || $0 == "_" }).lowercased()
  }

  /// `UserSQLError.transactionControl` for a statement that would begin, commit or roll
  /// back a transaction, or work with savepoints or prepared transactions; nil otherwise.
  static func transactionControl(_ statement: String) -> UserSQLError? {
    let words: Set = ["begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare"]
    return words.contains(firstWord(statement)) ? .transactionControl(statement: statement) : nil
  }

  /// `UserSQLError.ownTable` for a statement that may write and names one of dray's own
  /// tables or functions (`_dray_...`, compared without regard to case), or that would turn
  /// triggers off (so the table guard's, `PostgresTableGuard`: `ALTER TABLE ... DISABLE
  /// TRIGGER`, `ENABLE REPLICA|ALWAYS TRIGGER`, `session_replication_role`, named as
  /// `_dray_guard`, as its trigger and function are); nil otherwise. A statement that starts as a read (`SELECT`, `WITH`,
  /// `EXPLAIN`, ...) may write all the same through `INSERT`, `UPDATE`, `DELETE` or `MERGE`
  /// (a data-modifying `WITH`, `EXPLAIN ANALYZE`): such words make it a write. The check
  /// reads the text; SQL built at run time (`EXECUTE` in a `DO` block) escapes it.
  static func ownTableWrite(_ statement: String) -> UserSQLError? {
    let lower = statement.lowercased()
    let words = lower.split { !($0.isLetter || $0.isNumber || $0 == "_") }
    if words.contains("session_replication_role") || (firstWord(statement) == "alter" && switchesTriggers(words)) {
      return .tableGuard(statement: statement)
    }
    let reads: Set = ["select", "with", "table", "values", "explain", "show"]
    let modifying: Set<Substring> = ["insert", "update", "delete", "merge"]
    if reads.contains(firstWord(statement)) && !words.contains(where: modifying.contains) { return nil }
    guard let range = lower.range(of: "_dray_") else { return nil }
    let name = lower[range.lowerBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
    // The guard's trigger and its function (`_dray_guard_mark`) are named as the guard.
    if name == PostgresTableGuard.trigger || name == PostgresTableGuard.function { return .tableGuard(statement: statement) }
    return .ownTable(String(name), statement: statement, trigger: nil)
  }

  /// Whether `words` hold `DISABLE TRIGGER`, or `ENABLE REPLICA TRIGGER` or `ENABLE ALWAYS
  /// TRIGGER` (PostgreSQL 15 documentation, ALTER TABLE): after them a trigger stops firing
  /// or fires otherwise.
  private static func switchesTriggers(_ words: [Substring]) -> Bool {
    words.indices.dropFirst().contains { index in
      guard words[index] == "trigger" else { return false }
      let before = words[index - 1]
      return before == "disable" || ((before == "replica" || before == "always") && index >= 2 && words[index - 2] == "enable")
    }
  }
}

extension String {
  var trimmingWhitespace: String {
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
      let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
    else { return "" }
    return String(scalars[first...last])
  }
}
