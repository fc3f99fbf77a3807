internal import Foundation

#if canImport(Glibc)
  internal import Glibc
#endif

/// A download's part file read from its first byte while the download still writes it, so
/// that a load parses an answer as it arrives (docs/network.md, "Loading while
/// downloading").
///
/// Three parties use it, each from its own side:
///
/// - the download (`Download`, on the step's thread) reports the part: `began(partPath:at:whole:)`
///   when an answer's body starts, `grew(to:)` after each write, `discarded()` when the part is
///   removed;
/// - the step that owns the download says how it ended: `finish()` once the answer is whole and
///   verified, `fail()` otherwise;
/// - the reader (a load, on a second thread) takes a descriptor of the part with
///   `takeReader()` and, at the end of what it holds, waits with `waitForBytes(after:)`.
///
/// A part that is started again from byte 0 (a `200` to a resume, an answer that changed,
/// a part discarded) stops the reader with `Stop.restarted`: what it read may belong to
/// another answer. A failed download stops it with `Stop.failed`. The reader sees the end
/// of the file only after `finish()`, so nothing it loaded can commit before the answer is
/// verified.
public final class GrowingFile: @unchecked Sendable {
  // @unchecked: every stored property below is read and written only while `condition`'s
  // lock is held.

  /// Why a reader stopped before the end of the answer.
  public enum Stop: Error, Sendable, Equatable {
    /// The download failed: the part is incomplete or unverified.
    case failed
    /// The part was started again from byte 0.
    case restarted
  }

  private let condition = NSCondition()
  /// A body has begun (a part is open).
  private var begun = false
  /// The part's size as written so far, in bytes.
  private var size: Int64 = 0
  private var finished = false
  private var stop: Stop?
  /// A descriptor reading the part from byte 0, opened when the first body began; -1 once
  /// the reader took it, or before.
  private var reader: Int32 = -1

  public init() {}

  deinit {
    if reader >= 0 { close(reader) }
  }

  // MARK: The download's side

  /// An answer's body starts writing `partPath` at byte `offset`; `whole` when it is a whole
  /// answer (a `200`), not the rest of one (a `206`). A whole answer over bytes written
  /// before restarts the reader.
  public func began(partPath: String, at offset: Int64, whole: Bool) {
    condition.withLockAndBroadcast {
      if begun {
        if whole && size > 0 { stop = stop ?? .restarted }
      } else {
        begun = true
        reader = open(partPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if reader < 0 { stop = .restarted }
      }
      size = offset
    }
  }

  /// The part now holds `size` bytes.
  public func grew(to size: Int64) {
    condition.withLockAndBroadcast { self.size = size }
  }

  /// The part was removed: a reader of it restarts.
  public func discarded() {
    condition.withLockAndBroadcast {
      if begun { stop = stop ?? .restarted }
    }
  }

  // MARK: The owner's side

  /// The answer is whole and verified: the reader reads to the end of the part.
  public func finish() {
    condition.withLockAndBroadcast { finished = true }
  }

  /// The download failed, or its answer was refused: the reader stops.
  public func fail() {
    condition.withLockAndBroadcast { stop = stop ?? .failed }
  }

  /// Whether the part was started again from byte 0: what a reader read of it may belong to
  /// two answers, whatever error it stopped with.
  public var restarted: Bool {
    condition.withLockAndBroadcast { stop == .restarted }
  }

  // MARK: The reader's side

  /// Waits until the first body begins, then hands over a descriptor that reads the part
  /// from byte 0 (the caller closes it). nil when the download finished without writing a
  /// body (the part was whole already): the finished file is then read as usual.
  /// - Throws: `Stop`.
  public func takeReader() throws(Stop) -> Int32? {
    try condition.withLockAndBroadcast { () throws(Stop) -> Int32? in
      while !begun && !finished && stop == nil { condition.wait() }
      if let stop { throw stop }
      guard begun else { return nil }
      defer { reader = -1 }
      return reader
    }
  }

  /// Waits until the part holds more than `offset` bytes (true) or the answer is finished
  /// (false: `offset` is its end).
  /// - Throws: `Stop`.
  public func waitForBytes(after offset: Int64) throws(Stop) -> Bool {
    try condition.withLockAndBroadcast { () throws(Stop) -> Bool in
      while size <= offset && !finished && stop == nil { condition.wait() }
      if let stop { throw stop }
      return size > offset
    }
  }

}
