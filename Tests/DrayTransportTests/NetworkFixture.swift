import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation

/// An emulator serving a generated resource `BIG`, a platform client signed in to it, and a
/// folder for downloads: the setting of the fault tests.
final class NetworkFixture {
  /// Rows of `BIG`: about 1.8 MB of answer, enough for faults in the middle of a body.
  static let rows = 20_000
  /// Where generated answers are rendered once and shared by every test's emulator.
  static let cacheDirectory = FileManager.default.temporaryDirectory.path + "/dray-emulator-cache"

  let emulator: Emulator
  let folder = TemporaryDirectory("dray-net")
  let session: PlatformSession
  let client: PlatformClient
  let rows: Int

  /// - Parameters:
  ///   - clock: the clock the session renews tokens by; the real one when nil.
  ///   - compression: ask for gzip (`platform.compression`); off by default, so that the
  ///     fault tests count the same bytes on the wire as on disk.
  init(
    _ arguments: [String] = [], rows: Int = NetworkFixture.rows, exp: Bool = true, clock: TestClock? = nil, compression: Bool = false
  ) throws {
    self.rows = rows
    emulator = try Emulator(["--generate", "BIG:\(rows)", "--cache-dir", NetworkFixture.cacheDirectory] + arguments)
    session = NetworkFixture.session(emulator.url, clock: clock, compression: compression)
    client = PlatformClient(session: session, cancellation: Cancellation())
  }

  static func session(_ url: String, tls: TLSSettings = TLSSettings(), clock: TestClock? = nil, compression: Bool = false)
    -> PlatformSession
  {
    let now: @Sendable () -> ContinuousClock.Instant = { clock?.now ?? .now }
    return PlatformSession(
      settings: PlatformSettings(
        host: url, environment: "DocumentationExampleEnv", project: "DocumentationExampleProj", tls: tls,
        timeouts: Timeouts(connect: .seconds(2), idle: .seconds(5)), compression: compression),
      credentials: Credentials(username: DemoUser.name, password: DemoUser.password),
      now: now)
  }

  /// A quick policy: `count` retries 50 ms apart.
  static func policy(_ count: Int = 3) -> RetryPolicy {
    RetryPolicy(count: count, interval: .milliseconds(50), backoff: .fixed, maxInterval: .seconds(30), jitter: false)
  }

  /// Replaces the emulator's fault rules (a JSON list, see Emulator/faults.py).
  func faults(_ json: String) throws {
    try emulator.admin("POST", "faults", json: json)
  }

  func config(_ json: String) throws {
    try emulator.admin("POST", "config", json: json)
  }

  /// The answer file the emulator serves for `BIG`.
  var serverFile: String { NetworkFixture.cacheDirectory + "/generated-\(rows)-v1.json" }

  /// SHA-256 of a file's bytes.
  static func checksum(_ path: String) throws -> String {
    SHA256.hex(try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  var serverSize: Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: serverFile)[.size]) as? NSNumber)?.int64Value ?? -1
  }

  var answerPath: String { folder.path + "/big.json" }

  /// Fetches `BIG` into `answerPath` and returns the head, the call's own attempts (not
  /// the sign-in's), and the download (for its notes), or the error with the attempts.
  /// - Parameter reads: fetch it as a data read (`table_stream`), or as a uniform request.
  func fetch(
    transactionID: String? = "t-1", reads: Bool = true, policy: RetryPolicy = NetworkFixture.policy(),
    style: Download.ResumeStyle = .platform, timeouts: Timeouts? = nil
  ) -> (Result<PlatformClient.AnswerHead, any Error>, [Attempt], Download) {
    let download = Download(path: answerPath, style: style, resume: true)
    var attempts: [Attempt] = []
    if let timeouts { client.timeouts = timeouts }
    let result = Result {
      try client.rpc(
        resource: "BIG", params: .object([]), delta: nil, transactionID: transactionID, reads: reads, download: download, policy: policy,
        record: { if $0.call == nil { attempts.append($0) } })
    }
    return (result, attempts, download)
  }

  /// The emulator's log of requests to `path` (default: the rpc of `BIG`).
  func requests(_ path: String = "/api/v1/rpc/BIG/") throws -> [LoggedRequest] {
    try emulator.requests().map(LoggedRequest.init).filter { $0.path == path }
  }

  /// Every request the emulator logged.
  func allRequests() throws -> [LoggedRequest] {
    try emulator.requests().map(LoggedRequest.init)
  }
}

/// One entry of the emulator's request log.
struct LoggedRequest {
  var method: String
  var path: String
  var headers: [String: String]
  var status: Int?
  /// Answer body bytes the emulator wrote to the socket (compressed ones, for gzip).
  var responseBytes: Int64
  /// `gzip` when the answer went out compressed.
  var contentEncoding: String?
  /// The uncompressed offset a compressed answer started at (its X-Range).
  var offset: Int64?

  init(_ json: [String: Any]) {
    method = json["method"] as? String ?? ""
    path = json["path"] as? String ?? ""
    headers = json["headers"] as? [String: String] ?? [:]
    status = json["status"] as? Int
    responseBytes = (json["response_bytes"] as? NSNumber)?.int64Value ?? 0
    contentEncoding = json["content_encoding"] as? String
    offset = (json["offset"] as? NSNumber)?.int64Value
  }

  subscript(header: String) -> String? {
    headers.first { $0.key.lowercased() == header.lowercased() }?.value
  }
}

extension Result where Failure == any Error {
  /// The error's description, or nil on success.
  var errorText: String? {
    if case .failure(let error) = self { return "\(error)" }
    return nil
  }

  var error: (any Error)? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

/// A TCP socket on 127.0.0.1 that listens but never accepts, with its accept queue filled:
/// the kernel drops further SYNs, so a connect attempt hangs until its time limit.
final class StalledListener {
  let port: Int
  private var descriptors: [Int32] = []

  init() throws {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, listen(fd, 0) == 0 else { throw TestSupportError("cannot listen on loopback") }
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    port = Int(UInt16(bigEndian: address.sin_port))
    descriptors.append(fd)
    // Fill the accept queue (backlog 0 holds one connection) with connections nobody accepts.
    for _ in 0..<3 {
      let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
      _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
      }
      descriptors.append(client)
    }
    // The queue is full once it holds a connection: the listening socket is then readable.
    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&ready, 1, -1) == 1 else { throw TestSupportError("the loopback listener's queue did not fill") }
  }

  deinit { for fd in descriptors { close(fd) } }
}

/// A loopback port with nothing listening (bound once, then closed).
func closedPort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
  _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
  return Int(UInt16(bigEndian: address.sin_port))
}
