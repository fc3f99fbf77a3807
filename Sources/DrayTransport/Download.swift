internal import DrayJSON
public import DrayModel
internal import Foundation
internal import Glibc

/// A resumable download of one answer into a `.part` file.
///
/// The body streams to `<path>.part`; a sidecar `<path>.part.json` keeps the URL, the strong
/// ETag of the answer and the transaction id, the id written before the first request goes
/// out (a run killed before the answer came sends it again: platform-api.md §3). The offset to resume from is the part's size
/// on disk, which is what survived a kill. A later attempt (in this run, or in a new run
/// after a kill) asks only for the rest:
///
/// - platform servers: `X-Range: bytes=<offset>-` with `If-Match: <etag>` (platform-api.md §3);
/// - other servers: `Range: bytes=<offset>-` with `If-Range: <etag>` (RFC 9110 §14.2, §13.1.5).
///
/// What each answer does to the part (the resume rules, *ours* where platform-api.md is
/// silent, live here and only here):
///
/// | answer | effect |
/// |---|---|
/// | `206` | checked: same strong ETag, `Content-Range` starting at or before the part's end; then written at that offset |
/// | `200` | the whole answer: the part is truncated and written from byte 0 |
/// | `412` | the answer changed (`If-Match` failed): the part is discarded and the call asked again from 0 at once |
/// | `416` | complete when the part's size equals the total in `Content-Range`; otherwise as `412` |
/// | other | returned to the caller; its body never reaches the part |
///
/// A weak ETag (`W/"..."`) is never used to resume, and an answer without an ETag cannot be
/// resumed.
///
/// Compression (`HTTPRequest.acceptEncoding`): the part always holds the decoded bytes, and
/// offsets never mix the two spaces. `X-Range` counts the bytes before compression
/// (platform-api.md §3, "Resumable download"), so a platform download asks for `gzip` on
/// every attempt and resumes at the part's size. A standard `Range` counts the bytes of the
/// representation as sent, compressed ones included (RFC 9110 §14.1.2), so a standard
/// download whose answer came in a content coding keeps no ETag in its sidecar and is not
/// resumed (a broken one starts again from byte 0), and a resume (of an answer that came
/// without one) asks for `identity`. *(ours)* A `Content-Length` counts encoded bytes, so
/// it checks the part's size only for an answer without a content coding. A body cut short (also a chunked one) is an error, never "complete"; a finished
/// part whose size does not add up is discarded. When complete, `complete()` flushes the
/// file to disk (fsync; not an answer loaded as it arrives, nor one with `flushesFinished` false) and renames it into place, and its sidecar is kept as `<path>.json`
/// until `removeFinished()`: a run killed after the download but before the answer was
/// used leaves both, and the next attempt turns them back into a part and asks for the bytes
/// after its end, so that the server confirms the answer is unchanged (`416` with the same
/// size) instead of sending it again.
///
/// The four files are dray's own: none is ever opened through a symbolic link (`O_NOFOLLOW`).
/// A link found in the place of one fails the attempt before any request, naming the link,
/// and its target is left as it was.
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
  public var finishedSidecarPath: String { Self.finishedSidecarPath(of: path) }

  /// The sidecar of the finished answer at `path`.
  static func finishedSidecarPath(of path: String) -> String { path + ".json" }
  public let style: ResumeStyle
  /// Resume from an existing part; false always starts from byte 0.
  public let resume: Bool

  /// Body bytes received over the network by this object's attempts, decoded (not counting
  /// bytes already on disk from an earlier run).
  public private(set) var bytesReceived: Int64 = 0
  /// The same bytes as they came over the connection, before content decoding.
  public private(set) var wireBytesReceived: Int64 = 0
  /// Wire bytes of the last request (`HTTPResponse.wireBytes`).
  public private(set) var lastWireBytes: Int64 = 0
  /// Bytes already on disk when the first attempt started (resumed from a previous run).
  public private(set) var bytesResumed: Int64 = 0
  /// Requests sent so far (a `412` or `416` restart counts).
  public private(set) var requests = 0
  /// Body bytes received by the last request.
  public private(set) var lastBytes: Int64 = 0
  /// The offset the last request asked to resume from; 0 when it asked for everything.
  public private(set) var lastOffset: Int64 = 0
  /// What happened to the part that a report should say: restarts and why.
  public private(set) var notes: [String] = []
  private var firstAttempt = true
  /// Whether the part holds a whole document in the answer's format (for JSON,
  /// `JSONEvents.endsWhole(path:)`), asked when the answer's framing did not show its end
  /// (`HTTPResponse.endShown`). Without it such an answer is never taken as complete: the
  /// next attempt asks for the bytes after the part, and the server's `416` confirms it.
  public var endsWhole: ((_ partPath: String) -> Bool)?
  /// Told where the part begins and how far it grows, for a load that reads it as it arrives
  /// (`GrowingFile`); its owner says how the download ended.
  public var growing: GrowingFile?
  /// Whether `complete()` flushes the finished part to disk before its rename (true by
  /// default). False for an answer its step loads right after the download and then removes
  /// (a `table_stream` answer into PostgreSQL, or a delta): as for an answer loaded as it
  /// arrives, a process that dies before the load commits leaves the file whole in the page
  /// cache, only an OS crash can cut it short, and a file the disk damaged fails its load,
  /// which fetches the answer again from byte 0 (docs/network.md, "Loading while
  /// downloading"). The flush of a 93 MB answer cost 0.1 to 0.2 s of a load's wall time.
  public var flushesFinished = true

  /// The form of a URL written to the sidecar, and compared with it: never a secret. By
  /// default a URL's password is masked (`Redactor.maskingURLPasswords`); an engine that
  /// knows the job's secrets masks them too (`Redactor.redact`), so that a URL's secret query
  /// values and path parts are never on disk. Two URLs that differ only in a masked secret
  /// resume one another's part: the same resource asked with another key.
  public var storedURL: @Sendable (String) -> String = { Redactor.maskingURLPasswords($0) }

  public init(path: String, style: ResumeStyle, resume: Bool) {
    self.path = path
    self.style = style
    self.resume = resume
  }

  /// The sidecar left by an earlier attempt for the same URL (of a part, of a request whose
  /// answer has not come yet, or of a finished answer not yet used), or nil.
  public func existingSidecar(for url: String) -> Sidecar? {
    let path = FileManager.default.fileExists(atPath: sidecarPath) ? sidecarPath : finishedSidecarPath
    guard resume, let data = FileManager.default.contents(atPath: path),
      let json = try? JSONValue(parsing: Array(data)), json["url"]?.stringValue == storedURL(url)
    else { return nil }
    return Sidecar(url: url, etag: json["etag"]?.stringValue, transactionID: json["transaction_id"]?.stringValue)
  }

  /// Sends one attempt of `request`, asking only for the missing bytes when a part exists.
  ///
  /// - Returns: the answer's head. A `416` that finds the part complete is returned as
  ///   `200`; a non-2xx status other than a `412`/`416` restart is returned for the caller
  ///   to turn into an error.
  /// - Throws: `TransportError` (from the transfer, `.resumeMismatch` for a `206` that does
  ///   not fit the part, `.file` for the part itself).
  public func attempt(_ request: HTTPRequest, client: HTTPClient, transactionID: String?) throws -> HTTPResponse {
    do {
      try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    } catch {
      throw TransportError.file(path: (path as NSString).deletingLastPathComponent, detail: "cannot create the download folder")
    }
    try refuseLinks()
    if resume && firstAttempt && Download.fileSize(partPath) == nil && Download.fileSize(path) != nil
      && Download.fileSize(finishedSidecarPath) != nil
    {
      // A finished answer an earlier run did not get to use: verify it as a part.
      rename(finishedSidecarPath, sidecarPath)
      rename(path, partPath)
    }
    var offset: Int64 = 0
    let sidecar = existingSidecar(for: request.url)
    let etag = sidecar?.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
    if etag != nil { offset = Download.fileSize(partPath) ?? 0 }
    if firstAttempt {
      bytesResumed = offset
      firstAttempt = false
    }
    var sent = request
    if offset > 0, let etag {
      switch style {
      case .platform:
        sent.headers.set("X-Range", "bytes=\(offset)-")
        sent.headers.set("If-Match", etag)
      case .standard:
        sent.headers.set("Range", "bytes=\(offset)-")
        sent.headers.set("If-Range", etag)
        // The part's bytes are the identity representation's: a range of them is one of it.
        sent.acceptEncoding = HTTPRequest.identity
      }
    } else {
      offset = 0
    }
    // The transaction id is on disk before the request goes out: a run killed before the
    // answer's head came sends the same id again, and the server recognises the repeat.
    if let transactionID, resume, sidecar == nil {
      try writeSidecar(Sidecar(url: request.url, etag: nil, transactionID: transactionID))
    }
    let sink = PartFileSink(
      download: self, url: request.url, transactionID: transactionID, requestedOffset: offset, etag: etag, style: style)
    defer { sink.close() }
    requests += 1
    lastOffset = offset
    lastBytes = 0
    let response: HTTPResponse
    do {
      response = try client.perform(sent, sink: sink)
    } catch {
      lastBytes = sink.written
      bytesReceived += sink.written
      lastWireBytes = client.lastWireBytes
      wireBytesReceived += client.lastWireBytes
      if case .resumeMismatch? = error as? TransportError { discard() }
      throw error
    }
    lastBytes = response.bytesReceived
    bytesReceived += response.bytesReceived
    lastWireBytes = response.wireBytes
    wireBytesReceived += response.wireBytes
    let shown = HTTPClient.displayURL(request.url)
    switch response.status {
    case 412 where offset > 0:
      discard()
      notes.append("the answer changed on the server (412 to If-Match \(etag ?? "")); downloaded again from byte 0")
      throw TransportError.resumeRestart(url: shown, status: 412, detail: "the answer changed on the server (If-Match \(etag ?? ""))")
    case 416 where offset > 0:
      if let total = PartFileSink.totalSize(response.headers["Content-Range"]), total == offset {
        notes.append("the part already held the whole answer (\(total) bytes; 416 to a range from byte \(offset))")
        var complete = response
        complete.status = 200
        complete.statusSent = 416
        complete.endShown = true
        return complete
      }
      discard()
      notes.append(
        "416 to a range from byte \(offset) (Content-Range: \(response.headers["Content-Range"] ?? "none")); downloaded again from byte 0")
      throw TransportError.resumeRestart(
        url: shown, status: 416,
        detail: "no range from byte \(offset) (Content-Range: \(response.headers["Content-Range"] ?? "none"))")
    case 200..<300:
      if offset > 0 && response.status == 200 {
        switch style {
        case .platform:
          notes.append("the server ignored X-Range from byte \(offset) and sent the whole answer (200); started again from byte 0")
        case .standard:
          notes.append(
            "the server sent the whole answer (200) to a Range from byte \(offset): the answer changed (If-Range) "
              + "or the server does not do ranges; started again from byte 0")
        }
      }
      if !response.endShown && !partShowsItsEnd(coded: response.contentEncoding != nil) {
        throw TransportError.truncated(
          url: shown, received: response.bytesReceived,
          detail:
            "the connection closed without a Content-Length or a final chunk to show the answer whole"
            + (endsWhole == nil ? "" : ", and the document it holds is not complete"))
      }
      // Verified before use: the part must hold exactly what the answer said it would.
      if let expected = sink.expectedSize, let size = Download.fileSize(partPath), size != expected {
        discard()
        throw TransportError.resumeMismatch(url: shown, detail: "the part holds \(size) bytes, the answer said \(expected)")
      }
      return response
    default:
      // The server answered the call: an id written before it, with no part to resume, is
      // not kept for the next run, which asks anew.
      if Download.fileSize(partPath) == nil { unlink(sidecarPath) }
      return response
    }
  }

  /// Whether the part shows its own end when the answer's framing did not: it holds a whole
  /// document (`endsWhole`), or, for a reader of documents, nothing but whitespace (no part
  /// at all for an empty answer). A blank answer is then refused by its reader as blank
  /// (`BlankAnswer`), the same whatever the framing, instead of as cut short. A compressed
  /// (`coded`) answer is never blank on the wire (a gzip stream of nothing still has its
  /// header and trailer), and libcurl does not report a stream cut before its end: a blank
  /// part of one is a cut, retried.
  private func partShowsItsEnd(coded: Bool) -> Bool {
    guard let endsWhole else { return false }
    let blank = !FileManager.default.fileExists(atPath: partPath) || BlankAnswer.size(ofFile: partPath) != nil
    return coded ? !blank && endsWhole(partPath) : blank || endsWhole(partPath)
  }

  /// Flushes the finished part to disk (unless `flushesFinished` is false) and renames it to
  /// `path`. An answer loaded as it arrives (`growing`) is not flushed: its load commits in the same step and removes it,
  /// and a process that dies before that leaves the file whole in the page cache. Only an
  /// OS crash can cut it short, as it can any unflushed part, and the next run asks the
  /// server for the bytes after its end as for a part (docs/network.md, "Loading while
  /// downloading").
  /// - Throws: `TransportError.file`.
  public func complete() throws {
    // An empty answer never opened a part: O_CREAT makes it.
    let fd = open(partPath, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw Download.openError(partPath) }
    if growing == nil && flushesFinished { fsync(fd) }
    close(fd)
    guard rename(partPath, path) == 0 else {
      throw TransportError.file(path: path, detail: String(cString: strerror(errno)))
    }
    if rename(sidecarPath, finishedSidecarPath) != 0 { unlink(finishedSidecarPath) }
  }

  /// Removes the finished answer and its sidecar, once it has been used.
  public func removeFinished() { Self.removeFinished(at: path) }

  /// Removes the finished answer at `path` (when it is still there) and its sidecar.
  public static func removeFinished(at path: String) {
    unlink(path)
    unlink(finishedSidecarPath(of: path))
  }

  /// Removes the part and its sidecar.
  public func discard() {
    unlink(partPath)
    unlink(sidecarPath)
    growing?.discarded()
  }

  fileprivate func writeSidecar(_ sidecar: Sidecar) throws {
    // A URL's password and secrets are never written to disk.
    var object: [(key: String, value: JSONValue)] = [("url", .string(storedURL(sidecar.url)))]
    if let etag = sidecar.etag { object.append(("etag", .string(etag))) }
    if let id = sidecar.transactionID { object.append(("transaction_id", .string(id))) }
    let bytes = Array(JSONValue.object(object).json.utf8)
    let fd = open(sidecarPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw Download.openError(sidecarPath) }
    defer { close(fd) }
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress?.advanced(by: done), $0.count - done) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { throw TransportError.file(path: sidecarPath, detail: String(cString: strerror(errno))) }
      done += n
    }
  }

  /// Fails when any of the download's files is a symbolic link, or anything but a regular
  /// file (a folder, a device, a FIFO, a socket: writing it would hang or replace it).
  /// - Throws: `TransportError.file` naming the link and where it leads, or the file and its
  ///   kind.
  private func refuseLinks() throws {
    for file in [partPath, sidecarPath, path, finishedSidecarPath] {
      var info = stat()
      if lstat(file, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK { throw Download.linkError(file) }
      if let kind = FileKind.refusal(at: file) {
        throw TransportError.file(
          path: file,
          detail:
            "it is \(kind), not a regular file; dray keeps only its own files in the download folder and replaces no other: remove it and run again"
        )
      }
    }
  }

  /// Why `open` failed on one of the download's files, `errno` as it left it.
  static func openError(_ file: String) -> TransportError {
    errno == ELOOP ? linkError(file) : TransportError.file(path: file, detail: String(cString: strerror(errno)))
  }

  static func linkError(_ file: String) -> TransportError {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink(file, &buffer, buffer.count - 1)
    let target = n >= 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    return TransportError.file(
      path: file,
      detail: "it is a symbolic link to \(target); dray does not follow links where it keeps its own files: remove the link and run again")
  }

  /// The size of the file itself (a link is not followed); nil when there is none.
  static func fileSize(_ path: String) -> Int64? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
  }
}

/// Writes a download's body into its part file.
private final class PartFileSink: ResponseSink {
  unowned let download: Download
  let url: String
  let transactionID: String?
  let requestedOffset: Int64
  /// The strong ETag the resume asked for (`If-Match`/`If-Range`).
  let etag: String?
  let style: Download.ResumeStyle
  var fd: Int32 = -1
  /// Body bytes written by this answer.
  var written: Int64 = 0
  /// Where this answer's bytes start in the part.
  var start: Int64 = 0
  /// The part's size once this answer is complete, when its head says.
  var expectedSize: Int64?

  init(download: Download, url: String, transactionID: String?, requestedOffset: Int64, etag: String?, style: Download.ResumeStyle) {
    self.download = download
    self.style = style
    self.url = url
    self.transactionID = transactionID
    self.requestedOffset = requestedOffset
    self.etag = etag
  }

  func begin(_ response: HTTPResponse) throws {
    let shown = HTTPClient.displayURL(url)
    var start: Int64 = 0
    let answerETag = response.headers["ETag"]
    if response.status == 206 {
      guard let range = response.headers["Content-Range"], let first = PartFileSink.rangeStart(range) else {
        throw TransportError.resumeMismatch(url: shown, detail: "the 206 answer has no usable Content-Range")
      }
      guard first <= requestedOffset, first <= Download.fileSize(download.partPath) ?? 0 else {
        throw TransportError.resumeMismatch(
          url: shown, detail: "the 206 answer starts at byte \(first), after the \(requestedOffset) bytes held")
      }
      guard let etag, answerETag == etag else {
        throw TransportError.resumeMismatch(
          url: shown, detail: "the 206 answer's ETag \(answerETag ?? "(none)") is not the \(etag ?? "(none)") the part was started with")
      }
      if style == .standard, let coding = response.contentEncoding {
        throw TransportError.resumeMismatch(
          url: shown,
          detail: "the 206 answer is a range of \(coding)-compressed bytes (Content-Encoding: \(coding)); the part holds uncompressed ones")
      }
      start = first
      if let total = PartFileSink.totalSize(range) { expectedSize = total }
    }
    if expectedSize == nil, response.contentEncoding == nil, let length = response.headers["Content-Length"].flatMap({ Int64($0) }) {
      expectedSize = start + length
    }
    fd = open(download.partPath, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw Download.openError(download.partPath) }
    // Truncate only a part that is longer than where this answer starts: on ext4, truncating
    // a file to zero makes its close() start writing back everything written since
    // (auto_da_alloc), which would hold up the end of every download.
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_size <= off_t(start) || ftruncate(fd, off_t(start)) == 0,
      lseek(fd, off_t(start), SEEK_SET) == off_t(start)
    else {
      throw TransportError.file(path: download.partPath, detail: String(cString: strerror(errno)))
    }
    // A standard Range would count the encoded bytes, which the part does not hold.
    let resumable = style == .platform || response.contentEncoding == nil
    let strong = answerETag.flatMap { $0.hasPrefix("W/") || !resumable ? nil : $0 }
    try download.writeSidecar(Download.Sidecar(url: url, etag: strong, transactionID: transactionID))
    self.start = start
    download.growing?.began(partPath: download.partPath, at: start, whole: response.status != 206)
  }

  func write(_ bytes: UnsafeRawBufferPointer) throws {
    var done = 0
    while done < bytes.count {
      let n = Glibc.write(fd, bytes.baseAddress?.advanced(by: done), bytes.count - done)
      if n < 0 {
        if errno == EINTR { continue }
        throw TransportError.file(path: download.partPath, detail: String(cString: strerror(errno)))
      }
      done += n
    }
    written += Int64(bytes.count)
    download.growing?.grew(to: start + written)
  }

  func close() {
    if fd >= 0 { Glibc.close(fd) }
    fd = -1
  }

  /// `bytes 100-/*` → nil; `bytes 100-199/200`, `bytes */200` → 200.
  static func totalSize(_ header: String?) -> Int64? {
    guard let header, let slash = header.lastIndex(of: "/") else { return nil }
    return Int64(header[header.index(after: slash)...].trimmingCharacters(in: .whitespaces))
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
