internal import DrayJSON
internal import DrayModel
internal import Foundation
internal import Glibc

/// A resumable download of one answer into a `.part` file.
///
/// The body streams to `<path>.part`; a sidecar `<path>.part.json` keeps the URL, the strong
/// ETag of the answer and the transaction id. A later attempt (in this run, or in a new run
/// after a kill) asks only for the rest:
///
/// - platform servers: `X-Range: bytes=<offset>-` with `If-Match: <etag>` (platform-api.md §3);
/// - other servers: `Range: bytes=<offset>-` with `If-Range: <etag>` (RFC 9110 §14.2, §13.1.5).
///
/// A `206` is written at the offset its `Content-Range` states; a `200` replaces the file
/// from byte 0; a `412` (the answer changed) discards the part and asks again from 0; a `416`
/// is checked against the size in its `Content-Range`. A weak ETag (`W/"..."`) is never used
/// to resume. Error bodies never reach the file. When the answer is complete the file is
/// flushed to disk (fsync) and renamed into place, and its sidecar kept as `<path>.json`
/// until `removeFinished()`: a run killed after the download but before the answer was
/// used leaves both, and the next attempt turns them back into a part and asks for the bytes
/// after its end, so that the server confirms the answer is unchanged (`416` with the same
/// size) instead of sending it again.
public final class Download {
  public enum ResumeStyle: Sendable {
    /// `X-Range` and `If-Match`.
    case platform
    /// `Range` and `If-Range`.
    case standard
  }

  /// What the sidecar records.
  public struct Sidecar: Sendable, Equatable {
    public var url: String
    public var etag: String?
    public var transactionID: String?
  }

  /// The finished file's path.
  public let path: String
  public var partPath: String { path + ".part" }
  public var sidecarPath: String { path + ".part.json" }
  /// The sidecar of a finished answer.
  public var finishedSidecarPath: String { path + ".json" }
  public let style: ResumeStyle
  /// Resume from an existing part; false always starts from byte 0.
  public let resume: Bool

  /// Bytes received over the network by this object's attempts (not counting bytes already
  /// on disk from an earlier run).
  public private(set) var bytesReceived: Int64 = 0
  /// Bytes already on disk when the first attempt started (resumed from a previous run).
  public private(set) var bytesResumed: Int64 = 0
  private var firstAttempt = true

  public init(path: String, style: ResumeStyle, resume: Bool) {
    self.path = path
    self.style = style
    self.resume = resume
  }

  /// The sidecar left by an earlier attempt for the same URL (of a part, or of a finished
  /// answer not yet used), or nil.
  public func existingSidecar(for url: String) -> Sidecar? {
    let path = FileManager.default.fileExists(atPath: partPath) ? sidecarPath : finishedSidecarPath
    guard resume, let data = FileManager.default.contents(atPath: path),
      let json = try? JSONValue(parsing: Array(data)), json["url"]?.stringValue == Redactor.maskingURLPasswords(url)
    else { return nil }
    return Sidecar(url: url, etag: json["etag"]?.stringValue, transactionID: json["transaction_id"]?.stringValue)
  }

  /// Sends one attempt of `request`, asking only for the missing bytes when a part exists.
  ///
  /// - Returns: the answer's head; a non-2xx status other than 412/416 is returned for the
  ///   caller to turn into an error.
  /// - Throws: `TransportError`.
  public func attempt(_ request: HTTPRequest, client: HTTPClient, transactionID: String?) throws -> HTTPResponse {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    if resume && firstAttempt && Download.fileSize(partPath) == nil && Download.fileSize(path) != nil
      && Download.fileSize(finishedSidecarPath) != nil
    {
      // A finished answer an earlier run did not get to use: verify it as a part.
      rename(finishedSidecarPath, sidecarPath)
      rename(path, partPath)
    }
    var offset: Int64 = 0
    var sidecar = existingSidecar(for: request.url)
    if let s = sidecar, let etag = s.etag, !etag.hasPrefix("W/") {
      offset = Download.fileSize(partPath) ?? 0
    } else {
      sidecar = nil
    }
    if firstAttempt {
      bytesResumed = offset
      firstAttempt = false
    }
    var sent = request
    if offset > 0, let etag = sidecar?.etag {
      switch style {
      case .platform:
        sent.headers.set("X-Range", "bytes=\(offset)-")
        sent.headers.set("If-Match", etag)
      case .standard:
        sent.headers.set("Range", "bytes=\(offset)-")
        sent.headers.set("If-Range", etag)
      }
    }
    let sink = try PartFileSink(download: self, url: request.url, transactionID: transactionID, requestedOffset: offset)
    defer { sink.close() }
    let response = try client.perform(sent, sink: sink)
    bytesReceived += response.bytesReceived
    if response.status == 412 || (response.status == 416 && !sink.isComplete(after416: response)) {
      // The answer changed since the part was written (412), or the range is unusable
      // (416): start again from byte 0 at once; this is not a failed attempt.
      discard()
      if offset > 0 { return try attempt(request, client: client, transactionID: transactionID) }
    }
    if response.status == 416 { return HTTPResponse(status: 200, headers: response.headers) }
    return response
  }

  /// Flushes the finished part to disk and renames it to `path`.
  /// - Throws: `TransportError.file`.
  public func complete() throws {
    let fd = open(partPath, O_RDONLY)
    if fd >= 0 {
      fsync(fd)
      close(fd)
    } else if !FileManager.default.fileExists(atPath: partPath) {
      // An empty answer never opened a part; make it.
      _ = FileManager.default.createFile(atPath: partPath, contents: nil)
    }
    guard rename(partPath, path) == 0 else {
      throw TransportError.file(path: path, detail: String(cString: strerror(errno)))
    }
    if rename(sidecarPath, finishedSidecarPath) != 0 { unlink(finishedSidecarPath) }
  }

  /// Removes the finished answer and its sidecar, once it has been used.
  public func removeFinished() {
    unlink(path)
    unlink(finishedSidecarPath)
  }

  /// Removes the part and its sidecar.
  public func discard() {
    unlink(partPath)
    unlink(sidecarPath)
  }

  fileprivate func writeSidecar(_ sidecar: Sidecar) {
    // A URL's password is never written to disk.
    var object: [(key: String, value: JSONValue)] = [("url", .string(Redactor.maskingURLPasswords(sidecar.url)))]
    if let etag = sidecar.etag { object.append(("etag", .string(etag))) }
    if let id = sidecar.transactionID { object.append(("transaction_id", .string(id))) }
    _ = FileManager.default.createFile(atPath: sidecarPath, contents: Data(JSONValue.object(object).json.utf8))
  }

  static func fileSize(_ path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
  }
}

/// Writes a download's body into its part file.
private final class PartFileSink: ResponseSink {
  unowned let download: Download
  let url: String
  let transactionID: String?
  let requestedOffset: Int64
  var fd: Int32 = -1

  init(download: Download, url: String, transactionID: String?, requestedOffset: Int64) throws {
    self.download = download
    self.url = url
    self.transactionID = transactionID
    self.requestedOffset = requestedOffset
  }

  func begin(_ response: HTTPResponse) throws {
    var start: Int64 = 0
    if response.status == 206 {
      guard let range = response.headers["Content-Range"], let first = PartFileSink.rangeStart(range) else {
        throw TransportError.other(host: HTTPClient.hostAndPort(url), detail: "206 answer without a usable Content-Range")
      }
      guard first <= requestedOffset else {
        throw TransportError.other(
          host: HTTPClient.hostAndPort(url), detail: "206 answer starts at byte \(first), after the \(requestedOffset) bytes held")
      }
      start = first
    }
    fd = open(download.partPath, O_WRONLY | O_CREAT, 0o644)
    guard fd >= 0 else { throw TransportError.file(path: download.partPath, detail: String(cString: strerror(errno))) }
    guard ftruncate(fd, off_t(start)) == 0, lseek(fd, off_t(start), SEEK_SET) == off_t(start) else {
      throw TransportError.file(path: download.partPath, detail: String(cString: strerror(errno)))
    }
    let etag = response.headers["ETag"].flatMap { $0.hasPrefix("W/") ? nil : $0 }
    download.writeSidecar(Download.Sidecar(url: url, etag: etag, transactionID: transactionID))
  }

  func write(_ bytes: UnsafeRawBufferPointer) throws {
    var done = 0
    while done < bytes.count {
      let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
      if n < 0 {
        if errno == EINTR { continue }
        throw TransportError.file(path: download.partPath, detail: String(cString: strerror(errno)))
      }
      done += n
    }
  }

  func close() {
    if fd >= 0 { Glibc.close(fd) }
    fd = -1
  }

  /// After a 416: complete when the part already holds the whole answer.
  func isComplete(after416 response: HTTPResponse) -> Bool {
    guard let range = response.headers["Content-Range"], let star = range.firstIndex(of: "/"),
      let total = Int64(range[range.index(after: star)...].trimmingCharacters(in: .whitespaces)),
      let size = Download.fileSize(download.partPath)
    else { return false }
    return size == total
  }

  /// `bytes 100-/*`, `bytes 100-199/200` → 100.
  static func rangeStart(_ header: String) -> Int64? {
    let trimmed = header.trimmingCharacters(in: .whitespaces)
    guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
    let spec = trimmed.dropFirst(6)
    guard let dash = spec.firstIndex(of: "-") else { return nil }
    return Int64(spec[..<dash].trimmingCharacters(in: .whitespaces))
  }
}
