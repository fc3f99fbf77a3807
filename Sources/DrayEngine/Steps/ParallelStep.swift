internal import DrayModel
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// `parallel`: runs the group's steps on their own threads, at most `max` at once (the
  /// SDK's asynchronous calls). Each member keeps its own checkpoint; the group fails when
  /// any member fails, after the running members finish. The group's report sums its
  /// members' bytes, rows, tables and outputs; their attempts stay with each member. Every
  /// member is in the report, in file order: one a signal kept from starting as `not_run`.
  func runParallel(_ group: ParallelStep, _ report: inout StepReport) throws {
    let results = Mutex<[Int: StepReport]>([:])
    let slots = DispatchSemaphore(value: group.max)
    var threads: [Thread] = []
    let done = DispatchGroup()
    for (index, member) in group.steps.enumerated() {
      if let reason = context.skipReasons[member.id] {
        var skipped = StepReport(id: member.id, kind: member.kindName, status: .skipped)
        skipped.skipReason = reason
        results.withLock { $0[index] = skipped }
        continue
      }
      slots.wait()
      if context.cancellation.isCancelled {
        slots.signal()
        break
      }
      done.enter()
      let runner = StepRunner(context: context, step: member, inGroup: true)
      let thread = Thread {
        let memberReport = runner.run()
        results.withLock { $0[index] = memberReport }
        slots.signal()
        done.leave()
      }
      thread.stackSize = 4 << 20
      threads.append(thread)
      thread.start()
    }
    done.wait()
    let reports = results.withLock { $0 }
    report.notes = group.steps.enumerated().map { index, member in
      "\(member.id): \(reports[index]?.status.rawValue ?? RunStatus.notRun.rawValue)"
    }
    for index in group.steps.indices {
      guard let member = reports[index] else { continue }
      report.bytes += member.bytes
      report.wireBytes += member.wireBytes
      report.rows.merge(member.rows) { $1 }
      report.tables += member.tables
      report.outputs += member.outputs
    }
    // Members a signal kept from starting are reported too, as top-level steps are.
    report.members = group.steps.enumerated().map { index, member in
      reports[index]
        ?? {
          var notRun = StepReport(id: member.id, kind: member.kindName, status: .notRun)
          notRun.skipReason = "the run was interrupted"
          return notRun
        }()
    }
    let failed = reports.values.filter { $0.status == .failed }.map(\.id).sorted()
    if !failed.isEmpty { throw StepError.groupFailed(members: failed) }
    if context.cancellation.isCancelled { throw StepError.interrupted }
    try recordCheckpoint(report, status: .succeeded)
  }
}
