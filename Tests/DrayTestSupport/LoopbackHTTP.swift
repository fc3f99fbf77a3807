public import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One HTTP/1.1 request to a test server on 127.0.0.1 over a plain socket, for tests that
/// call a server's admin endpoints thousands of times (`Curl.send` starts a process each
/// time). `Connection: close`; the body is read to the end of the stream.
public enum LoopbackHTTP {
  /// Sends `method` to `url` (`http://127.0.0.1:PORT/path`) with a JSON `body`.
  /// - Returns: the answer's body.
  /// - Throws: `TestSupportError` when the URL is not one of 127.0.0.1, or the socket fails.
  public static func send(_ method: String, _ url: String, body: String? = nil) throws -> Data {
    guard let parsed = URL(string: url), parsed.host == "127.0.0.1", let port = parsed.port else {
      throw TestSupportError("LoopbackHTTP calls 127.0.0.1 only: \(url)")
    }
    let path = parsed.path.isEmpty ? "/" : parsed.path + (parsed.query.map { "?" + $0 } ?? "")
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw TestSupportError("connect to \(url): \(errno)") }
    let payload = Array((body ?? "").utf8)
    var request = Array(
      "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n"
        .utf8)
    request += payload
    var sent = 0
    while sent < request.count {
      let n = request[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      guard n > 0 else { throw TestSupportError("write to \(url): \(errno)") }
      sent += n
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      guard n > 0 else { break }
      answer += buffer[0..<n]
    }
    let separator: [UInt8] = [13, 10, 13, 10]
    guard let end = (0..<max(0, answer.count - 3)).first(where: { Array(answer[$0..<$0 + 4]) == separator }) else {
      throw TestSupportError("no HTTP answer from \(url)")
    }
    return Data(answer[(end + 4)...])
  }
}

extension LoopbackHTTP {
  /// One kept-alive HTTP/1.1 connection to a test server on 127.0.0.1, for a test that calls
  /// its admin endpoints thousands of times in a row: each call writes a request and reads
  /// the answer's head and its `Content-Length` bytes, with no connection set up and torn
  /// down each time. A connection the server closed (or never opened) is opened again once
  /// when it was. One caller at a time.
  public final class Connection {
    private let host: String
    private let port: Int
    private var fd: Int32 = -1
    /// Bytes read past the last answer (none, with a server that answers one request at a time).
    private var pending: [UInt8] = []
    /// Where each read lands.
    private var buffer = [UInt8](repeating: 0, count: 16384)

    /// A connection to `url` (`http://127.0.0.1:PORT/`), opened at the first call.
    /// - Throws: `TestSupportError` when the URL is not one of 127.0.0.1.
    public init(_ url: String) throws {
      guard let parsed = URL(string: url), parsed.host == "127.0.0.1", let port = parsed.port else {
        throw TestSupportError("LoopbackHTTP calls 127.0.0.1 only: \(url)")
      }
      host = "127.0.0.1:\(port)"
      self.port = port
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends `method` to `path` (`/admin/orders`) with a JSON `body`.
    /// - Returns: the answer's body.
    /// - Throws: `TestSupportError` when the server cannot be reached or answers without a
    ///   `Content-Length`.
    public func send(_ method: String, _ path: String, body: String? = nil) throws -> Data {
      let kept = fd >= 0
      do {
        return try exchange(method, path, body)
      } catch  where kept {
        // A kept connection the server closed meanwhile: once more on a new one.
        reset()
        return try exchange(method, path, body)
      }
    }

    private func reset() {
      if fd >= 0 { close(fd) }
      fd = -1
      pending = []
    }

    private func open() throws {
      fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
      var yes: Int32 = 1
      setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(port).bigEndian)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      guard connected == 0 else {
        reset()
        throw TestSupportError("connect to \(host): \(errno)")
      }
    }

    private func exchange(_ method: String, _ path: String, _ body: String?) throws -> Data {
      if fd < 0 { try open() }
      let payload = Array((body ?? "").utf8)
      let request =
        Array(
          "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n".utf8)
        + payload
      var sent = 0
      while sent < request.count {
        let n = request[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { throw TestSupportError("write to \(host)\(path): \(errno)") }
        sent += n
      }
      let separator: [UInt8] = [13, 10, 13, 10]
      var searched = 0
      var headEnd: Int?
      while headEnd == nil {
        if pending.count >= 4 {
          headEnd = (max(0, searched - 3)..<(pending.count - 3)).first { pending[$0..<$0 + 4].elementsEqual(separator) }
          searched = pending.count
        }
        if headEnd == nil { try fill(path) }
      }
      guard let headEnd else { throw TestSupportError("no HTTP answer from \(host)\(path)") }
      let head = String(decoding: pending[..<headEnd], as: UTF8.self).lowercased()
      guard
        let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
        let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
      else { throw TestSupportError("an answer without Content-Length from \(host)\(path)") }
      let start = headEnd + 4
      while pending.count < start + length { try fill(path) }
      let answer = Data(pending[start..<start + length])
      pending.removeFirst(start + length)
      if head.contains("\r\nconnection: close") { reset() }
      return answer
    }

    /// Reads what the server sent into `pending`.
    private func fill(_ path: String) throws {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      guard n > 0 else { throw TestSupportError("the connection to \(host) closed before the answer to \(path) was whole") }
      pending += buffer[0..<n]
    }
  }
}
