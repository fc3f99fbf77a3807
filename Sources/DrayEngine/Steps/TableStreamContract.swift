internal import DrayModel
internal import DrayTarget

extension StepRunner {
  /// The quarantine of a `table_stream` load under `load.contract` (docs/steps.md, "Scheme
  /// drift"), in the load's transaction: checks `load.quarantine`'s bounds and appends the
  /// rows `drift` set aside or trimmed to the quarantine table (`<first table>_rejected`
  /// unless named; the columns of `Quarantine.columns`), so that they commit with the load.
  /// - Returns: the report's `contract`.
  /// - Throws: `HTTPStepError.quarantineFull` past a bound; `HTTPStepError.badAnswer` when a
  ///   table of the quarantine's name is not a quarantine; the store's errors.
  func quarantine(
    _ drift: SchemeDrift, _ options: TableStreamStep, _ scheme: ResourceScheme, _ result: LoadResult,
    in transaction: any StoreTransaction, store: any TargetStore
  ) throws -> ContractReport {
    let name = quarantineName(options, scheme, store: store)
    let counts = drift.counts
    let read = result.inserted.values.reduce(0, +) + counts.setAside
    let report = ContractReport(
      quarantine: name, loaded: read - counts.setAside, setAside: counts.setAside, trimmed: counts.trimmed, byKind: counts.byKind,
      changes: drift.changes)
    guard counts.total > 0 else { return report }
    // The bounds count per step: a partition with what its step's partitions published
    // before it in this run (under `databaseWrites`, as the load is).
    let prior = partitionedStepID.flatMap { id in context.quarantined.withLock { $0[id] } } ?? (0, 0)
    let total = counts.total + prior.total
    let records = read + prior.records
    if let passed = options.quarantine.passedBound(total: total, of: records, unit: "row") {
      let across = partitionedStepID.map { " across the partitions of step \($0)" } ?? ""
      throw HTTPStepError.quarantineFull(
        "\(total) of \(HumanUnits.counted(records, "row")) did not fit the tables (\(counts.summary)), more than \(passed)\(across); "
          + "nothing was published, and the next run asks for the answer again. Fix the scheme or the tables, or raise the bound")
    }
    // Checked at run start where the name was known then (`Quarantine.clash`); here for one
    // derived from a scheme first fetched in this run, or a partition's own tables.
    let existing = try transaction.columnTypes(ofTable: name).map(\.name)
    if let refusal = Quarantine.refusal(
      step: partitionedStepID ?? step.id, table: name, columns: existing, outcome: "nothing of this step was published")
    {
      throw HTTPStepError.badAnswer(page: nil, url: options.resource, message: refusal)
    }
    let columns = Quarantine.columns.map { (name: $0, type: ColumnType?.some(.text)) }
    _ = try transaction.addMissingColumns(columns, toTable: name)
    let staging = "_dray_platform_rejected"
    let url = storedURL(try platformClient().session.url("rpc/\(options.resource)/"))
    try transaction.stage(staging, columns: columns, for: name) { add in
      for row in drift.noted {
        try add([
          .text(context.runID), .text(partitionedStepID ?? step.id), partitionedStepID == nil ? .null : .text(step.id), .text(url),
          .text(row.record), .text(row.reason), .text(row.kind), .text(row.action),
        ])
      }
    }
    _ = try transaction.append(from: staging, into: name, columns: Quarantine.columns)
    return report
  }
}

extension StepRunner {
  /// The quarantine of a `table_stream` load: `load.quarantine`'s table, else
  /// `<first output table>_rejected`, fitted to the store's names.
  func quarantineName(_ options: TableStreamStep, _ scheme: ResourceScheme, store: any TargetStore) -> String {
    let first = scheme.outputs.first.map { store.naming.physicalName(resource: scheme.name, table: $0.name, params: options.params) }
    return store.naming.quarantine(of: first ?? scheme.name, named: options.quarantine.table)
  }
}

extension SchemeDrift {
  /// What the last reshaping set aside and trimmed.
  var counts: Quarantine.Counts {
    var counts = Quarantine.Counts()
    for row in noted {
      if row.action == Quarantine.trimmed { counts.trimmed += 1 } else { counts.setAside += 1 }
      counts.byKind[row.kind, default: 0] += 1
    }
    return counts
  }
}
