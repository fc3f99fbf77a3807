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

  func exchange(_ item: TrafficRecorder.Ended, bodies: String) throws -> RecordedExchange {
    let counter = Counter()
    let request = item.tape.request
    let url = mask(request.url, counter)
    var headers: [[String]] = []
    for field in request.headers where field.name.lowercased() != "user-agent" {
      headers.append([field.name, credential(field.name, field.value, secret: field.isSecret, counter)])
    }
    var body: String?
    var base64: String?
    switch request.body {
    case .none: break
    case .bytes(let bytes):
      if let text = String(validating: bytes, as: UTF8.self) {
        body = mask(text, counter)
      } else {
        base64 = Data(bytes).base64EncodedString()
      }
    case .file(let path):
      let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
      if let text = String(validating: bytes, as: UTF8.self) { body = mask(text, counter) } else { base64 = bytes.base64EncodedString() }
    }
    let responseHeaders = item.headers.fields.map {
      [$0.name, credential($0.name, $0.value, secret: HTTPHeader.isSecretName($0.name), counter)]
    }
    var bodyFile: String?
    if item.tape.hasBody {
      let name = String(format: "%04d", item.tape.id) + "." + RecordingMasker.fileExtension(item.headers["Content-Type"])
      try maskFile(item.tape.path, to: bodies + "/" + name, counter)
      bodyFile = RecordingIndex.bodiesFolder + "/" + name
    }
    var fault = item.fault
    if let detail = item.fault?.detail { fault?.detail = mask(detail, counter) }
    return RecordedExchange(
      id: item.tape.id, step: item.tape.step, attempt: item.tape.attempt, method: request.method.rawValue, url: url,
      requestHeaders: headers, acceptEncoding: request.acceptEncoding, requestBody: body, requestBodyBase64: base64,
      status: item.status, responseHeaders: responseHeaders, bodyFile: bodyFile, bodyBytes: item.bodyBytes, wireBytes: item.wireBytes,
      bytesSent: item.bytesSent, endShown: item.endShown, location: item.location.map { mask($0, counter) }, fault: fault,
      elapsedMs: item.elapsedMs)
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
