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
