public import DrayModel
internal import Foundation

/// Loads a manifest file: YAML parsing, interpolation, validation, defaults.
///
/// Nothing outside the manifest (and files named by `${file:...}` or `password_file`) is
/// read, and nothing is written: validation comes before any network or disk work.
public struct ManifestLoader {
  public var environment: [String: String]
  /// When true, a credential whose variable is unset or whose file cannot be read is no
  /// error but listed in `Manifest.unresolvedSecrets`: `dray plan` and `dray status` need
  /// no secret. `dray run` keeps the default, false.
  public var secretsMayBeMissing = false
  /// When true, only the blocks that say where the job keeps its records are read:
  /// `version`, `job`, `database`, `state`, `download` and `report`. The rest (`platform`,
  /// `auth`, `secrets`' own checks, `steps`, ...) is neither resolved nor validated, so a
  /// `${VAR}` there need not be set; the manifest returned has no platform, auth or steps.
  /// For `dray status` and `dray report`, which read the journal and the reports only.
  public var recordsOnly = false

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
    // What is there is looked at before it is opened: reading a FIFO would wait for a
    // writer forever, and a device (`/dev/null`) is no manifest.
    let kind = FileKind.refusal(at: path, followingLinks: true)
    guard kind == nil, let data = FileManager.default.contents(atPath: path) else {
      let reason =
        kind == "a folder"
        ? "it is a folder; name the manifest file"
        : kind.map { "it is \($0); a manifest must be a regular file" }
          ?? (FileManager.default.fileExists(atPath: path) ? "cannot read it (check permissions)" : "no such file")
      throw ManifestError(diagnostics: [Diagnostic(SourceLocation(file: path, line: 1, column: 1), "cannot open manifest: \(reason)")])
    }
    guard let text = String(validating: data, as: UTF8.self) else {
      throw ManifestError(diagnostics: [Self.notUTF8(data, path: path)])
    }
    let absolute = URL(fileURLWithPath: path).standardizedFileURL
    return try load(text: text, path: path, directory: absolute.deletingLastPathComponent().path)
  }

  /// Validates manifest `text` as if read from `path`, with relative paths under `directory`.
  /// - Throws: `ManifestError` listing every problem found.
  public func load(text: String, path: String, directory: String) throws(ManifestError) -> Manifest {
    // The YAML reader's problems (a duplicate key, a refused tag) do not stop validation:
    // one pass names every problem.
    let (root, problems) = try YAMLParser(file: path).parseKeepingProblems(text)
    guard let root else {
      throw ManifestError(
        diagnostics: problems + [
          Diagnostic(
            SourceLocation(file: path, line: 1, column: 1), "the manifest is empty; it needs at least 'version', 'job' and 'steps'")
        ],
        source: text)
    }
    var validator = ManifestValidator(
      path: path, directory: directory, environment: environment, root: root, source: text)
    validator.reader.secretsMayBeMissing = secretsMayBeMissing
    validator.recordsOnly = recordsOnly
    validator.reader.diagnostics = problems + validator.reader.diagnostics
    if var manifest = validator.validate(), validator.reader.diagnostics.isEmpty {
      manifest.unresolvedSecrets = validator.reader.unresolvedSecrets
      let redactor = validator.reader.redactor
      manifest.warnings = validator.reader.warnings.sorted {
        ($0.location.line, $0.location.column) < ($1.location.line, $1.location.column)
      }
      .map { "\($0.location): warning: \(redactor.redact($0.message))" }
      return manifest
    }
    // A secret must not be quoted back: not in a message (a wrong-typed value from a secret
    // variable), not in a source line (a literal password written into the manifest).
    let redactor = validator.reader.redactor
    let diagnostics = validator.reader.diagnostics.map { Diagnostic($0.location, redactor.redact($0.message)) }
    var error = ManifestError(diagnostics: diagnostics, source: text)
    error.redactor = redactor
    throw error
  }

  /// The position of the first byte that is not UTF-8, for the error.
  static func notUTF8(_ data: Data, path: String) -> Diagnostic {
    var line = 1
    var lineStart = 0
    var index = 0
    let bytes = [UInt8](data)
    while index < bytes.count {
      let byte = bytes[index]
      let length =
        switch byte {
        case 0x00...0x7F: 1
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 0
        }
      let end = index + length
      let valid =
        length > 0 && end <= bytes.count
        && String(validating: bytes[index..<end], as: UTF8.self) != nil
      if !valid {
        let column = (String(validating: bytes[lineStart..<index], as: UTF8.self)?.unicodeScalars.count ?? 0) + 1
        let hex = String(byte, radix: 16, uppercase: true)
        return Diagnostic(
          SourceLocation(file: path, line: line, column: column),
          "the manifest is not UTF-8 text: byte 0x\(hex.count == 1 ? "0" + hex : hex) here is not UTF-8; save the file as UTF-8")
      }
      if byte == UInt8(ascii: "\n") {
        line += 1
        lineStart = end
      }
      index = end
    }
    return Diagnostic(SourceLocation(file: path, line: 1, column: 1), "the manifest is not UTF-8 text")
  }
}
