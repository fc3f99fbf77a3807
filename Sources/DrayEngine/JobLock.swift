internal import DrayModel
internal import Foundation
internal import Glibc

/// One run at a time per job: an advisory `flock(2)` on `<state.path>/<job>.lock`.
///
/// The kernel drops the lock when its process dies, however it dies, so a lock left by a
/// dead process is free to take. The file holds the holder's process id and start time for
/// the message a second run prints. It is never opened through a symbolic link
/// (`O_NOFOLLOW`): a link in its place is refused, and what it points to left as it was.
final class JobLock {
  let path: String
  private let fd: Int32

  /// Who holds a lock.
  struct Holder: Equatable {
    var processID: Int
    var startedAt: String
  }

  enum Failure: Error {
    case held(Holder?)
    case cannotOpen(path: String, detail: String)
    /// The lock's path is a symbolic link to `target`.
    case symbolicLink(path: String, target: String)
  }

  /// Takes the lock, without waiting.
  /// - Throws: `Failure.held` naming the holder when another process has it.
  init(path: String, startedAt: String) throws(Failure) {
    self.path = path
    do {
      try Folders.create(holding: path)
    } catch {
      // Said as the cause: the open below would only say the folder is missing.
      throw .cannotOpen(path: path, detail: error.description)
    }
    // Opening a device can act on it, and the holder's line would be written into it.
    if let kind = FileKind.refusal(at: path) {
      throw .cannotOpen(path: path, detail: "it is \(kind), not a regular file, and dray keeps only its own lock file there; remove it")
    }
    let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      if errno == ELOOP { throw .symbolicLink(path: path, target: JobFolder.linkTarget(path)) }
      throw .cannotOpen(path: path, detail: String(cString: strerror(errno)))
    }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      // The holder writes its line just after taking the lock; give it a moment.
      var holder = JobLock.readHolder(fd)
      for _ in 0..<5 where holder == nil {
        usleep(20_000)
        holder = JobLock.readHolder(fd)
      }
      close(fd)
      throw .held(holder)
    }
    self.fd = fd
    let text = "\(getpid()) \(startedAt)\n"
    _ = ftruncate(fd, 0)
    _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
  }

  deinit {
    flock(fd, LOCK_UN)
    close(fd)
  }

  private static func readHolder(_ fd: Int32) -> Holder? {
    var buffer = [UInt8](repeating: 0, count: 256)
    let n = pread(fd, &buffer, buffer.count, 0)
    guard n > 0 else { return nil }
    let parts = String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).split(
      separator: " ", maxSplits: 1)
    guard parts.count == 2, let pid = Int(parts[0]) else { return nil }
    return Holder(processID: pid, startedAt: String(parts[1]))
  }
}
