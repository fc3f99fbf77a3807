import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation
import Testing

/// gzip on the wire: platform downloads ask for it and resume at uncompressed offsets
/// (X-Range, platform-api.md §3); a standard Range never resumes a compressed answer; an
/// answer in a coding that was not asked for is refused, naming it.
@Suite struct CompressionTests {
  @Test func aGzipDownloadBrokenAtSeededRandomOffsetsResumesToTheExactAnswer() throws {
    let seed = SeededRandom.seed(fromEnvironment: "DRAY_GZIP_SEED")
    var random = SeededRandom(seed: seed)
    let net = try NetworkFixture(compression: true)
    // Four cuts, each after a random number of compressed bytes of its own answer.
    let cuts = (0..<4).map { _ in Int.random(in: 2_000...60_000, using: &random) }
    try net.faults("[" + cuts.map { #"{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": \#($0)}"# }.joined(separator: ", ") + "]")
    let (result, attempts, download) = net.fetch(policy: NetworkFixture.policy(5))
    #expect(result.errorText == nil, "seed \(seed)")
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "body_truncated", "body_truncated", "body_truncated", "ok"], "seed \(seed)")
    #expect(try NetworkFixture.checksum(net.answerPath) == NetworkFixture.checksum(net.serverFile), "seed \(seed)")

    let requests = try net.requests()
    #expect(requests.count == 5)
    #expect(requests.allSatisfy { $0["Accept-Encoding"] == "gzip" && $0.contentEncoding == "gzip" })
    #expect(requests.map(\.status) == [200, 206, 206, 206, 206])
    // Each resume asks for the bytes after those already decoded into the part; the
    // server's log shows it started its compressed tail there.
    var decoded: Int64 = 0
    for (index, attempt) in attempts.enumerated() {
      #expect(requests[index]["X-Range"] == (decoded == 0 ? nil : "bytes=\(decoded)-"), "seed \(seed)")
      #expect(requests[index].offset == decoded, "seed \(seed)")
      #expect(attempt.resumedFrom == (decoded == 0 ? nil : decoded))
      decoded += attempt.bytes ?? 0
    }
    #expect(decoded == net.serverSize)
    // On the wire: what the server sent, compressed, and less than the answer.
    #expect(attempts.map(\.wireBytes) == requests.map { Optional($0.responseBytes) }, "seed \(seed)")
    #expect(requests.prefix(4).map(\.responseBytes) == cuts.map(Int64.init))
    #expect(download.wireBytesReceived == requests.reduce(0) { $0 + $1.responseBytes })
    #expect(download.wireBytesReceived * 2 < download.bytesReceived)
  }

  @Test func aServerIgnoringXRangeOnACompressedAnswerStartsAgainFromByteZero() throws {
    let net = try NetworkFixture(compression: true)
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 20000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "ignore_range": true}]"#)
    let (result, attempts, download) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    let held = try #require(attempts[0].bytes)
    #expect(attempts.map(\.bytes) == [held, net.serverSize])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 200])
    #expect(requests[1]["X-Range"] == "bytes=\(held)-")
    #expect(download.notes == ["the server ignored X-Range from byte \(held) and sent the whole answer (200); started again from byte 0"])
    #expect(try NetworkFixture.checksum(net.answerPath) == NetworkFixture.checksum(net.serverFile))
  }

  @Test func aChangedETagMidwayOnACompressedAnswerStartsAgainFromByteZero() throws {
    let net = try NetworkFixture(compression: true)
    try net.faults(
      #"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 20000}, {"path": "/api/v1/rpc/BIG/", "times": 1, "change_etag": true}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "resume_restart", "ok"])
    let requests = try net.requests()
    #expect(requests.map(\.status) == [200, 412, 200])
    #expect(requests[2]["X-Range"] == nil && requests[2].offset == 0)
    #expect(try NetworkFixture.checksum(net.answerPath) == NetworkFixture.checksum(net.serverFile))
  }

  @Test func aStandardRangeNeverResumesACompressedAnswer() throws {
    let net = try NetworkFixture(compression: true)
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "times": 1, "close_after": 20000}]"#)
    let (result, attempts, _) = net.fetch(style: .standard)
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(attempts.map(\.resumedFrom) == [nil, nil])
    let requests = try net.requests()
    // Range would count compressed bytes, which the part does not hold: asked again whole.
    #expect(requests.map { $0["Range"] } == [nil, nil])
    #expect(requests.map(\.status) == [200, 200])
    #expect(try NetworkFixture.checksum(net.answerPath) == NetworkFixture.checksum(net.serverFile))
  }

  @Test func anAnswerCompressedUnaskedIsRefusedNamingItsTypeAndEncoding() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/rpc/BIG/", "gzip_unasked": true}]"#)
    let (result, attempts, _) = net.fetch()
    #expect(
      result.errorText
        == "the answer from \(net.emulator.url)api/v1/rpc/BIG/ is not one dray can read: the body came in a content coding that "
        + "was not asked for (Content-Type: application/json, Content-Encoding: gzip; the request sent Accept-Encoding: identity), "
        + "so it was not used; the server should honour Accept-Encoding (RFC 9110 §12.5.3); not retried, as the server would "
        + "send the same again. Fix the server, or the proxy in between")
    #expect(attempts.map(\.outcome.code) == ["bad_answer"])
    #expect(!FileManager.default.fileExists(atPath: net.answerPath + ".part"))
  }
}
