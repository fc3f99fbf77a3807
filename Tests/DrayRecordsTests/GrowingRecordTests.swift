import DrayModel
import DrayRecords
import DrayTestSupport
import Foundation
import Synchronization
import Testing

/// A JSON answer's records read from a part while its download still writes it
/// (`GrowingFile`), as an `http` page with declared columns is loaded.
@Suite struct GrowingRecordTests {
  static let answer = #"{"data": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}], "next": "/p2"}"#
  /// Reads the records at `/data` into declared columns, and the next link at `/next`.
  static func reader() throws -> RecordReader {
    RecordReader(
      format: .json, records: .json(try JSONPointer(parsing: "/data")),
      columns: [HTTPStep.Column(name: "id", type: .integer), HTTPStep.Column(name: "name", type: .text)],
      probes: [.json(try JSONPointer(parsing: "/next"))])
  }

  @Test func recordsAreReadAsThePartGrowsAndTheSummaryIsWholeOnceTheDownloadFinishes() throws {
    let folder = TemporaryDirectory()
    let part = try GrowingPart(folder)
    let cut = GrowingRecordTests.answer.firstRange(of: #"{"id": 3"#)!.lowerBound
    try part.write(String(GrowingRecordTests.answer[..<cut]))
    // The rest is written once the first two records are read (a bound, not a pace: a reader
    // that waited for the whole answer would never read them, and the writer gives up).
    let twoRecords = DispatchSemaphore(value: 0)
    let readBeforeTheRest = Mutex(false)
    let writer = Thread {
      let read = twoRecords.wait(timeout: .now() + 60) == .success
      readBeforeTheRest.withLock { $0 = read }
      try? part.write(String(GrowingRecordTests.answer[cut...]))
      part.growing.finish()
    }
    writer.start()
    var ids: [RecordValue] = []
    let summary = try GrowingRecordTests.reader().load(file: part.path, growing: part.growing, prepare: { _ in }) {
      ids.append($0[0].value)
      if ids.count == 2 { twoRecords.signal() }
    }
    #expect(readBeforeTheRest.withLock { $0 })
    #expect(ids.count == 3)
    #expect(summary.records == 3)
    #expect(summary.values[.json(try JSONPointer(parsing: "/next"))] == .text("/p2"))
  }

  @Test func aDownloadThatFailsStopsTheReaderEvenWithTheWholeAnswerInItsPart() throws {
    let part = try GrowingPart(TemporaryDirectory())
    try part.write(GrowingRecordTests.answer)
    part.growing.fail()
    #expect(throws: GrowingFile.Stop.failed) {
      try GrowingRecordTests.reader().load(file: part.path, growing: part.growing, prepare: { _ in }) { _ in }
    }
  }

  @Test func aPartStartedAgainFromByteZeroStopsItsReader() throws {
    let part = try GrowingPart(TemporaryDirectory())
    try part.write(String(GrowingRecordTests.answer.prefix(40)))
    part.growing.began(partPath: part.path, at: 0, whole: true)
    #expect(throws: GrowingFile.Stop.restarted) {
      try GrowingRecordTests.reader().load(file: part.path, growing: part.growing, prepare: { _ in }) { _ in }
    }
  }

  /// Columns taken from the records need the whole answer first, and libxml2 reads a
  /// finished file: neither is read as it downloads.
  @Test func onlyAJSONAnswerWithDeclaredColumnsIsReadInOnePass() throws {
    #expect(try GrowingRecordTests.reader().readsInOnePass)
    var inferred = try GrowingRecordTests.reader()
    inferred.columns = nil
    #expect(!inferred.readsInOnePass)
    let xml = RecordReader(format: .xml, records: .xml(try XMLPath(parsing: "/r/i")), columns: try GrowingRecordTests.reader().columns)
    #expect(!xml.readsInOnePass)
  }
}
