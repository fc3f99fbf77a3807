public import DrayModel
public import Foundation

/// A part file written by hand, as a download writes it, with the `GrowingFile` a load reads
/// it through.
public final class GrowingPart: @unchecked Sendable {
  // @unchecked: one thread at a time writes it (the test's, then its writer thread); a load
  // reads only `path` and `growing`, which are immutable and thread-safe.
  public let path: String
  /// The part open for writing, for a test that writes it as a resume would.
  public let handle: FileHandle
  public let growing = GrowingFile()
  public private(set) var size: Int64 = 0

  /// Creates the empty part `name` in `folder`, its body begun.
  public init(_ folder: TemporaryDirectory, name: String = "answer.part") throws {
    path = try folder.write(name, "")
    guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
    self.handle = handle
    growing.began(partPath: path, at: 0, whole: true)
  }

  /// Appends `text` and tells the reader.
  public func write(_ text: String) throws {
    try handle.write(contentsOf: Data(text.utf8))
    size += Int64(text.utf8.count)
    growing.grew(to: size)
  }
}
