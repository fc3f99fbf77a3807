/// Text from outside dray (a server's error body, a data source's message, a value quoted
/// from an answer) made safe to print: one line, no control character.
///
/// A server's text must not pass for dray's own lines (`oops\n2026-11-30T12:00:00.000Z
/// job fj: succeeded` printed as two more log lines), nor drive the terminal (`ESC [2J`
/// clears the screen, `BEL` rings). docs/report.md promises no control character off a
/// terminal; on one, the only control codes are dray's own (colour, progress redraws).
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
  /// control (U+0000 to U+001F), DEL and C1 control (U+0080 to U+009F) in Swift's notation,
  /// `ESC` as `\u{1B}`. With `keepingNewlines`, `\n` stays (text of several lines of dray's
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

  /// C0 controls, DEL and C1 controls.
  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
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
