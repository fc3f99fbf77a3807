public import DrayModel
internal import Foundation
internal import Synchronization

/// Where a run's HTTP exchanges go: the network (`live`), the network and a recording
/// (`recording`), or a recording alone (`replaying`, no network call at all).
///
/// Chosen once by `dray run` before the run starts (`--record DIR`, `--replay DIR`) and read
/// by `HTTPClient` for every request it sends (one hop of redirects each), so that every
/// step kind, the sign-in and the OAuth 2.0 token requests are recorded and replayed without
/// code of their own. The clients that send the run's OpenLineage events and trace
/// (`HTTPClient.traced` false) are never recorded; a replay turns those exports off.
/// docs/recordings.md gives the layout and the matching rule.
public enum Traffic: Sendable {
  case live
  case recording(TrafficRecorder)
  case replaying(TrafficReplayer)

  private static let chosen = Mutex<Traffic>(.live)

  /// The traffic mode of this process; `.live` unless set.
  public static var mode: Traffic {
    get { chosen.withLock { $0 } }
    set { chosen.withLock { $0 = newValue } }
  }

  /// Whether this process answers requests from a recording: a replay keeps no credential
  /// it is handed (a rotated refresh token is never written).
  public static var isReplaying: Bool {
    if case .replaying = mode { return true }
    return false
  }
}

/// What one sent request came to, beside the answer: what `HTTPClient` reports after it.
struct ExchangeFigures {
  var bytesSent: Int64
  var lastStatus: Int?
  var wireBytes: Int64
}

/// What one hop came to: an answer and the address a redirect named, or (at replay) the
/// recorded fault; with the figures of a replayed request.
struct Exchanged {
  var response: HTTPResponse?
  var location: String?
  var figures: ExchangeFigures?
  var error: (any Error)?
}

/// A sink that writes every byte it passes on into a recorder's tape first.
final class TeeSink: ResponseSink {
  let inner: any ResponseSink
  let tape: TrafficRecorder.Tape

  init(_ inner: any ResponseSink, tape: TrafficRecorder.Tape) {
    self.inner = inner
    self.tape = tape
  }

  func begin(_ response: HTTPResponse) throws {
    try tape.restart()
    tape.head = response
    try inner.begin(response)
  }

  func write(_ bytes: UnsafeRawBufferPointer) throws {
    try tape.write(bytes)
    try inner.write(bytes)
  }
}

extension HTTPClient {
  /// One request without following redirects, through the process's `Traffic`: sent
  /// (and recorded), or answered from the recording.
  func exchangeOnce(
    _ request: HTTPRequest, sink: any ResponseSink, performOnce: (HTTPRequest, any ResponseSink) throws -> (HTTPResponse, String?)
  )
    throws -> Exchanged
  {
    guard traced else {
      let (response, location) = try performOnce(request, sink)
      return Exchanged(response: response, location: location)
    }
    switch Traffic.mode {
    case .live:
      let (response, location) = try performOnce(request, sink)
      return Exchanged(response: response, location: location)
    case .recording(let recorder):
      let tape = recorder.start(request)
      let started = ContinuousClock.now
      do {
        let (response, location) = try performOnce(request, TeeSink(sink, tape: tape))
        if !(200..<300).contains(response.status) { try tape.replace(with: response.errorBody) }
        recorder.end(tape, response: response, location: location, fault: nil, elapsed: ContinuousClock.now - started, client: self)
        return Exchanged(response: response, location: location)
      } catch {
        recorder.end(tape, response: nil, location: nil, fault: error, elapsed: ContinuousClock.now - started, client: self)
        throw error
      }
    case .replaying(let replayer):
      return replayer.answer(request, sink: sink, cancellation: cancellation, progress: progress)
    }
  }
}
