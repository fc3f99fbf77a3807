public import DrayModel
internal import DrayPostgres
public import DrayTarget
internal import Foundation

/// The claims of a run's partitions in `_dray_claims`, and the run keys in `_dray_joins`, in
/// the job's schema (`dray run --join`; docs/partitions.md, "Many runners"). Times are the
/// database's clock (`clock_timestamp()`), in microseconds since 1970, so that runners on
/// machines whose clocks differ agree on when a claim expires.
public final class PostgresClaims {
  let connection: PostgresConnection
  let schema: String

  /// The tables, created when missing; `fingerprint` added to a `_dray_claims` made before it.
  static let tables = [
    PostgresStore.createStatement(Bookkeeping.claims), PostgresStore.createStatement(Bookkeeping.joins),
    "ALTER TABLE IF EXISTS _dray_claims ADD COLUMN IF NOT EXISTS fingerprint text",
  ].joined(separator: ";\n")

  /// The transaction-level advisory lock under which a claimed partition's commit creates or
  /// widens a table (`PostgresStore.lockDefinitions`), over every runner of the run.
  static func writeKey(job: String, schema: String) -> Int64 { PostgresRunLock.key(job: "\u{0}writes\u{0}" + job, schema: schema) }

  /// The database's clock, in microseconds since 1970.
  static let now = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

  /// Connects to `target` and creates the tables when missing.
  /// - Throws: `PostgresError`.
  public init(target: PostgresTarget, cancellation: Cancellation) throws {
    connection = try PostgresConnection(
      url: target.url, password: target.password, timeouts: target.timeouts, answers: .idle, cancellation: cancellation)
    schema = target.schema
    try PostgresStore.prepare(connection, schema: schema, tables: PostgresClaims.tables)
  }

  private var claims: String { PostgresIdentifier.quoted(schema) + "._dray_claims" }
  private var runs: String { PostgresIdentifier.quoted(schema) + "._dray_runs" }

  /// The partition as stored: a JSON array of `[name, value]` pairs.
  static func encode(_ partition: Partition) -> String {
    let pairs = partition.values.map { [$0.name, $0.value] }
    let data = (try? JSONSerialization.data(withJSONObject: pairs, options: [.sortedKeys])) ?? Data("[]".utf8)
    return String(decoding: data, as: UTF8.self)
  }

  static func decode(_ text: String) -> Partition {
    let pairs = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String]] ?? []
    return Partition(pairs.compactMap { $0.count == 2 ? (name: $0[0], value: $0[1]) : nil })
  }

  /// Checks, inside a commit's transaction, that `claim` is still its owner's and unexpired,
  /// and that its run is still `running`, and extends the claim by its lease.
  ///
  /// The run's row in `_dray_runs` is locked `FOR SHARE` and the claim's row by the update,
  /// both until the commit: no runner claims the partition meanwhile, and a runner taking
  /// the run lock over (`PostgresJournal.begin`, which marks the dead holder's run
  /// `abandoned`) waits for the commits in flight, so that once it has marked the run, every
  /// commit of that run's partitions either came before (and the new run, reading the
  /// checkpoints afterwards, skips the partition) or commits nothing. Without it, a joined
  /// runner could commit a partition between the new holder's reading of the checkpoints
  /// and its opening of the partitions anew, and the partition would be loaded twice.
  /// - Throws: `PartitionClaimLost` when it is not; `PostgresError`.
  static func check(_ claim: PartitionClaim, on connection: PostgresConnection, schema: String) throws {
    let running = try connection.execute(
      "SELECT 1 FROM \(PostgresIdentifier.quoted(schema))._dray_runs WHERE run_id = $1 AND status = 'running' FOR SHARE",
      [.text(claim.runID)]
    ).rows
    if running.isEmpty { throw PartitionClaimLost(memberID: claim.memberID) }
    let held = try connection.execute(
      """
      UPDATE \(PostgresIdentifier.quoted(schema))._dray_claims SET expires_us = \(now) + $5
      WHERE job = $1 AND member_id = $2 AND generation = $3 AND owner = $4 AND state = 'claimed' AND expires_us > \(now)
      RETURNING 1
      """, [.text(claim.job), .text(claim.memberID), .integer(claim.generation), .text(claim.owner), .integer(claim.leaseMicroseconds)]
    ).rows
    if held.isEmpty { throw PartitionClaimLost(memberID: claim.memberID) }
  }
}

@available(*, unavailable)
extension PostgresClaims: Sendable {}

extension PostgresClaims: PartitionClaims {
  public func publish(
    job: String, runID: String, stepID: String, fingerprint: String, members: [(id: String, partition: Partition)]
  ) throws {
    try connection.transaction {
      for (ordinal, member) in members.enumerated() {
        try connection.execute(
          """
          INSERT INTO \(claims)
            (job, member_id, run_id, step_id, ordinal, partition, state, owner, generation, expires_us, message, fingerprint)
          VALUES ($1, $2, $3, $4, $5, $6, 'pending', NULL, 0, 0, NULL, $7)
          ON CONFLICT (job, member_id) DO UPDATE SET run_id = excluded.run_id, step_id = excluded.step_id,
            ordinal = excluded.ordinal, partition = excluded.partition, state = 'pending', owner = NULL,
            generation = _dray_claims.generation + 1, expires_us = 0, message = NULL, fingerprint = excluded.fingerprint
          """,
          [
            .text(job), .text(member.id), .text(runID), .text(stepID), .integer(Int64(ordinal)),
            .text(PostgresClaims.encode(member.partition)), .text(fingerprint),
          ])
      }
      // Partitions of the step that an earlier run listed and this one does not.
      try connection.execute(
        "DELETE FROM \(claims) WHERE job = $1 AND step_id = $2 AND run_id <> $3", [.text(job), .text(stepID), .text(runID)])
    }
  }

  public func claim(job: String, runID: String, stepID: String, owner: String, leaseMicroseconds: Int64) throws -> PartitionClaim? {
    let now = PostgresClaims.now
    let row = try connection.execute(
      """
      UPDATE \(claims) c SET state = 'claimed', owner = $4, generation = c.generation + 1, expires_us = \(now) + $5, message = NULL
      WHERE c.job = $1 AND c.member_id = (
        SELECT member_id FROM \(claims)
        WHERE job = $1 AND run_id = $2 AND step_id = $3 AND (state = 'pending' OR (state = 'claimed' AND expires_us <= \(now)))
          AND NOT EXISTS (SELECT 1 FROM \(claims) f WHERE f.job = $1 AND f.run_id = $2 AND f.step_id = $3 AND f.state = 'failed')
          AND EXISTS (SELECT 1 FROM \(runs) r WHERE r.run_id = $2 AND r.status = 'running')
        ORDER BY ordinal LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING member_id, partition, generation
      """, [.text(job), .text(runID), .text(stepID), .text(owner), .integer(leaseMicroseconds)]
    ).named.first
    guard let row, let member = try row["member_id"].text, let generation = try row["generation"].integer else { return nil }
    return PartitionClaim(
      job: job, runID: runID, stepID: stepID, memberID: member, partition: PostgresClaims.decode(try row["partition"].text ?? "[]"),
      owner: owner, generation: generation, leaseMicroseconds: leaseMicroseconds)
  }

  public func renew(_ held: [PartitionClaim]) throws -> [String] {
    var lost: [String] = []
    for claim in held {
      let rows = try connection.execute(
        """
        UPDATE \(claims) SET expires_us = \(PostgresClaims.now) + $5
        WHERE job = $1 AND member_id = $2 AND generation = $3 AND owner = $4 AND state = 'claimed'
          AND expires_us > \(PostgresClaims.now)
        RETURNING 1
        """,
        [.text(claim.job), .text(claim.memberID), .integer(claim.generation), .text(claim.owner), .integer(claim.leaseMicroseconds)]
      ).rows
      if rows.isEmpty { lost.append(claim.memberID) }
    }
    return lost
  }

  @discardableResult
  public func settle(_ claim: PartitionClaim, as state: ClaimState.State, message: String?) throws -> Bool {
    let rows = try connection.execute(
      """
      UPDATE \(claims) SET state = $5, owner = CASE WHEN $5 = 'pending' THEN NULL ELSE owner END, expires_us = 0, message = $6
      WHERE job = $1 AND member_id = $2 AND generation = $3 AND owner = $4 AND state = 'claimed'
      RETURNING 1
      """,
      [
        .text(claim.job), .text(claim.memberID), .integer(claim.generation), .text(claim.owner), .text(state.rawValue),
        message.map { .text($0) } ?? .null,
      ]
    ).rows
    return !rows.isEmpty
  }

  public func holds(_ claim: PartitionClaim) throws -> Bool {
    try !connection.execute(
      "SELECT 1 FROM \(claims) WHERE job = $1 AND member_id = $2 AND generation = $3 AND owner = $4 AND state = 'claimed'",
      [.text(claim.job), .text(claim.memberID), .integer(claim.generation), .text(claim.owner)]
    ).rows.isEmpty
  }

  public func states(job: String, runID: String, stepID: String) throws -> [ClaimState] {
    try connection.execute(
      """
      SELECT member_id, state, owner, message, expires_us <= \(PostgresClaims.now) AS expired FROM \(claims)
      WHERE job = $1 AND run_id = $2 AND step_id = $3 ORDER BY ordinal
      """, [.text(job), .text(runID), .text(stepID)]
    ).named.map { row in
      var state = ClaimState.State(rawValue: try row["state"].text ?? "") ?? .pending
      // An expired claim is anyone's to take.
      if state == .claimed, try row["expired"].bool == true { state = .pending }
      return ClaimState(
        memberID: try row["member_id"].text ?? "", state: state, owner: try row["owner"].text, message: try row["message"].text)
    }
  }

  public func openStep(job: String, runID: String) throws -> (stepID: String, fingerprint: String?)? {
    let now = PostgresClaims.now
    let row = try connection.execute(
      """
      SELECT step_id, fingerprint FROM \(claims) c
      WHERE job = $1 AND run_id = $2 AND (state = 'pending' OR (state = 'claimed' AND expires_us <= \(now)))
        AND NOT EXISTS (SELECT 1 FROM \(claims) f WHERE f.job = $1 AND f.run_id = $2 AND f.step_id = c.step_id AND f.state = 'failed')
        AND EXISTS (SELECT 1 FROM \(runs) r WHERE r.run_id = $2 AND r.status = 'running')
      ORDER BY ordinal LIMIT 1
      """, [.text(job), .text(runID)]
    ).rows.first
    guard let row, let stepID = row[0].text else { return nil }
    return (stepID, row[1].text)
  }

  public func run(job: String, key: String) throws -> (runID: String, exitCode: Int32?)? {
    let row = try connection.execute(
      "SELECT run_id, exit_code FROM \(PostgresIdentifier.quoted(schema))._dray_joins WHERE job = $1 AND run_key = $2",
      [.text(job), .text(key)]
    ).named.first
    guard let row, let runID = try row["run_id"].text else { return nil }
    return (runID, try row["exit_code"].integer.map { Int32(truncatingIfNeeded: $0) })
  }

  public func isShared(job: String, runID: String) throws -> Bool {
    try !connection.execute(
      "SELECT 1 FROM \(PostgresIdentifier.quoted(schema))._dray_joins WHERE job = $1 AND run_id = $2", [.text(job), .text(runID)]
    ).rows.isEmpty
  }

  public func exitCode(job: String, runID: String) throws -> Int32? {
    try connection.execute(
      "SELECT exit_code FROM \(PostgresIdentifier.quoted(schema))._dray_joins WHERE job = $1 AND run_id = $2 AND exit_code IS NOT NULL",
      [.text(job), .text(runID)]
    ).rows.first?.first?.integer.map { Int32(truncatingIfNeeded: $0) }
  }
}
