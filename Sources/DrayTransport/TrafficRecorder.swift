public import DrayModel
public import Foundation
internal import Synchronization

/// Records every exchange of a run into a folder (`dray run --record DIR`,
/// docs/recordings.md).
///
/// While the run goes on, each answer's body is written as it arrives into a scratch folder
/// of its own (mode 0700, outside `DIR`), since the secrets that must be masked in it are
/// not all known yet (the sign-in's token is learnt from its answer). `finish()` masks
/// every secret the run knew by then (`SharedRedactor`, the same that masks the console and
/// the reports) as numbered `{{secret:N}}` placeholders, writes `DIR/bodies/NNNN.ext` and
/// `DIR/recording.json`, and removes the scratch folder. A run killed before `finish()`
/// leaves `DIR` without a new index.
public final class TrafficRecorder: Sendable {
  /// One exchange being recorded: its number and the body received so far.
  final class Tape: @unchecked Sendable {
    let id: Int
    let request: HTTPRequest
    let path: String
    let step: String?
    let attempt: Int
    private var file: FileHandle?
    /// The head passed to the sink (a 2xx answer), for a fault after it.
    var head: HTTPResponse?
    private(set) var bytes: Int64 = 0

    init(id: Int, request: HTTPRequest, path: String) {
      self.id = id
      self.request = request
      self.path = path
      self.step = Tracing.currentStep
      self.attempt = Tracing.currentAttempt
    }

    /// Starts the body over (a new answer's head).
    func restart() throws {
      try? file?.close()
      guard FileManager.default.createFile(atPath: path, contents: nil) else {
        throw TransportError.file(path: path, detail: "cannot create the recording's body file")
      }
      file = FileHandle(forWritingAtPath: path)
      bytes = 0
    }

    func write(_ buffer: UnsafeRawBufferPointer) throws {
      if file == nil { try restart() }
      try file?.write(contentsOf: Data(buffer))
      bytes += Int64(buffer.count)
    }

    /// The body is `bytes` (a non-2xx answer's error body).
    func replace(with body: [UInt8]) throws {
      try restart()
      try body.withUnsafeBytes { try write($0) }
    }

    func close() {
      try? file?.close()
      file = nil
    }

    var hasBody: Bool { bytes > 0 }
  }

  /// An exchange ended: its tape (the request and the body's scratch file) and its index
  /// entry with the answer's figures, its secrets still in it (`RecordingMasker` fills in
  /// the request and masks every text when `finish()` writes it).
  typealias Ended = (tape: Tape, exchange: RecordedExchange)

  private struct State {
    var next = 1
    var ended: [Ended] = []
    var start = RecordingStart()
  }

  /// The recording's folder.
  public let directory: String
  let job: String
  let redactor: SharedRedactor
  let scratch: String
  private let state = Mutex(State())

  /// Prepares `directory` (created if missing; an earlier recording in it is replaced when
  /// this one finishes).
  /// - Throws: `TransportError.file` when the folder or the scratch folder cannot be made.
  public init(directory: String, job: String, redactor: SharedRedactor) throws {
    self.directory = directory
    self.job = job
    self.redactor = redactor
    let files = FileManager.default
    do {
      try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
      let scratch = files.temporaryDirectory.appendingPathComponent("dray-record-\(UUID().uuidString)").path
      try files.createDirectory(atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      self.scratch = scratch
    } catch {
      throw TransportError.file(path: directory, detail: "cannot prepare the recording's folder: \(error.localizedDescription)")
    }
  }

  func start(_ request: HTTPRequest) -> Tape {
    let id = state.withLock { state -> Int in
      state.next += 1
      return state.next - 1
    }
    return Tape(id: id, request: request, path: scratch + "/" + String(id))
  }

  func end(_ tape: Tape, response: HTTPResponse?, location: String?, fault: (any Error)?, elapsed: Duration, client: HTTPClient) {
    tape.close()
    let head = response ?? tape.head
    let exchange = RecordedExchange(
      id: tape.id, step: tape.step, attempt: tape.attempt, method: tape.request.method.rawValue, url: tape.request.url,
      requestHeaders: [], acceptEncoding: tape.request.acceptEncoding, requestBody: nil, requestBodyBase64: nil,
      status: response?.status ?? client.lastStatus, responseHeaders: (head?.headers ?? HTTPHeaders()).fields.map { [$0.name, $0.value] },
      bodyFile: nil, bodyBytes: tape.bytes, wireBytes: client.lastWireBytes, bytesSent: client.bytesSent,
      endShown: response?.endShown ?? false, location: location, fault: fault.map(RecordedFault.init),
      elapsedMs: Int((elapsed.seconds * 1000).rounded()))
    let ended: Ended = (tape, exchange)
    state.withLock { $0.ended.append(ended) }
  }

  /// Keeps the state the run started from (`RecordingStart`), taken by the run once it
  /// holds the job's lock, before its first request; `rows` holds each of `start.tables`'
  /// rows as a JSON array (`StartValue`), in order. The rows wait in the scratch folder
  /// and are masked as bodies are when `finish()` writes them.
  /// - Throws: `TransportError.file` when the scratch folder cannot be written.
  public func keepStart(_ start: RecordingStart, rows: [Data]) throws {
    var start = start
    for (number, data) in rows.enumerated() where number < start.tables.count {
      let name = String(format: "%04d", number + 1) + ".json"
      do {
        try data.write(to: URL(fileURLWithPath: scratch + "/start-" + name))
      } catch {
        throw TransportError.file(
          path: scratch, detail: "cannot keep the rows of table \(start.tables[number].name): \(error.localizedDescription)")
      }
      start.tables[number].rowsFile = RecordingStart.folder + "/" + name
    }
    state.withLock { $0.start = start }
  }

  /// Writes nothing and removes the scratch folder: a run that sent nothing (a start the
  /// job's lock refused) leaves an earlier recording in the folder as it was.
  public func discard() {
    try? FileManager.default.removeItem(atPath: scratch)
  }

  /// Masks and writes the recording: `DIR/recording.json` and `DIR/bodies/`, replacing an
  /// earlier recording there.
  /// - Throws: `TransportError.file` when a file cannot be written.
  public func finish() throws {
    let (ended, start) = state.withLock { ($0.ended, $0.start) }
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let masker = RecordingMasker(redactor: redactor.current)
    let bodies = directory + "/" + RecordingIndex.bodiesFolder
    let kept = directory + "/" + RecordingStart.folder
    let files = FileManager.default
    do {
      try? files.removeItem(atPath: bodies)
      try? files.removeItem(atPath: kept)
      try files.createDirectory(atPath: bodies, withIntermediateDirectories: true)
      if !start.tables.isEmpty { try files.createDirectory(atPath: kept, withIntermediateDirectories: true) }
      for table in start.tables {
        let name = String(table.rowsFile.dropFirst(RecordingStart.folder.count + 1))
        try masker.maskFile(scratch + "/start-" + name, to: kept + "/" + name, RecordingMasker.Counter())
      }
      var exchanges: [RecordedExchange] = []
      for item in ended.sorted(by: { $0.tape.id < $1.tape.id }) {
        exchanges.append(try masker.exchange(item, bodies: bodies))
      }
      let index = RecordingIndex(
        version: RecordingIndex.currentVersion, job: job, start: masker.start(start), exchanges: exchanges)
      let encoder = JSONEncoder()
      encoder.keyEncodingStrategy = .convertToSnakeCase
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
      var data = try encoder.encode(index)
      data.append(0x0A)
      try data.write(to: URL(fileURLWithPath: directory + "/" + RecordingIndex.fileName), options: .atomic)
    } catch let error as TransportError {
      throw error
    } catch {
      throw TransportError.file(path: directory, detail: "cannot write the recording: \(error.localizedDescription)")
    }
  }
}
