public import DrayModel
internal import Foundation

/// The index of a recording, `DIR/recording.json` (docs/recordings.md): its layout
/// `version`, the job, the state its run started from (`start`) and every exchange in the
/// order it started. Written with sorted keys and two-space indents, so
/// that a refreshed recording diffs line by line.
struct RecordingIndex: Codable {
  /// The layout this build writes: 2, which added `start`.
  static let currentVersion = 2
  /// The layouts this build reads: 1 (no `start`: read as a run that started from nothing)
  /// and 2.
  static let readableVersions = 1...2
  /// The index's file name inside the recording's folder.
  static let fileName = "recording.json"
  /// The folder of body files inside the recording's folder.
  static let bodiesFolder = "bodies"

  var version: Int
  var job: String
  /// The state the run started from; absent in a version 1 index.
  var start: RecordingStart?
  var exchanges: [RecordedExchange]
}

/// One request as sent and what came back, with every secret a `{{secret:N}}` placeholder.
struct RecordedExchange: Codable {
  /// 1, 2, ... in the order the requests were started.
  var id: Int
  /// The step that sent it, and its attempt (1 for the first).
  var step: String?
  var attempt: Int?
  var method: String
  var url: String
  /// `[name, value]` in the order sent; secret values are placeholders.
  var requestHeaders: [[String]]
  var acceptEncoding: String
  /// The body as UTF-8 text, or base64 when it is not text; nil when none was sent.
  var requestBody: String?
  var requestBodyBase64: String?
  /// The status of the answer's head; nil when none came (a refused connection).
  var status: Int?
  var responseHeaders: [[String]]
  /// The body as the run received it (after content decoding), relative to the folder:
  /// `bodies/0001.json`; a non-2xx answer's first 64 KiB. Nil when it was empty.
  var bodyFile: String?
  var bodyBytes: Int64
  /// Body bytes as they came over the connection, before content decoding.
  var wireBytes: Int64
  var bytesSent: Int64
  /// Whether the answer's framing showed its end (`HTTPResponse.endShown`).
  var endShown: Bool
  /// The absolute address a redirect's `Location` named.
  var location: String?
  /// How the exchange failed below HTTP (a cut answer, a reset, a timeout); nil when the
  /// answer came whole.
  var fault: RecordedFault?
  /// Milliseconds from the request to the end of the answer.
  var elapsedMs: Int
}

/// A failure below HTTP, as a replay throws it again (`TransportError`).
struct RecordedFault: Codable {
  /// `TransportError.code`; `sink` when the run itself stopped reading the answer.
  var code: String
  var detail: String?
  /// Body bytes that reached the run before the fault.
  var received: Int64?
}

extension RecordedFault {
  init(_ error: any Error) {
    guard let transport = error as? TransportError else {
      self.init(code: "sink", detail: nil, received: nil)
      return
    }
    switch transport {
    case .connectionReset(_, let detail), .tlsFailure(_, let detail), .badAnswer(_, let detail), .other(_, let detail),
      .proxyDNSFailure(let detail), .file(_, let detail):
      self.init(code: transport.code, detail: detail, received: nil)
    case .truncated(_, let received, let detail): self.init(code: transport.code, detail: detail, received: received)
    default: self.init(code: transport.code, detail: nil, received: nil)
    }
  }

  /// The error the recorded run met, for `request` (its URL, its time limits).
  func error(for request: HTTPRequest) -> TransportError {
    let url = HTTPClient.displayURL(request.url)
    let detail = detail ?? "recorded"
    switch code {
    case "dns_failure": return .dnsFailure(host: HTTPClient.hostName(request.url))
    case "connection_refused": return .connectionRefused(host: HTTPClient.hostAndPort(request.url))
    case "connection_reset": return .connectionReset(url: url, detail: detail)
    case "timeout_connect": return .timeout(.connect, url: url, limit: request.timeouts.connect)
    case "timeout_request": return .timeout(.request, url: url, limit: request.timeouts.request)
    case "timeout_idle": return .timeout(.idle, url: url, limit: request.timeouts.idle)
    case "tls_failure": return .tlsFailure(host: HTTPClient.hostAndPort(request.url), detail: detail)
    case "body_truncated": return .truncated(url: url, received: received ?? 0, detail: detail)
    case "bad_answer": return .badAnswer(url: url, detail: detail)
    case "cancelled": return .cancelled
    case "body_too_large": return .bodyTooLarge(limit: Int(received ?? 0))
    default: return .other(url: url, detail: "the recorded run's request failed here (\(code)): \(detail)")
    }
  }
}

/// A recorded text with `{{secret:N}}` placeholders, matched against a text sent at replay:
/// each placeholder stands for any text (the secret at its place, whatever value, or the
/// `(not set)` of a replay without secrets); the rest must be equal.
public enum PlaceholderMatch {
  /// The placeholder of the `n`th secret of an exchange.
  public static func placeholder(_ n: Int) -> String { "{{secret:\(n)}}" }

  /// `recorded` cut at its placeholders: the literal parts, one more than the placeholders.
  public static func literals(_ recorded: String) -> [Substring] {
    var parts: [Substring] = []
    var rest = Substring(recorded)
    while let open = rest.range(of: "{{secret:") {
      guard let close = rest[open.upperBound...].range(of: "}}"),
        !rest[open.upperBound..<close.lowerBound].isEmpty,
        rest[open.upperBound..<close.lowerBound].allSatisfy(\.isNumber)
      else { break }
      parts.append(rest[..<open.lowerBound])
      rest = rest[close.upperBound...]
    }
    parts.append(rest)
    return parts
  }

  /// Whether `sent` is `recorded` with any text at each placeholder.
  public static func matches(_ recorded: String, _ sent: String) -> Bool {
    matches(literals(recorded), Substring(sent))
  }

  /// Whether `text` is the literal `parts` (a recorded text cut by `literals(_:)`) with
  /// any text between each two.
  public static func matches(_ parts: [Substring], _ text: Substring) -> Bool {
    guard let first = parts.first, let last = parts.last else { return text.isEmpty }
    guard parts.count > 1 else { return text == first }
    guard text.utf8.count >= first.utf8.count + last.utf8.count, text.hasPrefix(first) else { return false }
    var rest = text.dropFirst(first.count)
    guard rest.hasSuffix(last) else { return false }
    rest = rest.dropLast(last.count)
    for part in parts.dropFirst().dropLast() where !part.isEmpty {
      guard let found = rest.range(of: part) else { return false }
      rest = rest[found.upperBound...]
    }
    return true
  }

  /// The forms an unresolved credential (`Manifest.unresolvedCredential`) takes in a
  /// request: as it is, and percent-encoded (a form body, a query value).
  static let unresolvedForms = [
    Manifest.unresolvedCredential, "%28not%20set%29", "%28not+set%29", "(not%20set)", "(not+set)", "%28not set%29",
  ]

  /// Whether `recorded` (cut by `literals(_:)`) and `sent` can be the same text when each
  /// placeholder of the one and each unresolved credential of the other
  /// (`unresolvedForms`) stand for any text: a replay without the job's secrets set.
  public static func matchesUnresolved(_ parts: [Substring], _ sent: String) -> Bool {
    var text = sent
    for form in unresolvedForms { text = text.replacing(form, with: "\u{0}") }
    // Tokens: a byte, or nil for "any text".
    var recordedTokens: [UInt8?] = []
    for (index, part) in parts.enumerated() {
      if index > 0 { recordedTokens.append(nil) }
      recordedTokens += part.utf8.map { Optional($0) }
    }
    let sentTokens: [UInt8?] = text.utf8.map { $0 == 0 ? nil : $0 }
    // can[j]: recorded[..<i] and sent[..<j] can be one text (row i of the table).
    var previous = [Bool](repeating: false, count: sentTokens.count + 1)
    previous[0] = true
    for j in sentTokens.indices where sentTokens[j] == nil && previous[j] { previous[j + 1] = true }
    for token in recordedTokens {
      var current = [Bool](repeating: false, count: sentTokens.count + 1)
      current[0] = token == nil && previous[0]
      for j in sentTokens.indices {
        let other = sentTokens[j]
        if token == nil || other == nil {
          current[j + 1] = previous[j + 1] || current[j] || previous[j]
        } else {
          current[j + 1] = token == other && previous[j]
        }
      }
      previous = current
    }
    return previous[sentTokens.count]
  }
}
