internal import DrayModel
internal import Foundation

/// Masks the secrets of recorded exchanges as numbered placeholders (docs/recordings.md,
/// "What is masked").
///
/// Every text of an exchange (its URL, header values, request body, response headers and
/// body, a fault's detail) passes through the run's `Redactor` (every secret the run knew,
/// in every form it masks), each masked run becoming `{{secret:N}}`, numbered from 1 in the
/// order met within the exchange. A header that holds a credential (`HTTPHeader.isSecret`;
/// in an answer, one named as a credential, `HTTPHeader.isSecretName`, such as `Set-Cookie`)
/// keeps only its scheme word (`Bearer {{secret:1}}`) or cookie name whatever the redactor
/// found in it (`credential`).
struct RecordingMasker {
  let redactor: Redactor
  /// What the redactor writes for a secret before it is numbered: bytes no text of an
  /// exchange holds (NUL is not allowed in URLs, header values or JSON text).
  static let sentinel = "\u{0}\u{1}secret\u{1}\u{0}"
  /// Bodies larger than this are masked a chunk at a time, each cut after a line break
  /// (or a `,` when a chunk has none), so that memory stays bounded.
  static let chunkSize = 16 << 20

  /// A counter of placeholders within one exchange.
  final class Counter {
    var count = 0
  }

  func mask(_ text: String, _ counter: Counter) -> String {
    let masked = redactor.redact(text, mask: RecordingMasker.sentinel)
    guard masked.contains(RecordingMasker.sentinel) else { return masked }
    var out = ""
    var parts = masked.components(separatedBy: RecordingMasker.sentinel)[...]
    out += parts.removeFirst()
    for part in parts {
      counter.count += 1
      out += PlaceholderMatch.placeholder(counter.count) + part
    }
    return out
  }

  /// A header field's value masked: a field that holds a credential (`secret`) keeps only
  /// its scheme word (`Bearer {{secret:1}}`), a `Set-Cookie` only its cookie's name and
  /// attributes (`session={{secret:1}}; HttpOnly`), whatever the redactor found in it.
  func credential(_ name: String, _ value: String, secret: Bool, _ counter: Counter) -> String {
    let masked = mask(value, counter)
    guard secret && !masked.contains("{{secret:") else { return masked }
    counter.count += 1
    let placeholder = PlaceholderMatch.placeholder(counter.count)
    if name.lowercased() == "set-cookie", let equals = value.firstIndex(of: "=") {
      let rest = value[equals...].firstIndex(of: ";").map { String(value[$0...]) } ?? ""
      return value[...equals] + placeholder + rest
    }
    let scheme = value.split(separator: " ", maxSplits: 1)
    return (scheme.count == 2 ? scheme[0] + " " : "") + placeholder
  }

  /// `item`'s exchange with its request filled in from the tape and every text masked; its
  /// body masked into `bodies`.
  func exchange(_ item: TrafficRecorder.Ended, bodies: String) throws -> RecordedExchange {
    let counter = Counter()
    let request = item.tape.request
    var exchange = item.exchange
    exchange.url = mask(request.url, counter)
    exchange.requestHeaders = []
    for field in request.headers where field.name.lowercased() != "user-agent" {
      exchange.requestHeaders.append([field.name, credential(field.name, field.value, secret: field.isSecret, counter)])
    }
    let bytes: Data?
    switch request.body {
    case .none: bytes = nil
    case .bytes(let sent): bytes = Data(sent)
    case .file(let path): bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
    }
    if let bytes {
      if let text = String(validating: bytes, as: UTF8.self) {
        exchange.requestBody = mask(text, counter)
      } else {
        exchange.requestBodyBase64 = bytes.base64EncodedString()
      }
    }
    exchange.responseHeaders = exchange.responseHeaders.map {
      $0.count == 2 ? [$0[0], credential($0[0], $0[1], secret: HTTPHeader.isSecretName($0[0]), counter)] : $0
    }
    if item.tape.hasBody {
      let contentType = exchange.responseHeaders.first { $0.count == 2 && $0[0].lowercased() == "content-type" }?[1]
      let name = String(format: "%04d", item.tape.id) + "." + RecordingMasker.fileExtension(contentType)
      try maskFile(item.tape.path, to: bodies + "/" + name, counter)
      exchange.bodyFile = RecordingIndex.bodiesFolder + "/" + name
    }
    if let detail = exchange.fault?.detail { exchange.fault?.detail = mask(detail, counter) }
    exchange.location = exchange.location.map { mask($0, counter) }
    return exchange
  }

  /// `start` with every text a secret could be in masked (a cursor, an `ETag`, a scheme):
  /// none should hold one, and a run's credentials are never read into it.
  func start(_ start: RecordingStart) -> RecordingStart {
    var masked = start
    masked.cursors = start.cursors.mapValues { mask($0, Counter()) }
    masked.validators = start.validators.mapValues {
      var kept = $0
      kept.etag = $0.etag.map { mask($0, Counter()) }
      kept.lastModified = $0.lastModified.map { mask($0, Counter()) }
      return kept
    }
    masked.schemes = start.schemes.mapValues { mask($0, Counter()) }
    masked.checkpoints = start.checkpoints.mapValues {
      var kept = $0
      kept.run = mask($0.run, Counter())
      kept.lineage = mask($0.lineage, Counter())
      return kept
    }
    return masked
  }

  /// Copies the body at `source` to `target` with its secrets masked; a body that is not
  /// UTF-8 text is copied as it is.
  func maskFile(_ source: String, to target: String, _ counter: Counter) throws {
    guard let input = FileHandle(forReadingAtPath: source) else {
      throw TransportError.file(path: source, detail: "cannot read a recorded body")
    }
    defer { try? input.close() }
    guard FileManager.default.createFile(atPath: target, contents: nil), let output = FileHandle(forWritingAtPath: target) else {
      throw TransportError.file(path: target, detail: "cannot create a body file of the recording")
    }
    defer { try? output.close() }
    var carry: [UInt8] = []
    var binary = false
    while true {
      let data = try input.read(upToCount: RecordingMasker.chunkSize) ?? Data()
      let atEnd = data.isEmpty
      var chunk = carry + [UInt8](data)
      carry = []
      if !atEnd, !binary {
        // Cut after the last line break (or comma), so that no secret is split.
        let cut = chunk.lastIndex(of: 0x0A) ?? chunk.lastIndex(of: UInt8(ascii: ","))
        if let cut {
          carry = Array(chunk[(cut + 1)...])
          chunk.removeSubrange((cut + 1)...)
        }
      }
      if !chunk.isEmpty {
        if !binary, let text = String(validating: chunk, as: UTF8.self) {
          try output.write(contentsOf: Data(mask(text, counter).utf8))
        } else {
          binary = true
          try output.write(contentsOf: Data(chunk))
        }
      }
      if atEnd { break }
    }
  }

  /// `json`, `xml`, `txt` or `bin`, from a `Content-Type`.
  static func fileExtension(_ contentType: String?) -> String {
    let type = (contentType ?? "").lowercased()
    if type.contains("json") { return "json" }
    if type.contains("xml") { return "xml" }
    if type.hasPrefix("text/") || type.contains("x-www-form-urlencoded") { return "txt" }
    return "bin"
  }
}
