import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@testable import DraySQLite

/// Journals written by earlier versions open, their runs' flags moved into columns.
@Suite struct JournalTests {
  /// `_dray_runs` as versions before the flag columns wrote it (`options` as text).
  static let runsWithOptions = """
    CREATE TABLE _dray_runs(
      run_id TEXT PRIMARY KEY, lineage TEXT NOT NULL, job TEXT NOT NULL, started_at TEXT NOT NULL,
      ended_at TEXT, status TEXT NOT NULL, manifest_fingerprint TEXT NOT NULL, pid INTEGER NOT NULL,
      options TEXT NOT NULL DEFAULT '');
    """
  static let checkpoints = """
    CREATE TABLE _dray_checkpoints(
      job TEXT NOT NULL, step_id TEXT NOT NULL, run_id TEXT NOT NULL, lineage TEXT NOT NULL,
      fingerprint TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, rows INTEGER NOT NULL,
      bytes INTEGER NOT NULL, outputs TEXT NOT NULL, finished_at TEXT NOT NULL,
      PRIMARY KEY(job, step_id));
    """

  /// A journal of three runs, newest last: a plain run, an `--only` run, a `--fresh --from` run.
  static func oldJournal(in folder: TemporaryDirectory) throws -> String {
    let path = folder.path + "/old.sqlite"
    let database = try Database(path: path)
    try database.execute(runsWithOptions + checkpoints)
    try database.execute(
      """
      INSERT INTO _dray_runs VALUES ('r1', 'r1', 'j', '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z', 'failed', 'f', 1, '');
      INSERT INTO _dray_runs VALUES ('r2', 'r1', 'j', '2026-01-01T00:00:03.000Z', '2026-01-01T00:00:04.000Z', 'succeeded', 'f', 1, '--only b');
      INSERT INTO _dray_runs VALUES ('r3', 'r3', 'j', '2026-01-01T00:00:05.000Z', '2026-01-01T00:00:06.000Z', 'succeeded', 'f', 1, '--fresh --from c');
      """)
    return path
  }

  static let expectedFlags = [RunFlags(fresh: true, from: "c"), RunFlags(only: "b"), RunFlags()]

  @Test func aJournalWithFlagsAsTextIsMigratedWhenARunOpensIt() throws {
    let folder = TemporaryDirectory()
    let path = try JournalTests.oldJournal(in: folder)
    let journal = try Journal(path: path)
    #expect(try journal.runs(job: "j", limit: 10).map(\.flags) == JournalTests.expectedFlags)
    #expect(try journal.lastWholeRun(job: "j")?.id == "r3")
    let columns = try Database(path: path, readOnly: true).rows("SELECT name FROM pragma_table_info('_dray_runs')").map { try $0["name"] }
    #expect(columns.suffix(3) == [.text("fresh"), .text("from_step"), .text("only_step")])
    #expect(!columns.contains(.text("options")))
    // The migrated journal takes new runs with their flags.
    try journal.begin(
      RunRecord(
        id: "r4", lineage: "r4", job: "j", startedAt: "2026-01-01T00:00:07.000Z", endedAt: nil, status: .running,
        manifestFingerprint: "f", processID: 1, flags: RunFlags(only: "a")))
    #expect(try journal.lastRun(job: "j")?.flags == RunFlags(only: "a"))
    #expect(try journal.lastWholeRun(job: "j")?.id == "r3")
  }

  @Test func aJournalWithFlagsAsTextReadsAsItIs() throws {
    let folder = TemporaryDirectory()
    let path = try JournalTests.oldJournal(in: folder)
    let journal = try Journal(readingAt: path)
    #expect(try journal.runs(job: "j", limit: 10).map(\.flags) == JournalTests.expectedFlags)
    #expect(try journal.lastWholeRun(job: "j")?.id == "r3")
    let columns = try Database(path: path, readOnly: true).rows("SELECT name FROM pragma_table_info('_dray_runs')")
    #expect(try columns.last?["name"] == .text("options"))
  }

  @Test func aJournalFromBeforeAnyFlagsOpens() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/older.sqlite"
    let database = try Database(path: path)
    try database.execute(
      JournalTests.runsWithOptions.replacing(",\n  options TEXT NOT NULL DEFAULT ''", with: "") + JournalTests.checkpoints)
    try database.execute(
      "INSERT INTO _dray_runs VALUES ('r1', 'r1', 'j', '2026-01-01T00:00:01.000Z', NULL, 'interrupted', 'f', 1)")
    #expect(try Journal(readingAt: path).lastWholeRun(job: "j")?.status == .interrupted)
    let journal = try Journal(path: path)
    #expect(try journal.lastRun(job: "j")?.flags == RunFlags())
    #expect(try journal.lastRun(job: "j")?.status == .interrupted)
  }

  @Test func aRunStatusThisDrayDoesNotKnowIsRefused() throws {
    let folder = TemporaryDirectory()
    let path = try JournalTests.oldJournal(in: folder)
    try Database(path: path).execute("UPDATE _dray_runs SET status = 'paused' WHERE run_id = 'r2'")
    #expect(throws: JournalError.self) { try Journal(readingAt: path).runs(job: "j", limit: 10) }
    do {
      _ = try Journal(path: path).runs(job: "j", limit: 10)
      Issue.record("a run of status 'paused' was read")
    } catch let error as JournalError {
      #expect(
        error.description
          == "the run journal at \(path) holds a record this dray does not understand (run r2 has status 'paused', expected one of abandoned, failed, interrupted, running, succeeded); it may come from a newer dray. Use that dray, or move the journal aside and run again with --fresh"
      )
    }
  }
}

extension JournalTests {
  /// A journal that cannot be created or written because the disk is full is not damaged:
  /// the advice is to free space, never to restore a backup or start over.
  @Test func aFullDiskMeetingTheJournalSaysToFreeSpaceNotToRestoreIt() {
    let full = SQLiteError(code: 13, message: "database or disk is full", sql: "COMMIT", path: "/data/job.sqlite.new-17")
    let message = JournalError.opening(path: "/data/job.sqlite", full).description
    #expect(
      message
        == "the run journal at /data/job.sqlite cannot be opened (database or disk is full); the disk holding it is full: free space there, then run again"
    )
  }

  /// Journal rows are read by column name: a name the statement does not return throws an
  /// error naming it, not a NULL.
  @Test func aMisspeltColumnNameThrowsNamingIt() throws {
    let folder = TemporaryDirectory()
    let path = try JournalTests.oldJournal(in: folder)
    let database = try Database(path: path, readOnly: true)
    let row = try #require(try database.rows("SELECT run_id, status FROM _dray_runs ORDER BY rowid").first)
    #expect(try row.text("run_id") == "r1")
    let error = #expect(throws: SQLiteError.self) { try row["stauts"] }
    #expect(
      error?.description
        == "SQLite error 21 in \(path): no column named stauts in the result; its columns are run_id, status (in: SELECT run_id, status FROM _dray_runs ORDER BY rowid)"
    )
  }
}
