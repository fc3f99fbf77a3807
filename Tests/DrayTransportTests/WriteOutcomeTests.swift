import DrayTransport
import Testing

/// `WriteOutcome`: what a failed attempt of a write without a transaction id did on the
/// server, by how it ended (docs/network.md, "Writes").
@Suite struct WriteOutcomeTests {
  static func status(_ code: Int) -> TransportError {
    .httpStatus(HTTPStatusError(status: code, url: "http://h/api/v1/rpc/W/"))
  }

  @Test func nothingSentChangedNothingWhateverTheError() {
    for error in [
      TransportError.connectionRefused(host: "h:1"), .dnsFailure(host: "nowhere.invalid"),
      .timeout(.connect, url: "http://h/", limit: .seconds(1)), .connectionReset(url: "http://h/", detail: "reset"),
    ] {
      #expect(WriteOutcome(error: error, bytesSent: 0) == .notSent, "\(error)")
    }
    #expect(WriteOutcome.notSent.description == "none of it reached the server")
  }

  @Test func aWholeRefusalChangedNothing() {
    for code in [408, 429, 503] {
      #expect(WriteOutcome(error: Self.status(code), bytesSent: 120) == .refused(status: code))
    }
    // Retries that ran out, or a Retry-After too long to honour, are the same answer.
    #expect(
      WriteOutcome(error: TransportError.gaveUp(last: Self.status(503), reason: "gave up"), bytesSent: 120) == .refused(status: 503))
    #expect(
      WriteOutcome(
        error: TransportError.retryAfterTooLong(HTTPStatusError(status: 429, url: "http://h/"), seconds: 3600, limit: .seconds(60)),
        bytesSent: 120) == .refused(status: 429))
    #expect(WriteOutcome.refused(status: 503).description == "the server refused it with 503")
  }

  @Test func anotherWholeErrorAnswerFailedThere() {
    for code in [400, 404, 500] {
      #expect(WriteOutcome(error: Self.status(code), bytesSent: 120) == .failed(status: code))
    }
    #expect(!WriteOutcome.failed(status: 500).mayBeApplied)
  }

  @Test func aGatewayAnswerOrNoWholeAnswerLeavesTheOutcomeUnknown() {
    for error in [
      Self.status(502), Self.status(504), TransportError.truncated(url: "http://h/", received: 20, detail: "cut"),
      .connectionReset(url: "http://h/", detail: "reset"), .timeout(.idle, url: "http://h/", limit: .seconds(1)), .cancelled,
    ] {
      #expect(WriteOutcome(error: error, bytesSent: 120) == .unknown, "\(error)")
    }
    #expect(WriteOutcome.unknown.mayBeApplied)
  }

  @Test func aWriteFailureSaysWhatTheLastAttemptDid() {
    let refused = WriteFailure(
      TransportError.gaveUp(last: Self.status(503), reason: "gave up after 3 attempts"), outcome: .refused(status: 503))
    #expect(refused.code == "http_503")
    #expect("\(refused)".hasSuffix("; the server refused it with 503, so it changed nothing there"))
    let cut = WriteFailure(TransportError.truncated(url: "http://h/", received: 20, detail: "cut"), outcome: .unknown)
    #expect(cut.code == "outcome_unknown")
    #expect(
      "\(cut)".hasSuffix(
        "; not sent again: the call may change data on the server and carries no X-Transaction-ID for the server to recognise a "
          + "repeat by, and it reached the server and no whole answer came back, so whether the server applied it is unknown"))
  }
}
