public import DrayModel
internal import Foundation

/// Loads a manifest file: YAML parsing, interpolation, validation, defaults.
///
/// Nothing outside the manifest (and files named by `${file:...}` or `password_file`) is
/// read, and nothing is written: validation comes before any network or disk work.
public struct ManifestLoader {
  public var environment: [String: String]

  /// - Parameter environment: variables for `${NAME}`; the process environment by default.
  public init(environment: [String: String]) {
    self.environment = environment
  }

  /// A loader reading the process environment.
  public init() {
    self.environment = ProcessInfo.processInfo.environment
  }

  /// Reads and validates the manifest at `path`.
  /// - Throws: `ManifestError` listing every problem found, each with its position.
  public func load(path: String) throws(ManifestError) -> Manifest {
    guard let data = FileManager.default.contents(atPath: path) else {
      let reason = FileManager.default.fileExists(atPath: path) ? "cannot read it (check permissions)" : "no such file"
      throw ManifestError(diagnostics: [Diagnostic(SourceLocation(file: path, line: 1, column: 1), "cannot open manifest: \(reason)")])
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw ManifestError(diagnostics: [Diagnostic(SourceLocation(file: path, line: 1, column: 1), "the manifest is not UTF-8 text")])
    }
    let absolute = URL(fileURLWithPath: path).standardizedFileURL
    return try load(text: text, path: path, directory: absolute.deletingLastPathComponent().path)
  }

  /// Validates manifest `text` as if read from `path`, with relative paths under `directory`.
  /// - Throws: `ManifestError` listing every problem found.
  public func load(text: String, path: String, directory: String) throws(ManifestError) -> Manifest {
    let root = try YAMLParser(file: path).parse(text)
    guard let root else {
      throw ManifestError(
        diagnostics: [
          Diagnostic(
            SourceLocation(file: path, line: 1, column: 1), "the manifest is empty; it needs at least 'version', 'job' and 'steps'")
        ],
        source: text)
    }
    var validator = ManifestValidator(
      path: path, directory: directory, environment: environment, root: root)
    let manifest = validator.validate()
    if let manifest, validator.reader.diagnostics.isEmpty {
      return manifest
    }
    var error = ManifestError(diagnostics: validator.reader.diagnostics, source: text)
    // A literal secret written into the manifest must not be quoted back.
    error.sourceLines = error.sourceLines.map { Substring(validator.reader.redactor.redact(String($0))) }
    throw error
  }
}
