internal import Glibc

/// What is on disk at a path dray is about to create, replace or open as a file.
///
/// Wherever dray writes a file (the database and run journal, the reports, the outputs of
/// steps, downloads) it writes a temporary file and renames it over the path, or opens the
/// path as an SQLite database. Either would replace, or hang on, a device, a FIFO or a
/// socket, and fails with a baffling error on a folder. So an existing path must be a
/// regular file, or absent; anything else is refused by name before anything is written.
///
/// ```swift
/// FileKind.refusal(at: "/tmp/x/mynull")   // "a character device"
/// FileKind.refusal(at: "/tmp/x/out.json") // nil: a regular file, or nothing there
/// ```
public enum FileKind {
  /// How a message names what is at `path` when it is not a regular file: `a folder`,
  /// `a character device`, `a block device`, `a FIFO (named pipe)`, `a socket`; nil when
  /// nothing is there (or it cannot be looked at) or it is a regular file.
  ///
  /// - Parameter followingLinks: look at what a symbolic link at `path` leads to (for a file
  ///   that is opened, such as the database); without it a link is nil (a rename replaces
  ///   the link itself, never what it leads to).
  public static func refusal(at path: String, followingLinks: Bool = false) -> String? {
    var info = stat()
    let found = followingLinks ? stat(path, &info) : lstat(path, &info)
    guard found == 0 else { return nil }
    return name(info.st_mode)
  }

  /// What stands in the way of creating `path` (an absolute path) as things are on disk:
  /// the first folder on the way to it that exists but is not a folder, named with what it
  /// is (`/srv/job/afile is a regular file`); nil when every one that exists is a folder
  /// (what is missing dray creates). Symbolic links on the way are followed, as opening
  /// the path would.
  public static func blockedAncestor(of path: String) -> String? {
    var prefix = ""
    for component in path.split(separator: "/").dropLast() {
      prefix += "/" + component
      var info = stat()
      guard stat(prefix, &info) == 0 else { return nil }
      if info.st_mode & S_IFMT != S_IFDIR { return "\(prefix) is \(name(info.st_mode) ?? "a regular file")" }
    }
    return nil
  }

  /// `a folder`, `a FIFO (named pipe)`, …, for the file type in `mode`; nil for a regular
  /// file or a symbolic link.
  static func name(_ mode: mode_t) -> String? {
    switch mode & S_IFMT {
    case S_IFREG, S_IFLNK: nil
    case S_IFDIR: "a folder"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFIFO: "a FIFO (named pipe)"
    case S_IFSOCK: "a socket"
    default: "not a regular file"
    }
  }
}
