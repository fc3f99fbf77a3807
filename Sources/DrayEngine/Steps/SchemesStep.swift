internal import DrayModel
internal import DrayPlatform
internal import DrayTarget
internal import DrayTransport

extension StepRunner {
  /// `schemes`: fetches the resource schemes and creates one table per output table (the
  /// SDK's `resources`), recording the checkpoint in the same transaction.
  func runSchemes(_ options: SchemesStep, _ report: inout StepReport) throws {
    let client = try platformClient()
    var attempts: [Attempt] = []
    // Also when the call fails: its attempts are the report's account of why.
    defer { report.attempts = attempts }
    var schemes = try client.schemes(
      policy: step.retry,
      record: {
        attempts.append($0); logAttempt($0)
      })
    if let wanted = options.resources {
      let available = schemes.map(\.name)
      for name in wanted where !available.contains(name) {
        throw StepError.resourceNotFound(resource: name, available: available)
      }
      schemes = schemes.filter { wanted.contains($0.name) }
    }
    let store = try openStore()
    var tables: [String] = []
    var finished = report
    finished.attempts = attempts
    try context.databaseWrites.withLock { _ in
      try store.write { transaction in
        for scheme in schemes {
          tables += try transaction.createTables(for: scheme, params: .object([])).values.sorted()
        }
        var done = finished
        done.tables = tables
        try transaction.record(checkpoint(done, status: .succeeded))
        CrashPoint.reach("before-commit:\(step.id)")
      }
    }
    report.tables = tables
  }
}
