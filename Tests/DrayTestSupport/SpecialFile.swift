import Foundation
public import Glibc
import Testing

/// Devices and FIFOs for the tests of paths dray must not replace.
public enum SpecialFile {
  /// Makes a character device (1, 3: what /dev/null is) or a FIFO at `path`.
  public static func make(_ kind: mode_t, at path: String) throws {
    let made = kind == S_IFIFO ? mkfifo(path, 0o600) : mknod(path, kind | 0o600, dev_t(1 << 8 | 3))
    #expect(made == 0, "cannot make \(path): \(String(cString: strerror(errno)))")
  }

  /// The file type of what is at `path` (a link not followed); 0 when nothing is.
  public static func type(_ path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
  }
}
