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

  public init(diagnostics: [Diagnostic], source: String = "") {
    self.diagnostics = diagnostics.sorted {
      ($0.location.line, $0.location.column) < ($1.location.line, $1.location.column)
    }
    self.sourceLines = source.split(separator: "\n", omittingEmptySubsequences: false)
  }

  public var description: String {
    diagnostics.map(render).joined(separator: "\n")
  }

  private func render(_ d: Diagnostic) -> String {
    var out = d.description
    let index = d.location.line - 1
    guard index >= 0, index < sourceLines.count else { return out }
    var line = String(sourceLines[index])
    if line.hasSuffix("\r") { line.removeLast() }
    out += "\n" + line + "\n"
    // Keep tabs so the caret lines up in a terminal.
    for (i, scalar) in line.unicodeScalars.enumerated() where i < d.location.column - 1 {
      out += scalar == "\t" ? "\t" : " "
    }
    if d.location.column - 1 > line.unicodeScalars.count {
      out += String(repeating: " ", count: d.location.column - 1 - line.unicodeScalars.count)
    }
    out += "^"
    return out
  }
}
