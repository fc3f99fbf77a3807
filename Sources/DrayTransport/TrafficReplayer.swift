public import DrayModel
internal import Foundation
internal import Synchronization

/// Answers a run's requests from a recording (`dray run --replay DIR`, docs/recordings.md),
/// with no network call at all.
///
/// Matching rule: a request is answered by the first exchange not yet used whose method,
/// URL and body equal the request's, each `{{secret:N}}` placeholder of the recording
/// standing for any text (`PlaceholderMatch`); headers are not compared. Exchanges are used
/// in the order they were recorded, so that a `503` then a `200` to one request, or an
/// answer cut mid-body then its `Range` resume, come again in that order. When every
/// matching exchange is used, the last one answers again. A request no exchange matches
/// fails with `TransportError.notRecorded`, naming the nearest recorded request.
public final class TrafficReplayer: Sendable {
  /// The recording's folder.
  public let directory: String
  let index: RecordingIndex
  /// Each exchange's literal parts, cut once.
  private let keys: [(method: String, url: [Substring], body: [Substring]?, base64: String?)]
  private let used: Mutex<[Bool]>
  /// Whether each exchange's request was conditional (`conditionalHeaders`).
  private let isConditional: [Bool]

  /// Reads `DIR/recording.json`.
  /// - Throws: `RecordingError` when the folder holds no recording, or one this build
  ///   cannot read (another layout version, a malformed index).
  public init(directory: String) throws {
    self.directory = directory
    let path = directory + "/" + RecordingIndex.fileName
    guard let data = FileManager.default.contents(atPath: path) else {
      throw RecordingError(path: path, detail: "there is no recording here; record one with dray run JOB.yaml --record \(directory)")
    }
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    struct Version: Decodable { var version: Int }
    guard let version = try? decoder.decode(Version.self, from: data) else {
      throw RecordingError(path: path, detail: "not a recording index (a JSON object with \"version\")")
    }
    guard RecordingIndex.readableVersions.contains(version.version) else {
      throw RecordingError(
        path: path,
        detail:
          "layout version \(version.version); this dray reads versions \(RecordingIndex.readableVersions.lowerBound) to \(RecordingIndex.readableVersions.upperBound): record the job again with this dray (dray run JOB.yaml --record \(directory))"
      )
    }
    do {
      index = try decoder.decode(RecordingIndex.self, from: data)
    } catch {
      throw RecordingError(path: path, detail: "malformed: \(error)")
    }
    // A body file is a plain name in the recording's `bodies/` folder, a regular file there:
    // a recording travels with bug reports, and its replay reads nothing outside it.
    for (number, exchange) in index.exchanges.enumerated() {
      guard let file = exchange.bodyFile else { continue }
      let name = file.hasPrefix(RecordingIndex.bodiesFolder + "/") ? file.dropFirst(RecordingIndex.bodiesFolder.count + 1) : ""
      let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + file)
      guard !name.isEmpty, !name.contains("/"), name != "..", name != ".",
        attributes?[.type] as? FileAttributeType == .typeRegular
      else {
        throw RecordingError(
          path: path,
          detail: "exchange \(number + 1) names the body file \"\(file)\", which is not a file in the recording's "
            + "\(RecordingIndex.bodiesFolder)/ folder (a body file is a plain name there, never a link or a path out of it): "
            + "record the job again")
      }
    }
    isConditional = index.exchanges.map { exchange in
      exchange.requestHeaders.contains { $0.count == 2 && TrafficReplayer.conditionalHeaders.contains($0[0].lowercased()) }
    }
    keys = index.exchanges.map {
      ($0.method, PlaceholderMatch.literals($0.url), $0.requestBody.map(PlaceholderMatch.literals), $0.requestBodyBase64)
    }
    used = Mutex([Bool](repeating: false, count: index.exchanges.count))
  }

  /// The job the recording is of.
  public var job: String { index.job }

  /// The state the recorded run started from; empty for a version 1 recording.
  public var start: RecordingStart { index.start ?? RecordingStart() }

  /// The rows of `table`, a table of `start`, in column order.
  /// - Throws: `RecordingError` for a missing or malformed rows file.
  public func rows(of table: RecordingStart.Table) throws -> [[StartValue]] {
    let path = directory + "/" + table.rowsFile
    // A rows file is one of the recording's own: `start/NAME`, never a path out of it.
    guard table.rowsFile.hasPrefix(RecordingStart.folder + "/"), !table.rowsFile.split(separator: "/").contains("..") else {
      throw RecordingError(
        path: directory + "/" + RecordingIndex.fileName, detail: "the rows file of table \(table.name) is not in start/: \(table.rowsFile)")
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw RecordingError(
        path: path, detail: "the rows of table \(table.name) the recorded run started from are missing; record the job again")
    }
    do {
      return try JSONDecoder().decode([[StartValue]].self, from: data)
    } catch {
      throw RecordingError(path: path, detail: "the rows of table \(table.name) are malformed: \(error)")
    }
  }

  /// How many exchanges the recording holds.
  public var count: Int { index.exchanges.count }

  func matches(_ number: Int, _ request: HTTPRequest) -> Bool {
    let (method, url, body) = (request.method.rawValue, request.url, request.body)
    let key = keys[number]
    guard key.method == method, TrafficReplayer.textMatches(key.url, url) else { return false }
    // A conditional request (validators kept by an earlier run) and a plain one are
    // different requests: a recorded 304 never answers a request that sent no validators.
    guard isConditional[number] == TrafficReplayer.isConditional(request) else { return false }
    switch body {
    case .none: return key.body == nil && key.base64 == nil
    case .bytes(let bytes): return TrafficReplayer.bodyMatches(key.body, key.base64, Data(bytes))
    case .file(let path):
      return TrafficReplayer.bodyMatches(key.body, key.base64, (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data())
    }
  }

  static func bodyMatches(_ text: [Substring]?, _ base64: String?, _ data: Data) -> Bool {
    if let base64 { return base64 == data.base64EncodedString() }
    guard let text, let sent = String(data: data, encoding: .utf8) else { return false }
    return textMatches(text, sent)
  }

  /// A recorded text (cut at its placeholders) against a sent one; a sent text holding an
  /// unresolved credential (a replay without secrets) is matched with it as any text.
  static func textMatches(_ parts: [Substring], _ sent: String) -> Bool {
    if PlaceholderMatch.matches(parts, Substring(sent)) { return true }
    guard sent.contains("not") else { return false }
    return PlaceholderMatch.matchesUnresolved(parts, sent)
  }

  /// The exchange that answers `request`, marked used.
  /// - Throws: `TransportError.notRecorded` when none matches.
  func exchange(for request: HTTPRequest) throws -> RecordedExchange {
    let method = request.method.rawValue
    if let number = claim(request) { return index.exchanges[number] }
    let asked = "\(method) \(HTTPClient.displayURL(request.url))"
    var nearest: (text: String, distance: Int)?
    for exchange in index.exchanges {
      let text = "\(exchange.method) \(HTTPClient.displayURL(exchange.url))"
      let distance = EditDistance.distance(asked, text)
      if nearest == nil || distance < nearest?.distance ?? 0 { nearest = (text, distance) }
    }
    var body: String?
    if case .bytes(let bytes) = request.body { body = String(decoding: bytes.prefix(200), as: UTF8.self) }
    throw TransportError.notRecorded(request: asked, body: body, nearest: nearest?.text, recording: directory)
  }

  /// The number of the exchange that answers `request`, marked used: the first unused one of
  /// the best `rank`, else the last used one of the best rank; nil when none matches.
  ///
  /// Not a throwing function, and not to be inlined into one: with `Mutex.withLock`
  /// (generic over a typed error, `throws(E)`, here `Never`) inlined into the
  /// untyped-throwing `exchange(for:)`, a release build (Swift 6.3.1, -O) returned from it
  /// an error nothing had thrown (no `swift_willThrow`; the error slot held stale stack
  /// bits), and the replay crashed in `swift_dynamicCast` casting it. A debug build never
  /// did. `@inline(never)` only keeps this function's body out of its callers (the
  /// optimizer may still inline `withLock` into it, which is harmless here, as it does not
  /// throw); it is a workaround of that miscompile, not a guarantee against others: what
  /// shows that a release build replays is deploy/tests/run.sh, which replays every recorded
  /// example with the packed release binary.
  @inline(never)
  private func claim(_ request: HTTPRequest) -> Int? {
    used.withLock { used -> Int? in
      var last: Int?
      var best: (rank: Int, number: Int)?
      for number in index.exchanges.indices where matches(number, request) {
        let rank = rank(number, request)
        if !used[number] {
          if rank < best?.rank ?? Int.max { best = (rank, number) }
        } else if rank <= last.map({ self.rank($0, request) }) ?? Int.max {
          last = number
        }
      }
      if let best {
        used[best.number] = true
        return best.number
      }
      return last
    }
  }

  /// Request headers whose values differ between runs of one job (a fresh token, an id drawn
  /// per request, a trace): never compared.
  static let volatileHeaders: Set<String> = [
    "authorization", "cookie", "user-agent", "content-length", "date", "idempotency-key", "x-request-id", "traceparent",
    "tracestate",
  ]

  /// The headers of a conditional request (RFC 9110 §13.1).
  static let conditionalHeaders: Set<String> = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]

  static func isConditional(_ request: HTTPRequest) -> Bool {
    request.headers.contains { conditionalHeaders.contains($0.name.lowercased()) }
  }

  /// How well exchange `number` answers `request` among those that match it, lower better:
  /// the step's own headers the same (a tenant, a version, a language chosen by header) count
  /// most, then the URL and body the same to the letter over a match through a secret's
  /// placeholder (which stands for any text, so it also matches a request another exchange
  /// holds literally).
  func rank(_ number: Int, _ request: HTTPRequest) -> Int {
    let exchange = index.exchanges[number]
    func stable(_ pairs: [(String, String)]) -> Set<[String]> {
      Set(pairs.filter { !TrafficReplayer.volatileHeaders.contains($0.0) && !$0.1.contains("{{secret:") }.map { [$0.0, $0.1] })
    }
    let recorded = stable(exchange.requestHeaders.compactMap { $0.count == 2 ? ($0[0].lowercased(), $0[1]) : nil })
    let sent = stable(request.headers.filter { !$0.isSecret }.map { ($0.name.lowercased(), $0.value) })
    var literal = exchange.url == request.url
    if case .bytes(let bytes) = request.body { literal = literal && exchange.requestBody == String(decoding: bytes, as: UTF8.self) }
    return (recorded == sent ? 0 : 2) + (literal ? 0 : 1)
  }

  /// Answers `request` from the recording: the body streamed to `sink` as the recorded run
  /// received it, the recorded fault (or `TransportError.notRecorded`) returned as the
  /// hop's error where it happened.
  func answer(
    _ request: HTTPRequest, sink: any ResponseSink, cancellation: Cancellation, progress: ((Int64, Int64?) -> Void)?
  ) -> Exchanged {
    if cancellation.isCancelled { return Exchanged(error: TransportError.cancelled) }
    let exchange: RecordedExchange
    do {
      exchange = try self.exchange(for: request)
    } catch {
      return Exchanged(error: error)
    }
    let figures = ExchangeFigures(bytesSent: exchange.bytesSent, lastStatus: exchange.status, wireBytes: exchange.wireBytes)
    do {
      let (response, location) = try answer(exchange, request, sink: sink, cancellation: cancellation, progress: progress)
      return Exchanged(response: response, location: location, figures: figures)
    } catch {
      return Exchanged(figures: figures, error: error)
    }
  }

  private func answer(
    _ exchange: RecordedExchange, _ request: HTTPRequest, sink: any ResponseSink, cancellation: Cancellation,
    progress: ((Int64, Int64?) -> Void)?
  ) throws -> (HTTPResponse, String?) {
    guard let status = exchange.status else {
      throw exchange.fault?.error(for: request) ?? TransportError.other(url: HTTPClient.displayURL(request.url), detail: "no answer")
    }
    var headers = HTTPHeaders()
    for pair in exchange.responseHeaders where pair.count == 2 { headers.add(pair[0], pair[1]) }
    if exchange.fault == nil, headers["content-length"] != nil {
      // An answer that came whole is as long as its body file: a value equal to a secret
      // was masked there, so the file may be shorter or longer than the length received.
      let size = exchange.bodyFile.flatMap { try? FileManager.default.attributesOfItem(atPath: directory + "/" + $0)[.size] as? Int }
      headers.set("Content-Length", "\(size ?? 0)")
    }
    var response = HTTPResponse(status: status, headers: headers)
    response.url = request.url
    response.wireBytes = exchange.wireBytes
    response.endShown = exchange.endShown
    let success = (200..<300).contains(status)
    var received: Int64 = 0
    if let file = exchange.bodyFile {
      let path = directory + "/" + file
      guard let input = FileHandle(forReadingAtPath: path) else {
        throw RecordingError(path: path, detail: "a body file of the recording is missing")
      }
      defer { try? input.close() }
      if success {
        try sink.begin(response)
        while let data = try input.read(upToCount: HTTPClient.receiveBufferSize), !data.isEmpty {
          if cancellation.isCancelled { throw TransportError.cancelled }
          try data.withUnsafeBytes { try sink.write($0) }
          received += Int64(data.count)
        }
      } else {
        response.errorBody = [UInt8](try input.read(upToCount: 65536) ?? Data())
      }
    } else if success, exchange.fault == nil {
      try sink.begin(response)
    }
    if let fault = exchange.fault { throw fault.error(for: request) }
    response.bytesReceived = received
    if success, let progress { progress(received, received) }
    return (response, exchange.location)
  }
}

/// A recording that cannot be used: `path` and what is wrong with it.
public struct RecordingError: Error, CustomStringConvertible, Sendable {
  public var path: String
  public var detail: String
  public var description: String { "recording \(path): \(detail)" }
}
