public import DrayModel

/// One problem found in a manifest, at a position.
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
  public var location: SourceLocation
  public var message: String

  public init(_ location: SourceLocation, _ message: String) {
    self.location = location
    self.message = message
  }

  /// `file:line:column: error: message`
  public var description: String { "\(location): error: \(message)" }
}

/// A manifest that cannot be used: every problem found, in file order.
///
/// `description` renders each as `file:line:column: error: message`, followed by the source
/// line and a caret under the column, the way compilers print them.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
  public var diagnostics: [Diagnostic]
  /// The manifest's lines, for quoting; empty when the file could not be read.
  public var sourceLines: [Substring]
  /// Masks secrets in the quoted lines (a password written into the manifest); the caret
  /// still stands under the same character.
  public var redactor = Redactor()

  public init(diagnostics: [Diagnostic], source: String = "") {
    self.diagnostics = diagnostics.sorted {
      ($0.location.line, $0.location.column) < ($1.location.line, $1.location.column)
    }
    self.sourceLines = source.isEmpty ? [] : SourceText.lines(source)
  }

  public var description: String {
    diagnostics.map(render).joined(separator: "\n")
  }

  private func render(_ d: Diagnostic) -> String {
    var out = d.description
    let index = d.location.line - 1
    guard index >= 0, index < sourceLines.count else { return out }
    let line = String(sourceLines[index])
    let scalars = Array(line.unicodeScalars)
    let column = d.location.column - 1
    var before = String.UnicodeScalarView()
    before.append(contentsOf: scalars.prefix(column))
    let shown = redactor.redact(line)
    // What precedes the caret, as shown: masked, tabs kept so the caret lines up in a terminal.
    let prefix = redactor.redact(String(before)).unicodeScalars.map { (s: Unicode.Scalar) -> String in s == "\t" ? "\t" : " " }.joined()
    out += "\n" + shown + "\n" + prefix
    if column > scalars.count { out += String(repeating: " ", count: column - scalars.count) }
    out += "^"
    return out
  }
}

/// Line splitting as YAML counts lines (YAML 1.2.2 §5.4: LF, CR and CRLF break lines; libyaml
/// also breaks on NEL, LS and PS), so that line numbers from libyaml index these lines.
enum SourceText {
  static func lines(_ text: String) -> [Substring] {
    text.split(omittingEmptySubsequences: false) {
      $0 == "\n" || $0 == "\r\n" || $0 == "\r" || $0 == "\u{85}" || $0 == "\u{2028}" || $0 == "\u{2029}"
    }
  }
}
