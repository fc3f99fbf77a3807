internal import Foundation

#if canImport(Glibc)
  internal import Glibc
#endif

/// A file read from its first byte in chunks: a finished file, or the part a download is
/// still writing (`GrowingFile`), whose end is waited for until the download finishes. The
/// one reader of a growing part, for every load that reads an answer as it arrives
/// (docs/network.md, "Loading while downloading").
///
///     let chunks = try FileChunks(path: answer, growing: growing, chunkSize: 256 * 1024)
///     while let chunk = try chunks.next() { try parser.feed(chunk) }
public final class FileChunks {
  /// The file could not be opened or read.
  public struct Unreadable: Error, Sendable, Equatable {
    /// The file's path.
    public var path: String
    /// The system's reason (`strerror`).
    public var reason: String
  }

  /// The file's path (for a growing part, the path the finished file takes).
  public let path: String
  private let growing: GrowingFile?
  private let fd: Int32
  private let buffer: UnsafeMutableRawBufferPointer
  /// Bytes read so far.
  public private(set) var offset: Int64 = 0

  /// Opens `path`; with `growing`, waits until the download's first body begins and reads
  /// its part instead (the finished file at `path` when the download wrote no body).
  /// - Parameter chunkSize: the most bytes a chunk holds.
  /// - Throws: `Unreadable`; `GrowingFile.Stop` when the download failed or restarted its
  ///   part before it began.
  public init(path: String, growing: GrowingFile?, chunkSize: Int) throws {
    let descriptor = try growing?.takeReader() ?? open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw Unreadable(path: path, reason: String(cString: strerror(errno))) }
    self.path = path
    self.growing = growing
    fd = descriptor
    buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
  }

  deinit {
    close(fd)
    buffer.deallocate()
  }

  /// The next chunk, valid until the next call; nil at the end of the file (of a growing
  /// part: once the download finished and every byte was read).
  /// - Throws: `Unreadable`; `GrowingFile.Stop` when the download failed or restarted its
  ///   part (what was read may belong to another answer).
  public func next() throws -> UnsafeRawBufferPointer? {
    var count = read(fd, buffer.baseAddress, buffer.count)
    // At the end of a part that is still growing: wait for its next bytes, or its end.
    while count == 0, let growing, try growing.waitForBytes(after: offset) {
      count = read(fd, buffer.baseAddress, buffer.count)
    }
    guard count >= 0 else { throw Unreadable(path: path, reason: String(cString: strerror(errno))) }
    guard count > 0 else { return nil }
    offset += Int64(count)
    return UnsafeRawBufferPointer(rebasing: buffer[0..<count])
  }
}
