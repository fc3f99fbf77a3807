internal import DrayModel
internal import Foundation

/// Resolves `${...}` references in manifest strings, after YAML parsing.
///
/// - `${NAME}`: the environment variable NAME; an error when it is not set.
/// - `${NAME:-default}`: NAME when it is set and not empty, otherwise `default` (as in POSIX sh);
///   the default may hold references itself: `${A:-${B:-x}}`.
/// - `${file:PATH}`: the contents of PATH (relative to the job folder), without one trailing
///   newline; always a secret.
/// - `$$`: a literal `$`. A `$` followed by anything else is kept as is.
///
/// A variable or file holding a NUL character (U+0000) is refused: SQLite, libcurl and the
/// file system read it as the end of the text, so the value would be cut short there.
///
/// Substitution happens on parsed values, never on the manifest's text, so a value that
/// holds `#`, quotes, `: ` or `$` arrives exactly as it was set.
struct Interpolator {
  /// A resolved string and what it drew on.
  struct Result {
    var value: String
    /// True when any part came from `${file:...}` or from a variable listed as secret.
    var isSecret: Bool
    /// The secret parts, to register for masking.
    var secretParts: [String]
  }

  let environment: [String: String]
  /// Variables listed in the manifest's `secrets:`.
  let secretVariables: Set<String>
  /// The job folder, for `${file:...}`.
  let directory: String

  /// This interpolator with variable `name` set to `value`.
  func setting(_ name: String, to value: String) -> Interpolator {
    Interpolator(environment: environment.merging([name: value]) { $1 }, secretVariables: secretVariables, directory: directory)
  }

  /// - Throws: a message naming the variable or file at fault (never a value).
  func resolve(_ text: String) throws(InterpolationError) -> Result {
    guard Self.mayHoldReference(text) else { return Result(value: text, isSecret: false, secretParts: []) }
    var secretParts: [String] = []
    let value = try resolve(Substring(text), secretParts: &secretParts)
    return Result(value: value, isSecret: !secretParts.isEmpty, secretParts: secretParts)
  }

  private func resolve(_ text: Substring, secretParts: inout [String]) throws(InterpolationError) -> String {
    var out = ""
    var rest = text
    while let dollar = rest.firstIndex(of: "$") {
      out += rest[..<dollar]
      let after = rest.index(after: dollar)
      if after < rest.endIndex && rest[after] == "$" {
        out += "$"
        rest = rest[rest.index(after: after)...]
        continue
      }
      guard after < rest.endIndex, rest[after] == "{" else {
        out += "$"
        rest = rest[after...]
        continue
      }
      guard let close = Self.closingBrace(rest[rest.index(after: after)...]) else {
        throw .unterminated
      }
      let body = rest[rest.index(after: after)..<close]
      rest = rest[rest.index(after: close)...]
      let value: String
      if body.hasPrefix("file:") {
        let path = String(body.dropFirst(5))
        value = try readFile(path)
        guard !Self.holdsNUL(value) else { throw .nulInFile(path) }
        secretParts.append(value)
      } else {
        let (name, fallback) = split(body)
        guard Self.isVariableName(name) else { throw .badName(String(body)) }
        if let set = environment[name], !(fallback != nil && set.isEmpty) {
          guard !Self.holdsNUL(set) else { throw .nulInVariable(name) }
          value = set
          if secretVariables.contains(name) { secretParts.append(value) }
        } else if let fallback {
          // A default may itself hold references: ${A:-${B:-x}}.
          value = try resolve(fallback, secretParts: &secretParts)
        } else {
          throw .unset(name)
        }
      }
      out += value
    }
    out += rest
    return out
  }

  /// Whether `text` holds a `$` at all: most values do not, and a `memchr` over the bytes
  /// keeps a 5 MB SQL block cheap.
  static func mayHoldReference(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
      guard let base = bytes.baseAddress else { return false }
      return memchr(base, Int32(UInt8(ascii: "$")), bytes.count) != nil
    }
  }

  /// Whether `text` holds U+0000 (a `memchr` over the bytes, as for `$`).
  static func holdsNUL(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
      guard let base = bytes.baseAddress else { return false }
      return memchr(base, 0, bytes.count) != nil
    }
  }

  /// Whether `text` is one whole reference, `${NAME}`, `${NAME:-default}` or `${file:PATH}`,
  /// with nothing before or after it.
  static func isOneReference(_ text: String) -> Bool {
    guard text.hasPrefix("${"), let close = closingBrace(text.dropFirst(2)) else { return false }
    return text.index(after: close) == text.endIndex
  }

  /// The `}` closing a reference whose body starts at `text`, skipping nested `${...}`.
  static func closingBrace(_ text: Substring) -> Substring.Index? {
    var depth = 0
    var index = text.startIndex
    while index < text.endIndex {
      let c = text[index]
      let next = text.index(after: index)
      if c == "$" && next < text.endIndex && text[next] == "{" {
        depth += 1
        index = text.index(after: next)
        continue
      }
      if c == "}" {
        if depth == 0 { return index }
        depth -= 1
      }
      index = next
    }
    return nil
  }

  private func split(_ body: Substring) -> (String, Substring?) {
    guard let range = body.range(of: ":-") else { return (String(body), nil) }
    return (String(body[..<range.lowerBound]), body[range.upperBound...])
  }

  /// `[A-Za-z_][A-Za-z0-9_]*`, the names POSIX sh expands.
  static func isVariableName(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else {
      return false
    }
    return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
  }

  private func readFile(_ path: String) throws(InterpolationError) -> String {
    guard !path.isEmpty else { throw .noFile }
    let full = path.hasPrefix("/") ? path : directory + "/" + path
    // Looked at before it is opened: reading a FIFO would wait for a writer forever.
    if let kind = FileKind.refusal(at: full, followingLinks: true) { throw .notRegularFile(path, kind: kind) }
    guard let data = FileManager.default.contents(atPath: full) else {
      throw .unreadableFile(path)
    }
    guard var text = String(data: data, encoding: .utf8) else { throw .notUTF8(path) }
    if text.hasSuffix("\r\n") {
      text.removeLast(1)
    } else if text.hasSuffix("\n") {
      text.removeLast()
    }
    return text
  }
}

/// Why a `${...}` reference could not be resolved. Messages name variables and files,
/// never their values.
enum InterpolationError: Error, CustomStringConvertible {
  case unset(String)
  case unterminated
  case badName(String)
  case unreadableFile(String)
  /// The path names a folder, a device, a FIFO or a socket (`FileKind`).
  case notRegularFile(String, kind: String)
  case notUTF8(String)
  case noFile
  /// The variable's value holds U+0000, which C libraries (SQLite, libcurl) read as its end.
  case nulInVariable(String)
  /// The file holds U+0000.
  case nulInFile(String)

  var description: String { description(secret: false) }

  /// The message; for a `secret` value, an unset variable's hint never suggests writing the
  /// value into the manifest as a default, but reading it from a file (with `fileKey`, the
  /// sibling key that names one, such as `password_file`, when there is one).
  func description(secret: Bool, fileKey: String? = nil) -> String {
    switch self {
    case .unset(let name) where secret:
      "environment variable \(name) is not set; set it, or read the secret from a file with ${file:PATH}\(fileKey.map { " or '\($0)'" } ?? "") (a value written in the manifest is no secret)"
    case .unset(let name):
      "environment variable \(name) is not set; set it, or give a default with ${\(name):-default}"
    case .unterminated:
      "'${' has no closing '}'; write '$$' for a literal '$'"
    case .badName(let body):
      "'${\(body)}' is not a reference; use ${NAME}, ${NAME:-default} or ${file:PATH}, or '$$' for a literal '$'"
    case .unreadableFile(let path):
      "cannot read file '\(path)' named by ${file:\(path)}; check that it exists and is readable"
    case .notRegularFile(let path, let kind):
      "'\(path)' named by ${file:\(path)} is \(kind), not a regular file; name a regular file"
    case .noFile:
      "'${file:}' names no file; write ${file:PATH}, the path relative to the job folder"
    case .notUTF8(let path):
      "file '\(path)' named by ${file:\(path)} is not UTF-8 text"
    case .nulInVariable(let name):
      "environment variable \(name) holds a NUL character (U+0000), which would cut the value short; remove it"
    case .nulInFile(let path):
      "file '\(path)' named by ${file:\(path)} holds a NUL character (U+0000), which would cut the value short; remove it from the file"
    }
  }
}
