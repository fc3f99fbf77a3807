internal import DrayModel

/// Text made safe for an HTML page: markup characters escaped, control characters written out.
///
/// Step ids, table names, error messages and file names come from manifests and servers and
/// may hold `<`, `&`, quotes or Unicode's bidi formatting characters. Each of `<`, `>`, `&`,
/// `"` and `'` becomes its character reference (HTML Living Standard, "Escaping a string"),
/// so text never closes an element or an attribute; every control character becomes its
/// written-out form as in the other reports (`PrintableText.escaped`: `U+202E` shows as
/// `\u{202E}` and cannot reorder what follows, and no C0 control reaches the page, which XML
/// parsers refuse).
enum HTMLText {
  /// `text` escaped for an element's content or a quoted attribute value; with
  /// `keepingNewlines`, `\n` stays (for `<pre>` blocks).
  static func escape(_ text: String, keepingNewlines: Bool = false) -> String {
    let printable = PrintableText.escaped(text, keepingNewlines: keepingNewlines)
    guard printable.utf8.contains(where: { $0 == 0x3C || $0 == 0x3E || $0 == 0x26 || $0 == 0x22 || $0 == 0x27 }) else {
      return printable
    }
    var out = ""
    out.reserveCapacity(printable.utf8.count + 16)
    for character in printable.unicodeScalars {
      switch character {
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "&": out += "&amp;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }
}
