import DrayModel
import DrayPostgres
import DrayPostgresStore
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// The claims of a shared run's partitions on a real PostgreSQL server (`PostgresClaims`;
/// docs/partitions.md, "Many runners"): two runners never get one partition, an expired
/// claim is anyone's, a commit checks its claim's generation and expiry in its own
/// transaction, a failure stops the claiming, and a run that is no longer `running` hands
/// nothing out and commits nothing, even a commit in flight when another runner takes the
/// run over. Expiry is decided by the database's clock: a lease of 1 µs has passed by the
/// next statement, a lease of an hour has not (no sleeping).
@Suite struct PartitionClaimsTests {
  let folder = TemporaryDirectory()

  struct Fixture {
    let target: TargetDatabase
    let url: PostgresURL
    let claims: PostgresClaims
    let other: PostgresClaims

    init(_ folder: String) throws {
      target = try TargetDatabase(.postgres, folder: folder)
      url = try PostgresURL(try #require(target.url))
      claims = try PostgresClaims(target: PostgresTarget(url: url), cancellation: Cancellation())
      other = try PostgresClaims(target: PostgresTarget(url: url), cancellation: Cancellation())
      // The claims hand out the partitions of a run recorded `running`.
      _ = try PostgresJournal(target: PostgresTarget(url: url), cancellation: Cancellation())
      try target.execute(
        """
        INSERT INTO _dray_runs(run_id, lineage, job, started_at, status, manifest_fingerprint, pid, fresh)
        VALUES ('r1', 'r1', 'fan', '2026-12-03T00:00:00Z', 'running', 'f', 1, 0)
        """)
      try claims.publish(
        job: "fan", runID: "r1", stepID: "issues", fingerprint: "f1",
        members: (1...3).map { (id: "issues[repo=\($0)]", partition: Partition([(name: "repo", value: "\($0)")])) })
    }

    func claim(_ claims: PostgresClaims, owner: String, lease: Int64 = 3_600_000_000) throws -> PartitionClaim? {
      try claims.claim(job: "fan", runID: "r1", stepID: "issues", owner: owner, leaseMicroseconds: lease)
    }

    /// A commit of one row under `claim`, as a partition's publish does.
    func commit(_ claim: PartitionClaim, value: Int) throws {
      let store = try PostgresStore(target: PostgresTarget(url: url), claim: claim)
      try store.write { _ in try store.connection.execute("INSERT INTO parts VALUES ($1)", [.integer(Int64(value))]) }
    }
  }

  @Test func twoRunnersNeverGetOnePartitionAndTheyComeInOrder() throws {
    let fixture = try Fixture(folder.path)
    let a = try #require(try fixture.claim(fixture.claims, owner: "a"))
    let b = try #require(try fixture.claim(fixture.other, owner: "b"))
    let c = try #require(try fixture.claim(fixture.claims, owner: "a"))
    #expect([a.memberID, b.memberID, c.memberID] == ["issues[repo=1]", "issues[repo=2]", "issues[repo=3]"])
    #expect(b.partition == Partition([(name: "repo", value: "2")]))
    #expect(try fixture.claim(fixture.other, owner: "b") == nil)
    #expect(try fixture.claims.openStep(job: "fan", runID: "r1")?.stepID == nil)
    #expect(try fixture.claims.settle(a, as: .done, message: nil))
    #expect(try fixture.claims.states(job: "fan", runID: "r1", stepID: "issues").map(\.state) == [.done, .claimed, .claimed])
  }

  @Test func anExpiredClaimIsTakenOverAndItsOwnerCommitsNothing() throws {
    let fixture = try Fixture(folder.path)
    try fixture.target.execute("CREATE TABLE parts (v bigint)")
    let stale = try #require(try fixture.claim(fixture.claims, owner: "a", lease: 1))
    // Expired by the database's clock: renewing it fails, and another runner takes it.
    #expect(try fixture.claims.renew([stale]) == [stale.memberID])
    let taken = try #require(try fixture.claim(fixture.other, owner: "b"))
    #expect(taken.memberID == stale.memberID)
    #expect(taken.generation == stale.generation + 1)
    do {
      try fixture.commit(stale, value: 1)
      Issue.record("a commit under an expired claim taken over went through")
    } catch let lost as PartitionClaimLost {
      #expect(lost.memberID == stale.memberID)
    }
    #expect(try !fixture.claims.holds(stale))
    #expect(try !fixture.claims.settle(stale, as: .failed, message: "late"))
    try fixture.commit(taken, value: 2)
    #expect(try fixture.target.rows("SELECT v FROM parts") == [["2"]])
    #expect(try fixture.other.renew([taken]) == [])
  }

  @Test func aFailedPartitionAndAnEndedRunHandOutNoMore() throws {
    let fixture = try Fixture(folder.path)
    let first = try #require(try fixture.claim(fixture.claims, owner: "a"))
    #expect(try fixture.claims.settle(first, as: .failed, message: "http_404\u{1F}gone"))
    #expect(try fixture.claim(fixture.other, owner: "b") == nil)
    #expect(try fixture.claims.openStep(job: "fan", runID: "r1")?.stepID == nil)
    #expect(try fixture.claims.states(job: "fan", runID: "r1", stepID: "issues").first?.message == "http_404\u{1F}gone")
    // Opened again (a run carrying the chain on): a new generation for every partition.
    try fixture.claims.publish(
      job: "fan", runID: "r1", stepID: "issues", fingerprint: "f2",
      members: [(id: "issues[repo=1]", partition: Partition([(name: "repo", value: "1")]))])
    let open = try fixture.claims.openStep(job: "fan", runID: "r1")
    #expect(open?.stepID == "issues" && open?.fingerprint == "f2")
    try fixture.target.execute("UPDATE _dray_runs SET status = 'abandoned'")
    #expect(try fixture.claim(fixture.other, owner: "b") == nil)
    #expect(try fixture.claims.openStep(job: "fan", runID: "r1")?.stepID == nil)
  }

  /// The holder died and another runner took the run over (`PostgresJournal.begin` marks
  /// its run `abandoned`): a joined runner's claim of that run, still live by its lease and
  /// generation, commits nothing. Otherwise it could commit a partition after the new holder
  /// read the checkpoints and before it opened the partitions anew: loaded twice.
  @Test func aClaimOfARunTakenOverCommitsNothing() throws {
    let fixture = try Fixture(folder.path)
    try fixture.target.execute("CREATE TABLE parts (v bigint)")
    let live = try #require(try fixture.claim(fixture.claims, owner: "a"))
    try fixture.target.execute("UPDATE _dray_runs SET status = 'abandoned' WHERE run_id = 'r1'")
    #expect(throws: PartitionClaimLost.self) { try fixture.commit(live, value: 1) }
    #expect(try fixture.target.rows("SELECT count(*) FROM parts") == [["0"]])
  }

  /// A commit that checks its claim while the takeover's transaction marks the run
  /// `abandoned` waits for it (the run's row is locked `FOR SHARE`), reads the run anew and
  /// commits nothing: the takeover and a commit of the old run never interleave.
  @Test func aCommitRacingTheTakeoverWaitsForItAndCommitsNothing() throws {
    let fixture = try Fixture(folder.path)
    try fixture.target.execute("CREATE TABLE parts (v bigint)")
    let live = try #require(try fixture.claim(fixture.claims, owner: "a"))
    let target = PostgresTarget(url: fixture.url)
    let takeover = try PostgresConnection(url: target.url, password: target.password, timeouts: target.timeouts)
    try takeover.execute("BEGIN")
    try takeover.execute("UPDATE _dray_runs SET status = 'abandoned' WHERE run_id = 'r1'")
    final class Outcome: @unchecked Sendable {
      var error: (any Error)?
      let done = DispatchSemaphore(value: 0)
    }
    let outcome = Outcome()
    let url = fixture.url
    let committing = Thread {
      do {
        let store = try PostgresStore(target: PostgresTarget(url: url), claim: live)
        _ = try store.write { _ in try store.connection.execute("INSERT INTO parts VALUES (1)") }
      } catch {
        outcome.error = error
      }
      outcome.done.signal()
    }
    committing.start()
    // The commit waits on the run's row, held by the takeover (a condition, polled).
    var waiting = false
    for _ in 0..<4000 where !waiting {
      waiting =
        try fixture.target.rows(
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'") == [["1"]]
      if !waiting { usleep(5_000) }
    }
    #expect(waiting, "the commit did not wait for the takeover's transaction")
    try takeover.execute("COMMIT")
    outcome.done.wait()
    #expect(outcome.error is PartitionClaimLost, "\(String(describing: outcome.error))")
    #expect(try fixture.target.rows("SELECT count(*) FROM parts") == [["0"]])
  }
}
