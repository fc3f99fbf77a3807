import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Synchronization
import Testing

/// Loads that read a part while its download still writes it (`GrowingFile`).
@Suite struct GrowingLoadTests {
  static let scheme = ResourceScheme.table([("id", "BIGINT"), ("name", "TEXT")])
  static let answer = #"[{"name":"t","data":[[1,"a"],[2,"b"],[3,"c"],[4,"d"]]}]"#

  func load(_ fixture: StoreFixture, _ part: GrowingPart) throws -> LoadResult {
    try fixture.store.write {
      try $0.load(
        file: part.path, growing: part.growing, scheme: GrowingLoadTests.scheme, params: .object([]), delta: false, cancellation: nil
      ) { AnswerInfo(etag: #""e1""#) }
    }
  }

  @Test func rowsLoadAsThePartGrowsAndCommitOnceTheDownloadFinishes() throws {
    let fixture = try StoreFixture()
    let part = try GrowingPart(fixture.folder)
    let cut = GrowingLoadTests.answer.firstRange(of: "[3,")!.lowerBound
    try part.write(String(GrowingLoadTests.answer[..<cut]))
    // The rest is written once the first two rows are inserted (a bound, not a pace: a load
    // that waited for the whole answer would never insert them, and the writer gives up).
    let twoRows = DispatchSemaphore(value: 0)
    let observer = fixture.store.observeInsertedRows(every: 2) { if $0 == 2 { twoRows.signal() } }
    let insertedBeforeTheRest = Mutex(false)
    let writer = Thread {
      let inserted = twoRows.wait(timeout: .now() + 60) == .success
      insertedBeforeTheRest.withLock { $0 = inserted }
      try? part.write(String(GrowingLoadTests.answer[cut...]))
      part.growing.finish()
    }
    writer.start()
    let result = try load(fixture, part)
    observer?.stop()
    #expect(insertedBeforeTheRest.withLock { $0 })
    #expect(result.rowCounts == ["t": 4])
    #expect(try fixture.rows("SELECT id, name FROM R__t ORDER BY id").count == 4)
    #expect(try fixture.rows("SELECT etag FROM _dray_tables WHERE name = 'R__t'") == [[.text(#""e1""#)]])
  }

  @Test func aDownloadThatFailsAfterTheWholeAnswerArrivedLoadsNothing() throws {
    let fixture = try StoreFixture()
    try fixture.load(GrowingLoadTests.scheme, #"[{"name":"t","data":[[9,"old"]]}]"#)
    let part = try GrowingPart(fixture.folder)
    try part.write(GrowingLoadTests.answer)
    part.growing.fail()
    #expect(throws: GrowingFile.Stop.failed) { try load(fixture, part) }
    #expect(try fixture.rows("SELECT id, name FROM R__t") == [[.integer(9), .text("old")]])
  }

  @Test func aPartStartedAgainFromByteZeroStopsItsReader() throws {
    let fixture = try StoreFixture()
    try fixture.load(GrowingLoadTests.scheme, #"[{"name":"t","data":[[9,"old"]]}]"#)
    let part = try GrowingPart(fixture.folder)
    try part.write(String(GrowingLoadTests.answer.prefix(20)))
    part.growing.began(partPath: part.path, at: 0, whole: true)
    #expect(throws: GrowingFile.Stop.restarted) { try load(fixture, part) }
    #expect(try fixture.rows("SELECT id, name FROM R__t") == [[.integer(9), .text("old")]])
  }

  @Test func theRestOfAnAnswerResumedWithinThePartKeepsTheReaderGoing() throws {
    let fixture = try StoreFixture()
    let part = try GrowingPart(fixture.folder)
    try part.write(String(GrowingLoadTests.answer.prefix(20)))
    // A 206 that starts within the part: the same answer's bytes, written again from there.
    part.growing.began(partPath: part.path, at: 10, whole: false)
    try part.handle.truncate(atOffset: 10)
    try part.handle.seek(toOffset: 10)
    try part.handle.write(contentsOf: Data(GrowingLoadTests.answer.utf8.dropFirst(10)))
    part.growing.grew(to: Int64(GrowingLoadTests.answer.utf8.count))
    part.growing.finish()
    #expect(try load(fixture, part).rowCounts == ["t": 4])
  }
}
