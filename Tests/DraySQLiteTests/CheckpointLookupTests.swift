import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@testable import DraySQLite

/// A step's checkpoint is read by its key: every step and every partition of a fan-out asks
/// for its own, so the answer must not depend on (nor cost) the rest of the journal, which
/// holds one checkpoint per partition that ever ran.
@Suite struct CheckpointLookupTests {
  @Test func aStepsCheckpointIsReadByItsKeyAlone() throws {
    let folder = TemporaryDirectory()
    let path = try JournalTests.oldJournal(in: folder)
    let database = try Database(path: path)
    try database.execute(
      """
      INSERT INTO _dray_checkpoints VALUES ('j', 'issues[repo=1]', 'r1', 'r1', 'f', 'succeeded', 1, 250, 900, '', '2026-01-01T00:00:02.000Z');
      INSERT INTO _dray_checkpoints VALUES ('j', 'issues[repo=2]', 'r1', 'r1', 'f', 'half-done', 1, 0, 0, '', '2026-01-01T00:00:02.000Z');
      """)
    let journal = try Journal(readingAt: path)
    // Reading the whole journal meets the record of a status dray does not know...
    #expect(throws: JournalError.self) { try journal.checkpoints(job: "j") }
    // ...which a lookup of another step never reads.
    let found = try #require(try journal.checkpoint(job: "j", stepID: "issues[repo=1]"))
    #expect(found.rows == 250 && found.status == .succeeded)
    #expect(try journal.checkpoint(job: "j", stepID: "issues[repo=3]") == nil)
    #expect(throws: JournalError.self) { try journal.checkpoint(job: "j", stepID: "issues[repo=2]") }
  }
}
