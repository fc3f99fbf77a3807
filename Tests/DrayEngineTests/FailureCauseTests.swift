import DrayPlatform
import DraySQLite
import DrayTransport
import Foundation
import Testing

@testable import DrayEngine

/// `FailureCause.of`: the class of each typed error a step can end with (docs/report.md,
/// "Failure classes"), and how the causes of several failures combine.
@Suite struct FailureCauseTests {
  let database = SQLiteDatabase(path: nil, journalPath: "/nonexistent/journal.sqlite")
  let url = "http://127.0.0.1:9/api/v1/rpc/FRUITS/"

  func status(_ code: Int) -> HTTPStatusError { HTTPStatusError(status: code, url: url) }

  @Test func servicesUnavailableAfterTheRetriesAreUnavailable() {
    let unavailable: [TransportError] = [
      .dnsFailure(host: "nowhere.invalid"), .proxyDNSFailure(detail: "proxy"), .connectionRefused(host: "127.0.0.1:9"),
      .connectionReset(url: url, detail: "reset"), .timeout(.idle, url: url, limit: .seconds(60)),
      .truncated(url: url, received: 10, detail: "closed"), .other(url: url, detail: "libcurl"),
      .httpStatus(status(503)), .httpStatus(status(500)), .httpStatus(status(429)), .httpStatus(status(408)),
      .gaveUp(last: .httpStatus(status(502)), reason: "retries used up"),
      .retryAfterTooLong(status(503), seconds: 86400, limit: .seconds(900)),
    ]
    for error in unavailable {
      #expect(FailureCause.of(error, in: database).failureClass == .unavailable, "\(error)")
      #expect(FailureCause.of(WriteFailure(error, outcome: .notSent), in: database).failureClass == .unavailable, "\(error)")
    }
    #expect(
      FailureCause.of(TransportError.gaveUp(last: .httpStatus(status(503)), reason: "retries used up"), in: database)
        == FailureCause(.unavailable, "the server answered HTTP 503 Service Unavailable (http_503)"))
    #expect(
      FailureCause.of(TransportError.timeout(.connect, url: url, limit: .seconds(5)), in: database)
        == FailureCause(.unavailable, "a time limit passed (timeouts.connect, timeout_connect)"))
  }

  @Test func refusalsAndEverythingElseArePermanent() {
    let permanent: [any Error] = [
      TransportError.httpStatus(status(404)), TransportError.httpStatus(status(400)),
      TransportError.tlsFailure(host: "h", detail: "certificate"), TransportError.redirect(url: url, detail: "loop"),
      TransportError.badAnswer(url: url, detail: "header"), PlatformError.signInFailed(status(401)),
      PlatformError.unauthorized(status(401)), PlatformError.badAnswer(url: url, detail: "shape"),
      // A write that may have been applied is never sent again unasked: a later run cannot help.
      WriteFailure(TransportError.connectionReset(url: url, detail: "reset"), outcome: .unknown),
      SQLiteError(code: 1, message: "no such table: t", sql: "SELECT * FROM t", path: "db.sqlite"),
      StepError.expectation("rows: 3, expected at least 1000"),
    ]
    for error in permanent {
      #expect(FailureCause.of(error, in: database).failureClass == .permanent, "\(error)")
    }
    #expect(
      FailureCause.of(PlatformError.signInFailed(status(401)), in: database)
        == FailureCause(.permanent, "the server refused the credentials (HTTP 401 Unauthorized, auth_failed)"))
    #expect(
      FailureCause.of(SQLiteError(code: 1, message: "x", sql: nil, path: "db"), in: database)
        == FailureCause(.permanent, "the database refused the work (sqlite_error)"))
  }

  @Test func aRunIsUnavailableOnlyWhenEveryFailureIs() {
    let a = FailureCause(.unavailable, "a")
    let b = FailureCause(.unavailable, "b")
    let p = FailureCause(.permanent, "p")
    #expect(FailureCause.combined([a, b]) == FailureCause(.unavailable, "a; b"))
    #expect(FailureCause.combined([a, p, b]) == p)
    #expect(FailureCause.combined([]) == nil)
    var report = RunReport(
      job: "j", runID: "r", manifestPath: "m", manifestFingerprint: "f", host: "h", startedAt: .now, endedAt: .now, status: .failed,
      exitCode: ExitCode.stepFailed, steps: [])
    report.addFailure(a)
    #expect(report.exitCode == 69)
    report.addFailure(p)
    #expect(report.exitCode == 1)
    #expect(report.failure == p)
    var interrupted = report
    interrupted.status = .interrupted
    interrupted.exitCode = ExitCode.interrupted
    interrupted.addFailure(a)
    #expect(interrupted.exitCode == 130)
  }
}
