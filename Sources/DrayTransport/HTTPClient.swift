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
/// - `User-Agent: dray/<version>`; `Accept-Encoding` from `HTTPRequest.acceptEncoding`:
///   `identity` unless the caller asks for a content coding, which is then decoded as it
///   arrives (sinks see decoded bytes); an answer in a content coding that was not asked
///   for fails as `badAnswer`, naming it, instead of reaching the sink undecoded;
/// - redirects followed by `RedirectState` (at most 5, no loops, credentials kept to the
///   first origin); libcurl's own following is off;
/// - proxies from the environment, read by libcurl: `http_proxy` (lower case only: libcurl
///   ignores `HTTP_PROXY`, which a CGI request could set), `https_proxy` or `HTTPS_PROXY`,
///   `all_proxy` or `ALL_PROXY`, and `no_proxy` or `NO_PROXY` for hosts to reach directly;
/// - TLS verification on unless the request's `tls.verify` is false; `tls.caFile`
///   replaces the system's CA bundle;
/// - connect, whole-request and idle time limits, set anew for every request (the easy
///   handle is reset before each, so nothing carries over from the call before). The
///   whole-request limit is libcurl's CURLOPT_TIMEOUT_MS. The idle limit (no byte received
///   or sent for `timeouts.idle`) is checked here, in libcurl's progress callback, about
///   once a second (libcurl's own low-speed check averages over several seconds and would
///   fire late). Its clock starts when the request is handed to the connection, whether
///   that connection is new or reused from the call before: libcurl reports no connect time
///   for a reused connection, so a clock that waited for one never started and a server
///   that accepted the request and never answered held the call until the request limit;
/// - a request that is not `repeatable` goes on a new connection (see
///   `HTTPRequest.repeatable`);
/// - one request per attempt: when a reused connection closes without an answer, libcurl
///   would send the request again on a new connection by itself, unseen; the new socket is
///   refused instead, so that the attempt fails as `connectionReset` and the retry, if any,
///   is the runner's and in the report.
public final class HTTPClient {
  /// libcurl's receive buffer, in bytes: its largest (CURL_MAX_READ_SIZE), so that a fast
  /// download costs few callbacks and few `write(2)` calls.
  public static let receiveBufferSize = 512 * 1024

  /// The libcurl loaded at run time (`curl_version_info`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "libcurl", version: String(cString: dray_curl_version()))
  }

  /// Replaced when libcurl will not take the receive buffer's size on it (`performOnce`).
  private var handle: UnsafeMutableRawPointer
  /// libcurl writes its detailed error message here (CURLOPT_ERRORBUFFER); owned by this
  /// object so that the pointer libcurl keeps stays valid.
  private let errorBuffer: UnsafeMutablePointer<CChar>
  /// Checked during transfers; cancelling aborts the transfer with `TransportError.cancelled`.
  public let cancellation: Cancellation
  /// Called during transfers with body bytes received so far and the expected total (for an
  /// answer in a content coding, both count the encoded bytes on the wire).
  public var progress: ((_ received: Int64, _ total: Int64?) -> Void)?
  /// Bytes of the last `perform`'s requests (heads and bodies, every redirect hop) that
  /// reached the socket. Zero means the server cannot have acted on the call, so even a
  /// call that changes data may be sent again.
  public private(set) var bytesSent: Int64 = 0
  /// The status of the last answer head the last `perform` received (of its last redirect
  /// hop), or nil when none came: the status a failed attempt's record shows when the
  /// transfer broke after the head (a cut body, an idle timeout mid-answer).
  public private(set) var lastStatus: Int?
  /// Body bytes the last request received over the connection, before content decoding
  /// (`HTTPResponse.wireBytes`), also when it failed.
  public private(set) var lastWireBytes: Int64 = 0

  public init(cancellation: Cancellation = Cancellation()) {
    precondition(curlReady, "libcurl failed to initialise")
    guard let handle = curl_easy_init() else { fatalError("libcurl could not create a handle (out of memory)") }
    self.handle = handle
    self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    self.cancellation = cancellation
  }

  deinit {
    curl_easy_cleanup(handle)
    errorBuffer.deallocate()
  }

  /// Sends `request`, following redirects, and streams a 2xx body to `sink`.
  ///
  /// A non-2xx answer is returned, not thrown, with its first 64 KiB in `errorBody`; its
  /// body never reaches the sink. `sink.begin` is called once per 2xx answer, before its
  /// first byte (also for an empty body).
  /// - Throws: `TransportError` for failures below HTTP (DNS, connect, reset, timeouts, TLS,
  ///   truncated bodies, redirects, cancellation); errors thrown by the sink are rethrown as
  ///   they are.
  public func perform(_ request: HTTPRequest, sink: any ResponseSink) throws -> HTTPResponse {
    guard traced, Tracing.isOn else { return try performUntraced(request, sink: sink) }
    let start = Date()
    func record(_ status: Int?, _ received: Int64, _ error: String?) {
      Tracing.record(
        Tracing.Span(
          kind: .request(
            method: request.method.rawValue, url: HTTPClient.displayURL(request.url), status: status, bytesReceived: received,
            bytesSent: bytesSent, attempt: Tracing.currentAttempt),
          step: Tracing.currentStep, start: start, end: Date(), error: error))
    }
    do {
      let response = try performUntraced(request, sink: sink)
      record(response.statusSent ?? response.status, response.wireBytes, nil)
      return response
    } catch {
      record(lastStatus, lastWireBytes, "\(error)")
      throw error
    }
  }

  /// Whether this client's requests are spans of the run's trace (`Tracing`); false for the
  /// clients that send the trace and the lineage events themselves.
  public var traced = true

  private func performUntraced(_ request: HTTPRequest, sink: any ResponseSink) throws -> HTTPResponse {
    bytesSent = 0
    lastStatus = nil
    lastWireBytes = 0
    var redirects = RedirectState(url: request.url, method: request.method)
    var current = request
    // The redirect that led to `current`: its status and the URL that answered it.
    var redirectedBy: (status: Int, from: String)?
    while true {
      let exchanged: Exchanged
      do {
        exchanged = try exchangeOnce(current, sink: sink) { try performOnce($0, sink: $1) }
      } catch let error as TransportError {
        throw HTTPClient.afterRedirect(error, redirectedBy, to: current.url)
      }
      if let figures = exchanged.figures {
        // Answered from a recording: the figures the recorded request reported.
        bytesSent += figures.bytesSent
        lastStatus = figures.lastStatus
        lastWireBytes = figures.wireBytes
      }
      if let error = exchanged.error { throw HTTPClient.afterRedirect(error, redirectedBy, to: current.url) }
      guard let response = exchanged.response else {
        throw TransportError.other(url: HTTPClient.displayURL(current.url), detail: "no answer")
      }
      let location = exchanged.location
      guard RedirectState.isRedirect(response.status), let location else { return response }
      redirectedBy = (response.status, HTTPClient.displayURL(current.url))
      current = try redirects.follow(current, status: response.status, location: location)
    }
  }

  /// One request without following redirects: the answer, and the absolute URL its
  /// `Location` names when it is a redirect.
  private func performOnce(_ request: HTTPRequest, sink: any ResponseSink) throws -> (HTTPResponse, String?) {
    curl_easy_reset(handle)
    // libcurl 7.88 refuses a new receive buffer size (CURLE_BAD_FUNCTION_ARGUMENT) while the
    // buffer of a transfer that failed before connecting (a DNS failure) is still allocated,
    // and a reset does not free it: a new handle has none. Its connections were not usable.
    if dray_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, HTTPClient.receiveBufferSize) != CURLE_OK {
      guard let fresh = curl_easy_init() else { fatalError("libcurl could not create a handle (out of memory)") }
      curl_easy_cleanup(handle)
      handle = fresh
      try check(dray_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, HTTPClient.receiveBufferSize), CURLOPT_BUFFERSIZE, request)
    }
    errorBuffer[0] = 0
    let state = TransferState(
      handle: handle, sink: sink, cancellation: cancellation, progress: progress, idle: request.timeouts.idle,
      connect: request.timeouts.connect)
    if !request.decodes { state.undecodedURL = HTTPClient.displayURL(request.url) }
    var headerList: UnsafeMutablePointer<curl_slist>?
    defer { curl_slist_free_all(headerList) }
    let context = Unmanaged.passUnretained(state).toOpaque()

    func set(_ option: CURLoption, _ value: Int) throws { try check(dray_curl_setopt_long(handle, option, value), option, request) }
    func set(_ option: CURLoption, _ value: String) throws { try check(dray_curl_setopt_string(handle, option, value), option, request) }
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws {
      try check(dray_curl_setopt_pointer(handle, option, pointer), option, request)
    }
    func set(_ option: CURLoption, size: Int64) throws {
      try check(dray_curl_setopt_off(handle, option, curl_off_t(size)), option, request)
    }

    try set(CURLOPT_URL, request.url)
    try set(CURLOPT_NOSIGNAL, 1)
    try set(CURLOPT_USERAGENT, "dray/\(DrayVersion.current)")
    try set(CURLOPT_FOLLOWLOCATION, 0)
    try set(CURLOPT_PROTOCOLS_STR, "http,https")
    try set(CURLOPT_CONNECTTIMEOUT_MS, HTTPClient.milliseconds(request.timeouts.connect))
    try set(CURLOPT_TIMEOUT_MS, HTTPClient.milliseconds(request.timeouts.request))
    if !request.repeatable { try set(CURLOPT_FRESH_CONNECT, 1) }
    try set(CURLOPT_SSL_VERIFYPEER, request.tls.verify ? 1 : 0)
    try set(CURLOPT_SSL_VERIFYHOST, request.tls.verify ? 2 : 0)
    if let ca = request.tls.caFile { try set(CURLOPT_CAINFO, ca) }
    try set(CURLOPT_TCP_KEEPALIVE, 1)
    try set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)

    try set(CURLOPT_WRITEDATA, pointer: context)
    try check(
      dray_curl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, ctx in
        TransferState.from(ctx)?.receive(UnsafeRawBufferPointer(start: data, count: size * count)) ?? 0
      }, CURLOPT_WRITEFUNCTION, request)
    try set(CURLOPT_HEADERDATA, pointer: context)
    try check(
      dray_curl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, ctx in
        TransferState.from(ctx)?.header(UnsafeRawBufferPointer(start: data, count: size * count)) ?? 0
      }, CURLOPT_HEADERFUNCTION, request)
    try set(CURLOPT_OPENSOCKETDATA, pointer: context)
    try check(
      dray_curl_setopt_opensocket_callback(handle) { ctx, _, address in
        TransferState.from(ctx)?.openSocket(address) ?? CURL_SOCKET_BAD
      }, CURLOPT_OPENSOCKETFUNCTION, request)
    try set(CURLOPT_NOPROGRESS, 0)
    try set(CURLOPT_XFERINFODATA, pointer: context)
    try check(
      dray_curl_setopt_xferinfo_callback(handle) { ctx, total, now, _, sent in
        TransferState.from(ctx)?.tick(received: now, total: total, sent: sent) ?? 1
      }, CURLOPT_XFERINFOFUNCTION, request)

    var headers = request.headers
    headers.set("Expect", "")  // no 100-continue round trip
    headers.remove("Accept-Encoding")
    if request.decodes {
      // libcurl sends the header and decodes the codings it was built with (CURLOPT_ACCEPT_ENCODING).
      try set(CURLOPT_ACCEPT_ENCODING, request.acceptEncoding)
    } else {
      headers.set("Accept-Encoding", HTTPRequest.identity)
    }
    for field in headers.fields {
      // The one place every header of every request passes: libcurl sends a value as it is,
      // so a line break in one would add fields of its own (header injection).
      let found = HTTPHeader.unsafeCharacter(in: field.name) ?? (field.name.contains(":") ? "a colon" : nil)
      if let found = found ?? HTTPHeader.unsafeCharacter(in: field.value) {
        throw TransportError.headerRefused(url: HTTPClient.displayURL(request.url), name: PrintableText.oneLine(field.name), found: found)
      }
      headerList = curl_slist_append(headerList, field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
    }
    try check(dray_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), CURLOPT_HTTPHEADER, request)

    switch request.method {
    case .get: try set(CURLOPT_HTTPGET, 1)
    case .head: try set(CURLOPT_NOBODY, 1)
    case .post: try set(CURLOPT_POST, 1)
    default: try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
    }
    switch request.body {
    case .none:
      if request.method == .post { try set(CURLOPT_POSTFIELDSIZE_LARGE, size: 0) }
    case .bytes(let bytes):
      if request.method != .post {
        try set(CURLOPT_POST, 1)
        try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
      }
      // libcurl copies the body (CURLOPT_COPYPOSTFIELDS), so nothing here must outlive the call.
      try set(CURLOPT_POSTFIELDSIZE_LARGE, size: Int64(bytes.count))
      var copy = bytes.isEmpty ? [0] : bytes
      try copy.withUnsafeMutableBytes { try set(CURLOPT_COPYPOSTFIELDS, pointer: $0.baseAddress) }
    case .file(let path):
      guard let file = FileHandle(forReadingAtPath: path) else {
        throw TransportError.file(path: path, detail: "cannot open it for reading")
      }
      state.upload = file
      let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
      try set(CURLOPT_UPLOAD, 1)
      if request.method != .put { try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
      try set(CURLOPT_INFILESIZE_LARGE, size: size)
      try set(CURLOPT_READDATA, pointer: context)
      try check(
        dray_curl_setopt_data_callback(handle, CURLOPT_READFUNCTION) { data, size, count, ctx in
          TransferState.from(ctx)?.read(into: data, capacity: size * count) ?? Int(CURL_READFUNC_ABORT)
        }, CURLOPT_READFUNCTION, request)
    }
    defer { try? state.upload?.close() }

    let code = curl_easy_perform(handle)
    bytesSent += try requestBytes(request)
    lastWireBytes = try sizeInfo(CURLINFO_SIZE_DOWNLOAD_T, request)
    lastStatus = state.status > 0 ? state.status : nil
    if let sinkError = state.sinkError { throw sinkError }
    var response = HTTPResponse(status: state.status, headers: state.headers, bytesReceived: state.received, errorBody: state.errorBody)
    response.url = request.url
    response.wireBytes = lastWireBytes
    response.endShown = HTTPClient.endShown(response, method: request.method)
    guard code == CURLE_OK else { throw try error(code, request: request, state: state) }
    if !state.begun && (200..<300).contains(state.status) { try sink.begin(response) }
    var location: UnsafeMutablePointer<CChar>?
    try check(dray_curl_getinfo_string(handle, CURLINFO_REDIRECT_URL, &location), CURLINFO_REDIRECT_URL, request)
    return (response, location.map { String(cString: $0) })
  }

  /// Whether an answer's framing shows its body whole (RFC 9112 §6.3): a `Content-Length`
  /// (libcurl fails a shorter body with CURLE_PARTIAL_FILE), chunked transfer coding (it
  /// fails a body without its last chunk), or a status or method that has no body. An
  /// answer delimited only by the connection's close (HTTP/1.0 style) is not: a close
  /// mid-answer looks the same as its end.
  static func endShown(_ response: HTTPResponse, method: HTTPMethod) -> Bool {
    if method == .head || response.status == 204 || response.status == 304 || (100..<200).contains(response.status) { return true }
    if response.headers["Content-Length"] != nil { return true }
    return response.headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true
  }

  /// A duration as libcurl's milliseconds, at least 1 (0 would mean "no limit").
  static func milliseconds(_ duration: Duration) -> Int {
    max(1, Int(min(duration.seconds * 1000, Double(Int32.max))))
  }

  /// The one checked path for libcurl's results: an option it refuses (not built in, an
  /// unknown value; curl_easy_setopt) fails the request before anything is sent, and an
  /// item of transfer information it cannot give (curl_easy_getinfo) fails it instead of
  /// being read as zero.
  /// - Throws: `TransportError.setup` naming the option or item and libcurl's reason.
  private func check(_ code: CURLcode, _ option: CURLoption, _ request: HTTPRequest) throws {
    try check(code, "option \(option.rawValue)", request)
  }

  private func check(_ code: CURLcode, _ item: CURLINFO, _ request: HTTPRequest) throws {
    try check(code, "information item \(item.rawValue)", request)
  }

  private func check(_ code: CURLcode, _ what: String, _ request: HTTPRequest) throws {
    guard code != CURLE_OK else { return }
    throw TransportError.setup(
      url: HTTPClient.displayURL(request.url),
      detail: "libcurl refused \(what): \(String(cString: curl_easy_strerror(code)))")
  }

  /// A whole-number item of the last transfer's information (curl_easy_getinfo), checked.
  private func info(_ item: CURLINFO, _ request: HTTPRequest) throws -> Int {
    var value = 0
    try check(dray_curl_getinfo_long(handle, item, &value), item, request)
    return value
  }

  /// A size item (curl_off_t) of the last transfer's information, checked.
  private func sizeInfo(_ item: CURLINFO, _ request: HTTPRequest) throws -> Int64 {
    var value: curl_off_t = 0
    try check(dray_curl_getinfo_off(handle, item, &value), item, request)
    return Int64(value)
  }

  /// The error class of a failed transfer, from libcurl's code and what the transfer saw.
  /// - Throws: `TransportError.setup` when libcurl cannot give the transfer's information.
  private func error(_ code: CURLcode, request: HTTPRequest, state: TransferState) throws -> TransportError {
    if cancellation.isCancelled { return .cancelled }
    let detail = String(cString: errorBuffer)
    let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    let url = HTTPClient.displayURL(request.url)
    let host = HTTPClient.hostAndPort(request.url)
    switch code {
    case CURLE_ABORTED_BY_CALLBACK:
      if state.idleExpired { return .timeout(.idle, url: url, limit: request.timeouts.idle) }
      return .cancelled
    case CURLE_COULDNT_RESOLVE_HOST:
      return .dnsFailure(host: HTTPClient.hostName(request.url))
    case CURLE_COULDNT_RESOLVE_PROXY:
      return .proxyDNSFailure(detail: reason)
    case CURLE_COULDNT_CONNECT:
      if state.resendRefused {
        return .connectionReset(url: url, detail: "the reused connection closed without an answer")
      }
      let osErrno = try info(CURLINFO_OS_ERRNO, request)
      if osErrno == Int(ECONNREFUSED) { return .connectionRefused(host: host) }
      if osErrno == Int(ETIMEDOUT) { return .timeout(.connect, url: url, limit: request.timeouts.connect) }
      return .other(url: url, detail: reason)
    case CURLE_OPERATION_TIMEDOUT:
      // libcurl has one code for its two limits (CURLOPT_CONNECTTIMEOUT_MS, CURLOPT_TIMEOUT_MS):
      // before the request was handed to a connection, the shorter of the two fired.
      if !state.requestSent && request.timeouts.connect <= request.timeouts.request {
        return .timeout(.connect, url: url, limit: request.timeouts.connect)
      }
      return .timeout(.request, url: url, limit: request.timeouts.request)
    case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
      CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return .tlsFailure(host: host, detail: reason)
    case CURLE_PARTIAL_FILE:
      return .truncated(url: url, received: state.received, detail: reason)
    case CURLE_BAD_CONTENT_ENCODING:
      let kind = HTTPResponse(status: state.status, headers: state.headers).describedKind
      return .badAnswer(url: url, detail: "the body could not be decoded (\(kind)): \(reason)")
    case CURLE_OUT_OF_MEMORY, CURLcode(rawValue: 100):
      // libcurl refuses a response header line longer than CURL_MAX_HTTP_HEADER (100 KB),
      // with CURLE_OUT_OF_MEMORY before 8.6.0 and CURLE_TOO_LARGE (100) since
      // (https://curl.se/libcurl/c/libcurl-errors.html); 8.6.0 and later also refuse more
      // than 300 KB of headers in all. A real lack of memory ends the process anyway.
      return .badAnswer(
        url: url,
        detail: "a response header larger than libcurl's 100 KB limit (CURL_MAX_HTTP_HEADER)")
    case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
      if state.begun && state.received > 0 { return .truncated(url: url, received: state.received, detail: reason) }
      return .connectionReset(url: url, detail: reason)
    default:
      return .other(url: url, detail: reason)
    }
  }

  /// Bytes of the last transfer's request head and body that reached the socket.
  private func requestBytes(_ request: HTTPRequest) throws -> Int64 {
    Int64(try info(CURLINFO_REQUEST_SIZE, request)) + (try sizeInfo(CURLINFO_SIZE_UPLOAD_T, request))
  }

  /// `host:port` of a URL, for messages; never with `user:password@`.
  public static func hostAndPort(_ url: String) -> String {
    var rest = Substring(url)
    if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
    if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<slash] }
    if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }  // never print userinfo
    return String(rest)
  }

  /// The host name of a URL, without the port.
  public static func hostName(_ url: String) -> String {
    let hostPort = hostAndPort(url)
    if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") { return String(hostPort[...close]) }
    return String(hostPort.split(separator: ":").first ?? Substring(hostPort))
  }

  /// A URL for messages and reports: as given, without `user:password@` and without a
  /// fragment.
  public static func displayURL(_ url: String) -> String {
    guard let scheme = url.range(of: "://") else { return url }
    let authorityStart = scheme.upperBound
    let afterAuthority = url[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
    var out = String(url[..<authorityStart]) + hostAndPort(url) + String(url[afterAuthority...])
    if let hash = out.firstIndex(of: "#") { out = String(out[..<hash]) }
    return out
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
  /// The URL, for messages, of a request that asked for no content coding: an answer in
  /// one is refused before its first byte reaches the sink.
  var undecodedURL: String?
  /// Whether the answer came in a content coding (decoded before the sink).
  var coded = false
  var lastProgress: Int64 = -1
  /// The idle limit, and when a byte last moved either way. The clock starts when the
  /// request is handed to the connection (`requestSent`): before that the connect limit
  /// applies.
  let idle: Duration
  let handle: UnsafeMutableRawPointer
  /// Whether libcurl has handed the request to a connection, new (after TCP and TLS) or
  /// reused: its pre-transfer time is set then (CURLINFO_PRETRANSFER_TIME_T), for either.
  var requestSent = false
  /// The connect limit, past which (counted from the start) the connection phase is over
  /// whatever libcurl reports: libcurl itself would have failed it.
  let connect: Duration
  let started = ContinuousClock.now
  var lastActivity = ContinuousClock.now
  var lastSent: curl_off_t = 0
  var idleExpired = false
  /// Whether libcurl's own resending of the request on a new connection was refused.
  var resendRefused = false

  init(
    handle: UnsafeMutableRawPointer, sink: any ResponseSink, cancellation: Cancellation, progress: ((Int64, Int64?) -> Void)?,
    idle: Duration, connect: Duration
  ) {
    self.handle = handle
    self.sink = sink
    self.cancellation = cancellation
    self.progress = progress
    self.idle = idle
    self.connect = connect
  }

  /// The state a callback's `ctx` points to (set with each callback's `*DATA` option);
  /// nil only if libcurl passes no pointer, and each callback then aborts the transfer.
  static func from(_ ctx: UnsafeMutableRawPointer?) -> TransferState? {
    ctx.map { Unmanaged<TransferState>.fromOpaque($0).takeUnretainedValue() }
  }

  func header(_ line: UnsafeRawBufferPointer) -> Int {
    lastActivity = .now
    requestSent = true
    var text = String(decoding: line, as: UTF8.self)
    while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
    if text.hasPrefix("HTTP/") {
      // A new status line: a redirect or 1xx answer came before; start over.
      let parts = text.split(separator: " ", maxSplits: 2)
      status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
      headers = HTTPHeaders()
      errorBody = []
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
    lastActivity = .now
    guard (200..<300).contains(status) else {
      let room = max(0, 65536 - errorBody.count)
      errorBody.append(contentsOf: data.prefix(room))
      return data.count
    }
    do {
      if !begun {
        begun = true
        let head = HTTPResponse(status: status, headers: headers)
        if let url = undecodedURL, head.contentEncoding != nil {
          throw TransportError.badAnswer(
            url: url,
            detail:
              "the body came in a content coding that was not asked for (\(head.describedKind); the request sent "
              + "Accept-Encoding: identity), so it was not used; the server should honour Accept-Encoding (RFC 9110 §12.5.3)")
        }
        coded = head.contentEncoding != nil
        try sink.begin(head)
      }
      try sink.write(data)
    } catch {
      sinkError = error
      return 0
    }
    received += Int64(data.count)
    return data.count
  }

  func tick(received now: curl_off_t, total: curl_off_t, sent: curl_off_t) -> Int32 {
    if cancellation.isCancelled { return 1 }
    if !requestSent {
      requestSent = handedOver || sawHeaders || sent > 0
      // The clock starts when the request is handed over; past the connect limit it runs
      // in any case (libcurl fails a connection still being made by then).
      if requestSent || ContinuousClock.now - started < connect { lastActivity = .now }
    }
    if sent != lastSent {
      lastSent = sent
      lastActivity = .now
    }
    if ContinuousClock.now - lastActivity > idle {
      idleExpired = true
      return 1
    }
    if let progress, Int64(now) != lastProgress, (200..<300).contains(status) {
      lastProgress = Int64(now)
      // A compressed answer's length counts encoded bytes: its progress counts them too.
      progress(coded ? Int64(now) : received, total > 0 ? Int64(total) : nil)
    }
    return 0
  }

  /// Whether libcurl has handed the request to a connection: its pre-transfer time is set
  /// (CURLINFO_PRETRANSFER_TIME_T). Asked from inside libcurl's callbacks, which cannot
  /// throw: an item libcurl cannot give reads as "not yet", and the connect limit, the idle
  /// limit (which runs past the connect limit in any case) and the request limit still hold.
  var handedOver: Bool {
    var time: curl_off_t = 0
    return dray_curl_getinfo_off(handle, CURLINFO_PRETRANSFER_TIME_T, &time) == CURLE_OK && time > 0
  }

  /// Opens the socket of a new connection, as libcurl would; refused (CURL_SOCKET_BAD) once
  /// the request was handed to a connection (CURLINFO_PRETRANSFER_TIME_T is set), which
  /// happens only when libcurl would send it again by itself.
  func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t {
    if sawHeaders || handedOver {
      resendRefused = true
      return CURL_SOCKET_BAD
    }
    guard let address = address?.pointee else { return CURL_SOCKET_BAD }
    return socket(address.family, address.socktype | Int32(SOCK_CLOEXEC.rawValue), address.protocol)
  }

  func read(into buffer: UnsafeMutablePointer<CChar>?, capacity: Int) -> Int {
    guard let upload, let buffer else { return 0 }
    if cancellation.isCancelled { return Int(CURL_READFUNC_ABORT) }
    guard let data = try? upload.read(upToCount: capacity), !data.isEmpty else { return 0 }
    data.copyBytes(to: UnsafeMutableRawBufferPointer(start: buffer, count: data.count))
    return data.count
  }
}
