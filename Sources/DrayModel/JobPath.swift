/// The lexical rule for the files a step reads and writes: they stay inside the job folder.
///
/// A step's `output` (`table`, `request`, `query`) and `local` (`files`) are relative paths
/// under the job folder, the folder holding the manifest. This type checks the text alone:
/// it refuses absolute paths, paths that climb out with `..`, and empty paths, and it removes
/// `.` and repeated `/`. Whether a symbolic link on the way leads out can only be known on
/// disk; the engine checks that when it opens the file.
///
/// ```swift
/// try JobPath.normalize("out/./a//b.json")   // "out/a/b.json"
/// try JobPath.normalize("out/../a.json")     // "a.json"
/// try JobPath.normalize("../a.json")         // throws .escapes
/// ```
public enum JobPath {
  /// Why a path was refused.
  public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case absolute(String)
    case escapes(String)
    case invalidCharacter(String)

    public var description: String {
      switch self {
      case .empty: "the path is empty"
      case .absolute(let p): "'\(p)' is an absolute path; give a path relative to the job folder"
      case .escapes(let p): "'\(p)' leads outside the job folder (through '..')"
      case .invalidCharacter(let p): "'\(p.replacing("\u{0}", with: "\\0"))' holds a NUL character"
      }
    }
  }

  /// `path` with `.`, empty components and inner `..` removed.
  /// - Returns: the normalised relative path (`.` for the job folder itself).
  /// - Throws: `Problem` when the path is empty, absolute, holds NUL, or climbs out.
  public static func normalize(_ path: String) throws(Problem) -> String {
    if path.isEmpty { throw .empty }
    if path.contains("\u{0}") { throw .invalidCharacter(path) }
    if path.hasPrefix("/") { throw .absolute(path) }
    var kept: [Substring] = []
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      switch component {
      case ".": continue
      case "..":
        if kept.isEmpty { throw .escapes(path) }
        kept.removeLast()
      default: kept.append(component)
      }
    }
    return kept.isEmpty ? "." : kept.joined(separator: "/")
  }

  /// An absolute path with `.`, empty components and `..` removed, by the text alone (`..`
  /// at the root stays at the root). A relative path is returned with the same treatment,
  /// a leading `..` kept.
  ///
  /// ```swift
  /// JobPath.lexical("/jobs/a/./data/../db.sqlite")   // "/jobs/a/db.sqlite"
  /// ```
  public static func lexical(_ path: String) -> String {
    let absolute = path.hasPrefix("/")
    var kept: [Substring] = []
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      switch component {
      case ".": continue
      case "..":
        if let last = kept.last, last != ".." {
          kept.removeLast()
        } else if !absolute {
          kept.append(component)
        }
      default: kept.append(component)
      }
    }
    if absolute { return "/" + kept.joined(separator: "/") }
    return kept.isEmpty ? "." : kept.joined(separator: "/")
  }

  /// Whether the absolute path `path` lies inside the folder `folder` (both lexical, as
  /// `lexical(_:)` returns them); a folder is not inside itself.
  public static func isInside(_ path: String, _ folder: String) -> Bool {
    folder == "/" ? path != "/" && path.hasPrefix("/") : path.hasPrefix(folder + "/")
  }

  /// Whether `name`, given by a server, is one plain path component that may name a file in
  /// a local folder: not empty, not `.` or `..`, without `/` or NUL.
  public static func isPlainName(_ name: String) -> Bool {
    !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\u{0}")
  }
}
