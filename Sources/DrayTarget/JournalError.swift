/// A journal dray cannot trust. Never answered by a silent fresh start: each message names
/// the journal and what to do.
public enum JournalError: Error, Sendable, CustomStringConvertible, Equatable {
  /// No file at the path (only when opening for reading).
  case missing(path: String)
  /// A 0-byte file: whatever it held is gone, so dray cannot tell which steps ran.
  case empty(path: String)
  /// Shorter than its header says (`expected` bytes), or than a header (`expected` nil).
  case cutOff(path: String, size: Int64, expected: Int64?)
  /// Not SQLite, damaged, or not readable.
  case unreadable(path: String, detail: String)
  /// A journal table with other columns than dray's.
  case wrongShape(path: String, table: String, found: [String])
  /// One journal table without the other.
  case incomplete(path: String, missing: [String])
  /// A row dray does not understand.
  case badRecord(path: String, detail: String)
  /// Sound, as far as dray can tell, but out of reach: locked by another process, or not
  /// readable or writable by this user. Nothing to restore: `advice` says what to check.
  case unavailable(path: String, detail: String, advice: String)
  /// Something other than a regular file: a folder, a device, a FIFO, a socket (`kind`, as
  /// `FileKind` names it). Never opened, never replaced.
  case notAFile(path: String, kind: String)

  /// The journal's path.
  public var path: String {
    switch self {
    case .missing(let path), .empty(let path), .cutOff(let path, _, _), .unreadable(let path, _), .wrongShape(let path, _, _),
      .incomplete(let path, _), .badRecord(let path, _), .unavailable(let path, _, _), .notAFile(let path, _):
      path
    }
  }

  public var description: String {
    switch self {
    case .missing(let path):
      "there is no run journal at \(path)"
    case .empty(let path):
      "the run journal at \(path) is empty (0 bytes), so dray cannot tell which steps already ran; restore it from a backup, or run again with --fresh to start over"
    case .cutOff(let path, let size, let expected):
      "the run journal at \(path) is cut off (\(size) bytes"
        + (expected.map { ", its header says \($0)" } ?? ", shorter than an SQLite header")
        + "), so dray cannot tell which steps already ran; restore it from a backup, or move it aside and run again with --fresh to start over"
    case .unreadable(let path, let detail):
      "the run journal at \(path) cannot be read (\(detail)); restore it from a backup, or move it aside and run again with --fresh to start over"
    case .wrongShape(let path, let table, let found):
      "the run journal at \(path) has a table \(table) of another shape (columns: \(found.isEmpty ? "none" : found.joined(separator: ", "))); it was not written by this dray. Move it aside and run again with --fresh"
    case .incomplete(let path, let missing):
      "the run journal at \(path) lacks its table\(missing.count == 1 ? "" : "s") \(missing.joined(separator: ", ")), so dray cannot tell which steps already ran; restore it from a backup, or move it aside and run again with --fresh to start over"
    case .unavailable(let path, let detail, let advice):
      "the run journal at \(path) cannot be opened (\(detail)); \(advice)"
    case .notAFile(let path, let kind):
      "the run journal at \(path) is \(kind), not an SQLite database file; dray neither opens nor replaces it: point database.path (or state.path, for a job without a database) at a regular file or a new path, or move it aside, then run again"
    case .badRecord(let path, let detail):
      "the run journal at \(path) holds a record this dray does not understand (\(detail)); it may come from a newer dray. Use that dray, or move the journal aside and run again with --fresh"
    }
  }
}
