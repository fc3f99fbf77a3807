internal import CCurl
public import DrayModel
internal import Foundation

/// libcurl's global state, initialised once before the first handle (libcurl-thread(3)).
private let curlReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

/// An HTTP client over one libcurl easy handle, reused across requests so that connections
/// are kept alive.
///
/// Not thread-safe: use one client per thread. Bodies stream to a `ResponseSink` and are
/// never held whole in memory here. Settings applied to every request:
/// - `User-Agent: dray/<version>`; no `Accept-Encoding` (byte offsets of resumed downloads
///   count uncompressed bytes, platform-api.md §3);
/// - redirects followed up to 5; libcurl sends custom `Authorization` headers only to the
///   original host (CURLOPT_UNRESTRICTED_AUTH stays off), so credentials never cross origins;
/// - proxies from `http_proxy`, `https_proxy` and `no_proxy`, read by libcurl;
/// - TLS verification on unless the request's `tls.verify` is false;
/// - connect, whole-request and idle (low-speed: under 1 byte/s) timeouts.
public final class HTTPClient {
  private let handle: UnsafeMutableRawPointer
  /// Checked during transfers; cancelling aborts the transfer with `TransportError.cancelled`.
  public let cancellation: Cancellation
  /// Called during transfers with body bytes received so far and the expected total.
  public var progress: ((_ received: Int64, _ total: Int64?) -> Void)?

  public init(cancellation: Cancellation = Cancellation()) {
    precondition(curlReady, "libcurl failed to initialise")
    guard let handle = curl_easy_init() else { fatalError("libcurl could not create a handle (out of memory)") }
    self.handle = handle
    self.cancellation = cancellation
  }

  deinit { curl_easy_cleanup(handle) }

  /// Sends `request` once and streams a 2xx body to `sink`.
  ///
  /// A non-2xx answer is returned, not thrown, with its first 64 KiB in `errorBody`; its
  /// body never reaches the sink.
  /// - Throws: `TransportError` for failures below HTTP (DNS, connect, reset, timeouts, TLS,
  ///   truncated bodies, cancellation); errors thrown by the sink are rethrown as they are.
  public func perform(_ request: HTTPRequest, sink: any ResponseSink) throws -> HTTPResponse {
    curl_easy_reset(handle)
    let state = TransferState(sink: sink, cancellation: cancellation, progress: progress)
    var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    var headerList: UnsafeMutablePointer<curl_slist>?
    defer { curl_slist_free_all(headerList) }
    let context = Unmanaged.passUnretained(state).toOpaque()

    func set(_ option: CURLoption, _ value: Int) { _ = dray_curl_setopt_long(handle, option, value) }
    func set(_ option: CURLoption, _ value: String) { _ = dray_curl_setopt_string(handle, option, value) }

    set(CURLOPT_URL, request.url)
    set(CURLOPT_NOSIGNAL, 1)
    set(CURLOPT_USERAGENT, "dray/\(DrayVersion.current)")
    set(CURLOPT_FOLLOWLOCATION, 1)
    set(CURLOPT_MAXREDIRS, 5)
    set(CURLOPT_PROTOCOLS_STR, "http,https")
    set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    set(CURLOPT_CONNECTTIMEOUT_MS, Int(request.timeouts.connect.seconds * 1000))
    if let total = request.timeouts.request { set(CURLOPT_TIMEOUT_MS, Int(total.seconds * 1000)) }
    set(CURLOPT_LOW_SPEED_LIMIT, 1)
    set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.timeouts.idle.seconds.rounded(.up))))
    set(CURLOPT_SSL_VERIFYPEER, request.tls.verify ? 1 : 0)
    set(CURLOPT_SSL_VERIFYHOST, request.tls.verify ? 2 : 0)
    if let ca = request.tls.caFile { set(CURLOPT_CAINFO, ca) }
    set(CURLOPT_TCP_KEEPALIVE, 1)
    _ = errorBuffer.withUnsafeMutableBufferPointer { dray_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, $0.baseAddress) }

    _ = dray_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
    _ = dray_curl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, ctx in
      TransferState.from(ctx).receive(UnsafeRawBufferPointer(start: data, count: size * count))
    }
    _ = dray_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
    _ = dray_curl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, ctx in
      TransferState.from(ctx).header(UnsafeRawBufferPointer(start: data, count: size * count))
    }
    set(CURLOPT_NOPROGRESS, 0)
    _ = dray_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, context)
    _ = dray_curl_setopt_xferinfo_callback(handle) { ctx, total, now, _, _ in
      TransferState.from(ctx).tick(received: now, total: total)
    }

    var headers = request.headers
    headers.set("Expect", "")  // no 100-continue round trip
    headers.set("Accept-Encoding", "identity")
    for field in headers.fields {
      headerList = curl_slist_append(headerList, field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
    }
    _ = dray_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)

    var bodyBytes: [UInt8] = []
    switch request.method {
    case .get: set(CURLOPT_HTTPGET, 1)
    case .head: set(CURLOPT_NOBODY, 1)
    case .post: set(CURLOPT_POST, 1)
    default: set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
    }
    switch request.body {
    case .none:
      if request.method == .post { _ = dray_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, 0) }
    case .bytes(let bytes):
      bodyBytes = bytes
      if request.method != .post { set(CURLOPT_POST, 1); set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
      _ = dray_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bodyBytes.count))
    case .file(let path):
      guard let file = FileHandle(forReadingAtPath: path) else {
        throw TransportError.file(path: path, detail: "cannot open it for reading")
      }
      state.upload = file
      let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
      set(CURLOPT_UPLOAD, 1)
      if request.method != .put { set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
      _ = dray_curl_setopt_off(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(size))
      _ = dray_curl_setopt_pointer(handle, CURLOPT_READDATA, context)
      _ = dray_curl_setopt_data_callback(handle, CURLOPT_READFUNCTION) { data, size, count, ctx in
        TransferState.from(ctx).read(into: data, capacity: size * count)
      }
    }
    defer { try? state.upload?.close() }

    let code = bodyBytes.withUnsafeBufferPointer { buffer -> CURLcode in
      if case .bytes = request.body {
        _ = dray_curl_setopt_pointer(
          handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!))
      }
      return curl_easy_perform(handle)
    }
    if let sinkError = state.sinkError { throw sinkError }
    let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let host = HTTPClient.hostAndPort(request.url)
    var response = HTTPResponse(status: state.status, headers: state.headers, bytesReceived: state.received, errorBody: state.errorBody)
    if code == CURLE_OK {
      if !state.begun && (200..<300).contains(state.status) { try sink.begin(response) }
      return response
    }
    var osErrno: Int = 0
    _ = dray_curl_getinfo_long(handle, CURLINFO_OS_ERRNO, &osErrno)
    let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    switch code {
    case CURLE_ABORTED_BY_CALLBACK:
      throw TransportError.cancelled
    case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
      throw TransportError.dnsFailure(host: HTTPClient.hostName(request.url))
    case CURLE_COULDNT_CONNECT:
      if osErrno == Int(ECONNREFUSED) || reason.contains("refused") { throw TransportError.connectionRefused(host: host) }
      if osErrno == Int(ETIMEDOUT) || reason.contains("timed out") {
        throw TransportError.timeout(.connect, host: host, limit: request.timeouts.connect)
      }
      throw TransportError.other(host: host, detail: reason)
    case CURLE_OPERATION_TIMEDOUT:
      var connectTime: curl_off_t = 0
      _ = dray_curl_getinfo_off(handle, CURLINFO_CONNECT_TIME_T, &connectTime)
      if reason.contains("too slow") { throw TransportError.timeout(.idle, host: host, limit: request.timeouts.idle) }
      if connectTime == 0 && !state.sawHeaders {
        throw TransportError.timeout(.connect, host: host, limit: request.timeouts.connect)
      }
      throw TransportError.timeout(.request, host: host, limit: request.timeouts.request ?? .seconds(0))
    case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
      CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      throw TransportError.tlsFailure(host: host, detail: reason)
    case CURLE_PARTIAL_FILE:
      throw TransportError.truncated(host: host, received: state.received, detail: reason)
    case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
      if state.begun && state.received > 0 {
        throw TransportError.truncated(host: host, received: state.received, detail: reason)
      }
      throw TransportError.connectionReset(host: host, detail: reason)
    case CURLE_WRITE_ERROR:
      response.bytesReceived = state.received
      throw TransportError.other(host: host, detail: reason)
    default:
      throw TransportError.other(host: host, detail: reason)
    }
  }

  /// Bytes of the last request's head and body that reached the socket. Zero means the
  /// server cannot have acted on it, so even a non-idempotent call may be sent again.
  public var bytesSent: Int64 {
    var head = 0
    _ = dray_curl_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &head)
    var body: curl_off_t = 0
    _ = dray_curl_getinfo_off(handle, CURLINFO_SIZE_UPLOAD_T, &body)
    return Int64(head) + Int64(body)
  }

  /// `host:port` of a URL, for messages.
  public static func hostAndPort(_ url: String) -> String {
    var rest = Substring(url)
    if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
    if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) { rest = rest[..<slash] }
    if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }  // never print userinfo
    return String(rest)
  }

  /// The host name of a URL, without the port.
  public static func hostName(_ url: String) -> String {
    let hostPort = hostAndPort(url)
    if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") { return String(hostPort[...close]) }
    return String(hostPort.split(separator: ":").first ?? Substring(hostPort))
  }
}

/// Per-transfer state behind libcurl's callbacks.
private final class TransferState {
  let sink: any ResponseSink
  let cancellation: Cancellation
  let progress: ((Int64, Int64?) -> Void)?
  var status = 0
  var headers = HTTPHeaders()
  var sawHeaders = false
  var begun = false
  var received: Int64 = 0
  var errorBody: [UInt8] = []
  var sinkError: (any Error)?
  var upload: FileHandle?
  var lastProgress: Int64 = -1

  init(sink: any ResponseSink, cancellation: Cancellation, progress: ((Int64, Int64?) -> Void)?) {
    self.sink = sink
    self.cancellation = cancellation
    self.progress = progress
  }

  static func from(_ ctx: UnsafeMutableRawPointer?) -> TransferState {
    Unmanaged<TransferState>.fromOpaque(ctx!).takeUnretainedValue()
  }

  func header(_ line: UnsafeRawBufferPointer) -> Int {
    var text = String(decoding: line, as: UTF8.self)
    while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
    if text.hasPrefix("HTTP/") {
      // A new status line: a redirect or 1xx answer came before; start over.
      let parts = text.split(separator: " ", maxSplits: 2)
      status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
      headers = HTTPHeaders()
      sawHeaders = true
    } else if let colon = text.firstIndex(of: ":") {
      let name = String(text[..<colon])
      let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      headers.add(name, value)
    }
    return line.count
  }

  func receive(_ data: UnsafeRawBufferPointer) -> Int {
    if cancellation.isCancelled { return 0 }
    guard (200..<300).contains(status) else {
      let room = max(0, 65536 - errorBody.count)
      errorBody.append(contentsOf: data.prefix(room))
      return data.count
    }
    do {
      if !begun {
        begun = true
        try sink.begin(HTTPResponse(status: status, headers: headers))
      }
      try sink.write(data)
    } catch {
      sinkError = error
      return 0
    }
    received += Int64(data.count)
    return data.count
  }

  func tick(received now: curl_off_t, total: curl_off_t) -> Int32 {
    if cancellation.isCancelled { return 1 }
    if let progress, Int64(now) != lastProgress, (200..<300).contains(status) {
      lastProgress = Int64(now)
      progress(received, total > 0 ? Int64(total) : nil)
    }
    return 0
  }

  func read(into buffer: UnsafeMutablePointer<CChar>?, capacity: Int) -> Int {
    guard let upload, let buffer else { return 0 }
    if cancellation.isCancelled { return Int(CURL_READFUNC_ABORT) }
    guard let data = try? upload.read(upToCount: capacity), !data.isEmpty else { return 0 }
    data.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: data.count) }
    return data.count
  }
}
