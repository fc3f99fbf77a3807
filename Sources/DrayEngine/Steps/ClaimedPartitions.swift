internal import DrayModel
internal import DrayTarget
internal import Foundation
internal import Synchronization

/// A runner that shares its run with others (`dray run --join`): `owner` names it in the
/// claims it takes (`_dray_claims.owner`).
struct Joining: Sendable {
  /// `host:pid:random`, unique per runner.
  let owner: String
  /// How long a runner with nothing to claim waits before it looks again.
  static let poll = Duration.milliseconds(200)

  /// The first 8 hexadecimal digits of the SHA-256 of `owner`.
  static func tag(_ owner: String) -> String { String(SHA256.hex(owner).prefix(8)) }

  /// What names one claim's own staging of its partition (`StepRunner.stagingName`) and its
  /// page files: the tag of its owner and generation (`owner#generation`). Each claim stages
  /// apart, so that neither another runner sharing the job folder nor this runner's own
  /// earlier claim on the partition (lost, and perhaps still fetching on another thread)
  /// ever stages into, resumes or publishes its pages.
  static func tag(_ claim: PartitionClaim) -> String { tag(claim.owner + "#" + String(claim.generation)) }

  static func newOwner() -> String {
    "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.lowercased().prefix(8))"
  }
}

extension StepRunner {
  /// The partitioned step's members run through claims, for a run several runners share
  /// (docs/partitions.md, "Many runners"): the lock holder opens `members` that have not
  /// finished (`finished`) for claims (`PartitionClaims.publish`), claims and runs them at
  /// most `concurrency` at once beside the joined runners, and returns once every partition
  /// is `done` or `failed` (or, after a failure, none is claimed any more).
  /// - Returns: one report per member, in order: the ones this runner ran, `skipped` for
  ///   those finished before, `succeeded` (with the checkpoint's rows) for those another
  ///   runner finished, `failed` with its message, `not_run` for the rest.
  func runClaimed(
    _ members: [Step], _ list: [Partition], partitions: Partitions, gathered: String?, finished checkpoints: [CheckpointRecord],
    joining: Joining
  ) throws -> [StepReport] {
    let finishedByID = Dictionary(checkpoints.map { ($0.stepID, $0) }) { first, _ in first }
    var reports: [String: StepReport] = [:]
    var open: [(id: String, partition: Partition)] = []
    for (index, member) in members.enumerated() {
      if let skipped = skippedReport(member, list[index], finished: finishedByID[member.id]) {
        reports[member.id] = skipped
      } else {
        open.append((member.id, list[index]))
      }
    }
    guard let claims = try context.database.openClaims(cancellation: context.cancellation) else {
      throw StepError.settingMissing("this database cannot share a run between runners (dray run --join needs PostgreSQL)")
    }
    try claims.publish(
      job: manifest.job, runID: context.runID, stepID: step.id, fingerprint: step.definitionDigest, members: open)
    console.info("\(HumanUnits.counted(open.count, "partition")) open for claims by the runners of this run", step: step.id)
    let progress = PartitionProgress(total: open.count, console: console, step: step.id)
    reports.merge(workClaims(partitions, gathered: gathered, joining: joining, untilSettled: true, progress: progress)) { $1 }
    // After a failure this runner's threads stop at once; the claims the other runners hold
    // end first (committed or given up: an expired one counts as ended), so that the run
    // ends after them and what they commit is in the run.
    while !context.cancellation.isCancelled,
      try claims.states(job: manifest.job, runID: context.runID, stepID: step.id).contains(where: { $0.state == .claimed })
    {
      Thread.sleep(forTimeInterval: Joining.poll.seconds)
    }
    let states = Dictionary(
      try claims.states(job: manifest.job, runID: context.runID, stepID: step.id).map { ($0.memberID, $0) }
    ) { first, _ in first }
    let done = states.values.filter { $0.state == .done }.count
    let own = states.values.filter { $0.state == .done && $0.owner == joining.owner }.count
    console.info(
      "partitions \(done)/\(open.count) done by the runners of this run (\(own) by this one)"
        + (members.count > open.count ? "; \(members.count - open.count) finished before" : ""), step: step.id)
    let stopped = context.cancellation.isCancelled ? "the run was interrupted" : "a partition failed for good, so no more were started"
    return try members.enumerated().map { index, member in
      if var own = reports[member.id] {
        own.partition = list[index]
        return own
      }
      var other = StepReport(id: member.id, kind: member.kindName, status: .notRun)
      other.partition = list[index]
      switch states[member.id]?.state {
      case .done?:
        other.status = .succeeded
        let checkpoint = try context.journal.withLock { try $0.checkpoint(job: manifest.job, stepID: member.id) }
        other.records = checkpoint?.rows
        other.notes = ["run by another runner of this run (\(states[member.id]?.owner ?? "unknown"))"]
      case .failed?:
        other.status = .failed
        let parts = (states[member.id]?.message ?? "").split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
        other.errorCode = parts.count == 2 && !parts[0].isEmpty ? String(parts[0]) : nil
        other.errorMessage =
          "in another runner of this run (\(states[member.id]?.owner ?? "unknown")): " + (parts.last.map(String.init) ?? "")
      default:
        other.skipReason = stopped
      }
      return other
    }
  }

  /// Claims and runs partitions of this step on `concurrency` threads until none is left to
  /// claim (`untilSettled`: until every partition is `done` or `failed`, taking over the
  /// claims that expire meanwhile). A renewing thread extends this runner's live claims every
  /// third of the lease. A partition whose claim ran out is dropped, not failed.
  /// - Returns: the reports of the partitions this runner ran, by member id.
  func workClaims(_ partitions: Partitions, gathered: String?, joining: Joining, untilSettled: Bool, progress: PartitionProgress?)
    -> [String: StepReport]
  {
    let results = Mutex<[String: StepReport]>([:])
    let live = Mutex<[String: PartitionClaim]>([:])
    let failed = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let lease = Int64(partitions.lease.components.seconds) * 1_000_000 + partitions.lease.components.attoseconds / 1_000_000_000_000
    let done = DispatchGroup()
    let job = manifest.job
    let runID = context.runID
    let stepID = step.id
    for _ in 0..<max(1, partitions.concurrency) {
      done.enter()
      let thread = Thread { [self] in
        defer { done.leave() }
        let claims: any PartitionClaims
        do {
          guard let opened = try context.database.openClaims(cancellation: context.cancellation) else { return }
          claims = opened
        } catch {
          console.warn("cannot reach the partitions' claims: \(context.database.failure(error)?.message ?? "\(error)")", step: stepID)
          return
        }
        while !context.cancellation.isCancelled && !failed.load(ordering: .relaxed) {
          let claim: PartitionClaim?
          do {
            claim = try claims.claim(job: job, runID: runID, stepID: stepID, owner: joining.owner, leaseMicroseconds: lease)
            if claim == nil {
              let states = try claims.states(job: job, runID: runID, stepID: stepID)
              let settled = states.allSatisfy { $0.state == .done || $0.state == .failed }
              let someFailed = states.contains { $0.state == .failed }
              if !untilSettled || settled || (someFailed && !states.contains { $0.state == .claimed }) { return }
              Thread.sleep(forTimeInterval: Joining.poll.seconds)
              continue
            }
          } catch {
            console.warn("cannot claim a partition: \(context.database.failure(error)?.message ?? "\(error)")", step: stepID)
            return
          }
          guard let claim else { continue }
          let report = runClaim(claim, claims: claims, gathered: gathered, live: live)
          if report?.status == .failed { failed.store(true, ordering: .relaxed) }
          if let report {
            results.withLock { $0[claim.memberID] = report }
            progress?.finished(report)
          }
        }
      }
      thread.stackSize = 4 << 20
      thread.start()
    }
    let renewer = Thread { [self] in
      guard let claims = try? context.database.openClaims(cancellation: context.cancellation) else { return }
      let every = max(0.05, Double(lease) / 3_000_000)
      while !stop.load(ordering: .relaxed) {
        // In short naps, so that the thread (and its connection) ends with the step.
        let wake = ContinuousClock.now + .milliseconds(Int(every * 1000))
        while !stop.load(ordering: .relaxed) && ContinuousClock.now < wake { Thread.sleep(forTimeInterval: 0.05) }
        if stop.load(ordering: .relaxed) { return }
        let held = Array(live.withLock { $0.values })
        if let lost = try? claims.renew(held) {
          for member in lost { console.warn("the claim on \(member) ran out before this runner renewed it", step: stepID) }
        }
      }
    }
    renewer.start()
    done.wait()
    stop.store(true, ordering: .relaxed)
    return results.withLock { $0 }
  }

  /// Runs the partition `claim` holds and settles the claim: `done`, `failed`, or back to
  /// `pending` when interrupted. Nil when the claim ran out (the partition is another
  /// runner's now: nothing to report here).
  private func runClaim(
    _ claim: PartitionClaim, claims: any PartitionClaims, gathered: String?, live: borrowing Mutex<[String: PartitionClaim]>
  ) -> StepReport? {
    live.withLock { $0[claim.memberID] = claim }
    defer { live.withLock { _ = $0.removeValue(forKey: claim.memberID) } }
    // A runner killed after its partition committed, before it settled the claim.
    if let checkpoint = try? context.journal.withLock({ try $0.checkpoint(job: manifest.job, stepID: claim.memberID) }),
      checkpoint.status == .succeeded, checkpoint.runID == context.runID
    {
      _ = try? claims.settle(claim, as: .done, message: nil)
      var skipped = StepReport(id: claim.memberID, kind: step.kindName, status: .skipped)
      skipped.partition = claim.partition
      skipped.skipReason = "finished in run \(checkpoint.runID)"
      skipped.records = checkpoint.rows
      return skipped
    }
    var report: StepReport
    var member: StepRunner?
    do {
      var runner = StepRunner(
        context: context, step: try memberStep(for: claim.partition, gatheringInto: gathered), inGroup: true, partition: claim.partition)
      runner.claim = claim
      member = runner
      report = runner.run()
    } catch {
      report = StepReport(id: claim.memberID, kind: step.kindName, status: .failed)
      report.errorCode = (error as? PartitionError)?.code
      report.errorMessage = "\(error)"
    }
    // A claim that did not publish leaves nothing staged: no later claim resumes its pages
    // (each stages under a name of its own), so they would only be left behind.
    if report.status != .succeeded && report.status != .skipped { member?.dropClaimStaging() }
    report.partition = claim.partition
    do {
      switch report.status {
      case .succeeded, .skipped:
        try claims.settle(claim, as: .done, message: nil)
      case .failed:
        // Lost at its commit (taken over, or its run no longer running): another runner's, or
        // the next run's, not a failure of the partition.
        guard report.errorCode != "claim_lost", try claims.holds(claim) else {
          console.warn("dropped: \(PartitionClaimLost(memberID: claim.memberID))", step: claim.memberID)
          return nil
        }
        // Its code and message, for the holder's report (`runClaimed`).
        try claims.settle(claim, as: .failed, message: (report.errorCode ?? "") + "\u{1F}" + (report.errorMessage ?? ""))
      default:
        try claims.settle(claim, as: .pending, message: nil)
      }
    } catch {
      console.warn("cannot settle the claim: \(context.database.failure(error)?.message ?? "\(error)")", step: claim.memberID)
    }
    return report
  }

  /// Drops what this claimed partition staged (`stagingName`: its staging tables and page
  /// ledger) once its claim ended without publishing (lost, failed or interrupted): the next
  /// claim of the partition, by whichever runner, stages under its own name and fetches the
  /// partition from its start. Best effort, even after an interruption; what it cannot drop
  /// stays behind unused.
  func dropClaimStaging() {
    guard claim != nil, case .http(let options) = step.kind, options.load != nil || options.paginate != nil,
      let staging = try? context.database.openStaging(records: options.load != nil, cancellation: Cancellation())
    else { return }
    let (job, name) = (manifest.job, stagingName)
    try? context.databaseWrites.withLock { _ in
      try staging.write { transaction in
        try transaction.dropTable(RecordTableNames.staging(job: job, step: name))
        try transaction.dropTable(Quarantine.staging(job: job, step: name))
        try transaction.clearPages(job: job, stepID: name)
      }
    }
  }

  /// A joined runner's part in this partitioned step of the run it follows: claims and runs
  /// partitions until none is left to claim.
  /// - Returns: how many partitions this runner ran.
  func joinPartitions(_ partitions: Partitions, joining: Joining) -> Int {
    let load: HTTPStep.Load? = if case .http(let h) = step.kind { h.load } else { nil }
    let gathered = load?.write == .replace ? PartitionIDs.gathered(job: manifest.job, step: step.id) : nil
    return workClaims(partitions, gathered: gathered, joining: joining, untilSettled: false, progress: nil).count
  }
}
