import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation
import Testing

/// Each fault of the emulator against a resumable platform download: the bytes that end up
/// on disk, the attempts made, the headers each attempt sent, and what the report records.
@Suite struct DownloadFaultTests {
  /// The checks every successful fetch must pass: the file is the server's, every attempt
  /// carried the same transaction id and a token.
  func expectServerBytes(_ net: NetworkFixture, _ requests: [LoggedRequest], transactionID: String = "t-1") throws {
    #expect(try NetworkFixture.checksum(net.answerPath) == NetworkFixture.checksum(net.serverFile))
    #expect(!FileManager.default.fileExists(atPath: net.answerPath + ".part"))
    #expect(!FileManager.default.fileExists(atPath: net.answerPath + ".part.json"))
    #expect(requests.allSatisfy { $0["X-Transaction-ID"] == transactionID })
    #expect(requests.allSatisfy { $0["Authorization"]?.hasPrefix("Bearer ") == true })
  }

  @Test func theFirstCallsFailWithAStatusThenTheCallSucceeds() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 2, "status": 503}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["http_503", "http_503", "ok"])
    #expect(attempts.map(\.status) == [503, 503, 200])
    #expect(attempts.map(\.wait) == [0.05, 0.05, nil])
    #expect(attempts[0].message == "HTTP 503 Service Unavailable from \(net.emulator.url)api/v1/rpc/BIG/: injected fault")
    #expect(attempts.map(\.bytes) == [0, 0, net.serverSize])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [503, 503, 200])
    #expect(requests.allSatisfy { $0["X-Range"] == nil && $0["If-Match"] == nil })
    try expectServerBytes(net, requests)
  }

  @Test func retriesRunOutWithAMessageSayingSo() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "status": 502, "description": "upstream down"}]"#)
    let (result, attempts, _) = net.fetch(policy: NetworkFixture.policy(2))
    #expect(
      result.errorText
        == "HTTP 502 Bad Gateway from \(net.emulator.url)api/v1/rpc/BIG/: upstream down; gave up after 3 attempts (retry.count: 2)")
    #expect((result.error as? TransportError)?.code == "http_502")
    #expect(attempts.map(\.outcome.code) == ["http_502", "http_502", "http_502"])
    #expect(attempts.map(\.wait) == [0.05, 0.05, nil])
    #expect(try net.requests().count == 3)
    #expect(!FileManager.default.fileExists(atPath: net.answerPath))
  }

  @Test func aClientErrorFailsAtOnce() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "status": 403, "description": "Forbidden"}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == "HTTP 403 Forbidden from \(net.emulator.url)api/v1/rpc/BIG/: Forbidden")
    #expect(attempts.map(\.outcome.code) == ["http_403"])
    #expect(try net.requests().count == 1)
    #expect(!FileManager.default.fileExists(atPath: net.answerPath + ".part"))
  }

  @Test func aConnectionClosedAfterKBytesResumesWithXRangeAndIfMatch() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000}]"#)
    let (result, attempts, download) = net.fetch()
    let head = try result.get()
    let size = net.serverSize
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(
      attempts[0].message
        == "the answer from \(net.emulator.url)api/v1/rpc/BIG/ was cut short after 300000 bytes "
        + "(transfer closed with \(size - 300000) bytes remaining to read); the connection dropped mid-answer")
    #expect(attempts.map(\.bytes) == [300000, size - 300000])
    #expect(attempts.map(\.resumedFrom) == [nil, 300000])
    #expect(download.bytesReceived == size)
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 206])
    #expect(requests[0]["X-Range"] == nil)
    #expect(requests[1]["X-Range"] == "bytes=300000-")
    #expect(requests[1]["If-Match"] == head.etag)
    #expect(head.etag?.hasPrefix("\"") == true)
    #expect(requests.map(\.responseBytes) == [300000, size - 300000])
    try expectServerBytes(net, requests)
  }

  @Test func aChunkedBodyCutShortIsNeverComplete() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "chunked": true, "close_after": 250000}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(attempts[0].message?.contains("transfer closed with outstanding read data remaining") == true)
    #expect(attempts.map(\.resumedFrom) == [nil, 250000])
    let requests = try net.requests()
    #expect(requests[0]["X-Range"] == nil)
    #expect(requests[1]["X-Range"] == "bytes=250000-")
    try expectServerBytes(net, requests)
  }

  @Test func aWholeChunkedBodyIsComplete() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "chunked": true}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["ok"])
    try expectServerBytes(net, try net.requests())
  }

  @Test func aTrickleBeyondTheRequestTimeoutTimesOutAndTheRetryResumes() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "trickle": 400000}]"#)
    let (result, attempts, _) = net.fetch(timeouts: Timeouts(connect: .seconds(2), request: .milliseconds(800), idle: .seconds(5)))
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["timeout_request", "ok"])
    #expect(
      attempts[0].message
        == "\(net.emulator.url)api/v1/rpc/BIG/ took longer than 800ms (request timeout); raise timeouts.request, or check why the server is slow"
    )
    let kept = try #require(attempts[0].bytes)
    #expect(kept > 100_000 && kept < 400_000)
    #expect(attempts[1].resumedFrom == kept)
    let requests = try net.requests()
    #expect(requests[1]["X-Range"] == "bytes=\(kept)-")
    try expectServerBytes(net, requests)
  }

  @Test func aStallLongerThanTheIdleTimeoutTimesOutAndTheRetryResumes() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "stall_after": 100000, "stall_for": 4}]"#)
    let (result, attempts, _) = net.fetch(timeouts: Timeouts(connect: .seconds(2), idle: .seconds(1)))
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["timeout_idle", "ok"])
    #expect(
      attempts[0].message
        == "no data from \(net.emulator.url)api/v1/rpc/BIG/ for 1s (idle timeout); the server stalled, or raise timeouts.idle")
    #expect(attempts[0].duration < 3.5)
    #expect(attempts.map(\.resumedFrom) == [nil, 100000])
    try expectServerBytes(net, try net.requests())
  }

  @Test func retryAfterInSecondsReplacesAShorterWait() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "status": 503, "retry_after": "1"}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["http_503", "ok"])
    #expect(attempts[0].wait == 1.0)
    #expect(attempts[0].waitFromRetryAfter)
    #expect(attempts[1].startOffset >= 1.0)
  }

  @Test func retryAfterAsAnHTTPDateIsHonoured() throws {
    let net = try NetworkFixture()
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    // Five seconds ahead, in whole seconds: however late the request goes out on a busy
    // machine, the wait is what is left until then, never nothing and never more.
    let date = formatter.string(from: Date().addingTimeInterval(5))
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "status": 429, "retry_after": "\#(date)"}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["http_429", "ok"])
    let wait = try #require(attempts[0].wait)
    #expect(wait > 0 && wait <= 5.01, "waited \(wait) s for \(date)")
    #expect(attempts[0].waitFromRetryAfter)
  }

  /// Values past 2^63 (beyond Int) and past 10^308 (beyond Double) are waits too long as
  /// well, never unreadable values retried at once; the message repeats the server's digits.
  @Test(arguments: [
    ("120", "120"), ("99999999999", "99999999999"), ("9223372036854775808", "9223372036854775808"),
    (String(repeating: "9", count: 400), "99999999999999999999… (a number of 400 digits)"),
  ])
  func retryAfterBeyondMaxRetryAfterFailsSayingSo(value: String, shown: String) throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "status": 503, "retry_after": "\#(value)"}]"#)
    var policy = NetworkFixture.policy()
    policy.maxRetryAfter = .seconds(60)
    let (result, attempts, _) = net.fetch(policy: policy)
    #expect(
      result.errorText
        == "HTTP 503 Service Unavailable from \(net.emulator.url)api/v1/rpc/BIG/: injected fault; the server asked to wait \(shown) s "
        + "before retrying (Retry-After), longer than retry.max_retry_after (1m); giving up. Raise retry.max_retry_after to wait that long")
    #expect((result.error as? TransportError)?.code == "retry_after_too_long")
    #expect(attempts.map(\.outcome.code) == ["http_503"])
    #expect(attempts[0].wait == nil)
    #expect(try net.requests().count == 1)
  }

  @Test func aServerIgnoringXRangeMakesTheDownloadStartAgain() throws {
    let net = try NetworkFixture()
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "ignore_range": true}]"#)
    let (result, attempts, download) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(attempts.map(\.bytes) == [300000, net.serverSize])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 200])
    #expect(requests[1]["X-Range"] == "bytes=300000-")
    #expect(download.notes == ["the server ignored X-Range from byte 300000 and sent the whole answer (200); started again from byte 0"])
    try expectServerBytes(net, requests)
  }

  @Test func aChangedETagAnswers412AndTheDownloadStartsAgain() throws {
    let net = try NetworkFixture()
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "change_etag": true}]"#)
    let (result, attempts, download) = net.fetch()
    let head = try result.get()
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "resume_restart", "ok"])
    #expect(attempts.map(\.status) == [200, 412, 200])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 412, 200])
    #expect(requests[1]["X-Range"] == "bytes=300000-")
    #expect(requests[1]["If-Match"] == head.etag)
    #expect(requests[2]["X-Range"] == nil && requests[2]["If-Match"] == nil)
    #expect(download.notes == ["the answer changed on the server (412 to If-Match \(head.etag ?? "")); downloaded again from byte 0"])
    try expectServerBytes(net, requests)
  }

  @Test func a416WithTheWholeAnswerHeldCompletesWithoutDownloadingAgain() throws {
    let net = try NetworkFixture()
    // A run killed after the last byte and before the rename left the whole answer.
    let (first, _, _) = net.fetch()
    let etag = try #require(try first.get().etag)
    try FileManager.default.moveItem(atPath: net.answerPath, toPath: net.answerPath + ".part")
    let sidecar = #"{"url":"\#(net.emulator.url)api/v1/rpc/BIG/","etag":"\#(etag.replacing("\"", with: "\\\""))","transaction_id":"t-1"}"#
    try sidecar.write(toFile: net.answerPath + ".part.json", atomically: true, encoding: .utf8)
    let (result, attempts, download) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["ok"])
    #expect(attempts.map(\.status) == [416])
    #expect(attempts[0].bytes == 0)
    #expect(attempts[0].resumedFrom == net.serverSize)
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 416])
    #expect(requests[1]["X-Range"] == "bytes=\(net.serverSize)-")
    #expect(
      download.notes == ["the part already held the whole answer (\(net.serverSize) bytes; 416 to a range from byte \(net.serverSize))"])
    try expectServerBytes(net, requests)
  }

  @Test func a416ForAPartialAnswerStartsAgain() throws {
    let net = try NetworkFixture()
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "answer_416": true}]"#)
    let (result, attempts, download) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "resume_restart", "ok"])
    #expect(attempts.map(\.status) == [200, 416, 200])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 416, 200])
    #expect(requests[2]["X-Range"] == nil)
    #expect(
      download.notes == ["416 to a range from byte 300000 (Content-Range: bytes */\(net.serverSize)); downloaded again from byte 0"])
    try expectServerBytes(net, requests)
  }

  @Test func aWeakETagIsNeverUsedToResume() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000, "weak_etag": true}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(attempts.map(\.resumedFrom) == [nil, nil])
    let requests = try net.requests()
    #expect(requests.allSatisfy { $0["X-Range"] == nil && $0["If-Match"] == nil })
    try expectServerBytes(net, requests)
  }

  @Test func otherServersGetRangeAndIfRange() throws {
    let net = try NetworkFixture()
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 300000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 200000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "change_etag": true}]"#
    )
    let (result, attempts, download) = net.fetch(style: .standard)
    let head = try result.get()
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "body_truncated", "ok"])
    let requests = try net.requests()
    // The second attempt resumes (206); the third meets another ETag, so If-Range sends all (200).
    #expect(requests.map(\.status) == [200, 206, 200])
    #expect(requests[1]["Range"] == "bytes=300000-")
    #expect(requests[1]["If-Range"]?.hasPrefix("\"") == true)
    #expect(requests[2]["Range"] == "bytes=500000-")
    #expect(requests[2]["If-Range"] == requests[1]["If-Range"])
    #expect(head.etag != requests[1]["If-Range"])
    #expect(requests.allSatisfy { $0["X-Range"] == nil && $0["If-Match"] == nil })
    #expect(
      download.notes == [
        "the server sent the whole answer (200) to a Range from byte 500000: the answer changed (If-Range) "
          + "or the server does not do ranges; started again from byte 0"
      ])
    try expectServerBytes(net, requests)
  }

  @Test func aPOSTWithATransactionIDIsRepeatedAfterAReset() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 2, "reset": true}]"#)
    let (result, attempts, _) = net.fetch(transactionID: "t-reset")
    #expect(result.errorText == nil)
    // The first reset is on the connection the sign-in opened: libcurl would repeat such a
    // request itself on a new connection, unseen; dray retries it, in the report.
    #expect(attempts.map(\.outcome.code) == ["connection_reset", "connection_reset", "ok"])
    #expect(
      attempts[0].message
        == "the connection to \(HTTPClient.hostAndPort(net.emulator.url)) closed before an answer to \(net.emulator.url)api/v1/rpc/BIG/ "
        + "(the reused connection closed without an answer); check the server's log and any proxy or load balancer in between")
    let requests = try net.requests()
    #expect(requests.map(\.status) == [nil, nil, 200])
    try expectServerBytes(net, requests, transactionID: "t-reset")
  }

  /// The transaction id is on disk while the request is out (a run killed then sends it
  /// again); a status answer drops it with no part to resume, so the next run asks anew.
  @Test func theTransactionIDIsKeptWhileTheRequestIsOutAndDroppedWhenTheServerAnswers() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "status": 400}]"#)
    let download = Download(path: net.answerPath, style: .platform, resume: true)
    let (result, _, _) = net.fetch(transactionID: "t-kept")
    #expect((result.error as? TransportError)?.code == "http_400")
    #expect(download.existingSidecar(for: net.emulator.url + "api/v1/rpc/BIG/") == nil)
    #expect(!FileManager.default.fileExists(atPath: download.sidecarPath))

    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "hang": true}]"#)
    let (stalled, _, _) = net.fetch(transactionID: "t-kept", policy: NetworkFixture.policy(0), timeouts: Timeouts(idle: .seconds(1)))
    #expect((stalled.error as? TransportError)?.code == "timeout_idle")
    #expect(download.existingSidecar(for: net.emulator.url + "api/v1/rpc/BIG/")?.transactionID == "t-kept")
  }

  @Test func aPOSTWithoutATransactionIDIsNotRetriedOnceSent() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "reset": true}]"#)
    let (result, attempts, _) = net.fetch(transactionID: nil, reads: false)
    #expect(
      result.errorText
        == "the connection to \(HTTPClient.hostAndPort(net.emulator.url)) closed before an answer to \(net.emulator.url)api/v1/rpc/BIG/ "
        + "(Empty reply from server); check the server's log and any proxy or load balancer in between; not sent again: the call may "
        + "change data on the server and carries no X-Transaction-ID for the server to recognise a repeat by, and it reached the server "
        + "and no whole answer came back, so whether the server applied it is unknown")
    let failure = try #require(result.error as? WriteFailure)
    #expect(failure.outcome == .unknown)
    #expect(failure.code == "outcome_unknown")
    #expect((failure.error as? TransportError)?.code == "connection_reset")
    #expect(attempts.map(\.outcome.code) == ["connection_reset"])
    #expect(try net.requests().count == 1)
  }
}
