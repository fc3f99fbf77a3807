internal import Foundation

#if canImport(Glibc)
  internal import Glibc
#endif

/// A folder that could not be made: which one, and the system's reason.
public struct FolderError: Error, Sendable, Equatable, CustomStringConvertible {
  public var folder: String
  public var reason: String
  /// Something other than a folder is in the way.
  public var notAFolder: Bool

  /// "cannot create the folder /srv/job/.dray: Permission denied", or "/srv/job/data is not a
  /// folder: Not a directory".
  public var description: String {
    notAFolder ? "\(folder) is not a folder: \(reason)" : "cannot create the folder \(folder): \(reason)"
  }
}

public enum Folders {
  /// The first folder on the way to `path` that does not exist (what `create(holding:)`
  /// would make first), or nil when the folder holding `path` exists.
  public static func firstMissing(holding path: String) -> String? {
    var folder = path.hasPrefix("/") ? "" : "."
    for component in (path as NSString).deletingLastPathComponent.split(separator: "/") {
      folder += "/" + component
      if !FileManager.default.fileExists(atPath: folder) { return folder }
    }
    return nil
  }

  /// `mkdir -p` of the folder holding `path` (mode 0755, less the umask), one component at a
  /// time, so that a failure names the folder it met and the system's reason.
  /// - Throws: `FolderError`.
  public static func create(holding path: String) throws(FolderError) {
    var folder = path.hasPrefix("/") ? "" : "."
    for component in (path as NSString).deletingLastPathComponent.split(separator: "/") {
      folder += "/" + component
      if mkdir(folder, 0o755) == 0 { continue }
      guard errno == EEXIST else { throw FolderError(folder: folder, reason: String(cString: strerror(errno)), notAFolder: false) }
      var info = stat()
      guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
        throw FolderError(folder: folder, reason: String(cString: strerror(ENOTDIR)), notAFolder: true)
      }
    }
  }
}
