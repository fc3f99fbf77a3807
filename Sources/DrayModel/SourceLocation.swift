/// A position in a source file: 1-based line and column (columns count Unicode scalars).
///
/// Rendered as `file:line:column`, the form compilers and editors jump to.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
  /// The file as the user named it.
  public var file: String
  /// 1-based line number.
  public var line: Int
  /// 1-based column, in Unicode scalars.
  public var column: Int

  public init(file: String, line: Int, column: Int) {
    self.file = file
    self.line = line
    self.column = column
  }

  public var description: String { "\(file):\(line):\(column)" }
}
