/// Text from outside dray (a server's error body, a data source's message, a value quoted
/// from an answer) made safe to print: one line, no control character.
///
/// A server's text must not pass for dray's own lines (`oops\n2026-11-30T12:00:00.000Z
/// job fj: succeeded` printed as two more log lines), nor drive the terminal (`ESC [2J`
/// clears the screen, `BEL` rings), nor reorder what is shown with Unicode's bidi
/// formatting characters (`U+202E` before `gnp.exe` shows it as `exe.png`: Trojan Source,
/// CVE-2021-42574). docs/report.md promises no control character off a terminal; on one,
/// the only control codes are dray's own (colour, progress redraws).
///
/// ```swift
/// PrintableText.oneLine("oops\r\n  \u{1B}[31mred\u{07}")
/// // oops ⏎ \u{1B}[31mred\u{7}   (the escapes as plain text)
/// ```
public enum PrintableText {
  /// What a line break in outside text is shown as.
  public static let lineBreak = "⏎"

  /// `text` as one printable line: each line break (LF, CR, CRLF, NEL, U+2028, U+2029)
  /// with the spaces and tabs around it becomes ` ⏎ `, blank lines are dropped, and every
  /// other control character is escaped (`escaped(_:)`). Idempotent: a line made by it
  /// comes back unchanged.
  public static func oneLine(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsWork) else { return text }
    var lines: [String] = []
    var current = String.UnicodeScalarView()
    func endLine() {
      let line = String(current).trimmingWhiteSpace()
      if !line.isEmpty { lines.append(line) }
      current = String.UnicodeScalarView()
    }
    for scalar in text.unicodeScalars {
      if isLineBreak(scalar) {
        endLine()
      } else {
        current.append(scalar)
      }
    }
    endLine()
    return escaped(lines.joined(separator: " \(lineBreak) "))
  }

  /// `text` with each control character written out: a tab as a space, and every other C0
  /// control (U+0000 to U+001F), DEL, C1 control (U+0080 to U+009F) and bidi formatting
  /// character (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069: the explicit
  /// formatting characters of Unicode's bidi algorithm, UAX #9 §2) in Swift's notation,
  /// `ESC` as `\u{1B}`, RIGHT-TO-LEFT OVERRIDE as `\u{202E}`. With `keepingNewlines`, `\n` stays (text of several lines of dray's
  /// own, such as the summary).
  public static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
    guard text.unicodeScalars.contains(where: { isControl($0) && !(keepingNewlines && $0 == "\n") }) else { return text }
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
      if !isControl(scalar) || (keepingNewlines && scalar == "\n") {
        out.append(scalar)
      } else if scalar == "\t" {
        out.append(" ")
      } else {
        out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
      }
    }
    return String(out)
  }

  /// `text` cut to its first `limit` characters, the last of them `…`, when it is longer: a
  /// value quoted from outside dray (a row id, a table's name) kept short in a message and a
  /// report, however large the answer made it. Reads at most `limit + 1` characters.
  public static func excerpt(_ text: String, limit: Int = 64) -> String {
    guard text.dropFirst(limit).isEmpty else { return String(text.prefix(limit - 1)) + "…" }
    return text
  }

  /// C0 controls, DEL, C1 controls and bidi formatting characters.
  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }

  static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x0A, 0x0D, 0x85, 0x2028, 0x2029: true
    default: false
    }
  }

  private static func needsWork(_ scalar: Unicode.Scalar) -> Bool {
    isControl(scalar) || isLineBreak(scalar)
  }
}

extension String {
  /// The string without spaces and tabs at either end.
  fileprivate func trimmingWhiteSpace() -> String {
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
      let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })
    else { return "" }
    return String(scalars[first...last])
  }
}
