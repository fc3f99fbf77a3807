internal import Glibc

/// An answer body with nothing in it: no bytes, or only whitespace.
///
/// Such a body is neither a JSON document (RFC 8259 §2: a JSON text is one value) nor an
/// XML one (XML 1.0 §2.1: a document has one root element), so dray refuses it wherever it
/// reads an answer, and the tables it would have replaced keep their rows. A server that has
/// no records says so with a document (`[]`, `{"data": []}`), or with a status the `http`
/// step's `on_status` names `empty`.
///
/// ```swift
/// BlankAnswer.size(of: Array("  \n".utf8))  // 3
/// BlankAnswer.size(of: Array("[]".utf8))    // nil
/// BlankAnswer.describe(bytes: 0)            // "the answer is empty"
/// ```
public enum BlankAnswer {
  /// Whether `byte` is whitespace in JSON and XML alike: space, tab, line feed, carriage
  /// return (RFC 8259 §2 `ws`, XML 1.0 §2.3 `S`).
  public static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// The size in bytes of `bytes` when they are blank (0 for none); nil when anything else
  /// is among them.
  public static func size(of bytes: some Collection<UInt8>) -> Int? {
    bytes.allSatisfy(isWhitespace) ? bytes.count : nil
  }

  /// The size in bytes of the file at `path` when it is blank; nil when it holds anything
  /// else or cannot be read. Reads only up to the first byte that is not whitespace.
  public static func size(ofFile path: String) -> Int? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var total = 0
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 { return nil }
      if count == 0 { return total }
      guard size(of: buffer[0..<count]) != nil else { return nil }
      total += count
    }
  }

  /// `the answer is empty`, or `the answer holds only whitespace (3 bytes)`.
  public static func describe(bytes: Int) -> String {
    bytes == 0 ? "the answer is empty" : "the answer holds only whitespace (\(bytes) byte\(bytes == 1 ? "" : "s"))"
  }
}
