internal import DrayJSON
internal import DrayModel
internal import DrayStore
internal import Foundation

extension StepRunner {
  /// `sql`: renders `{{ table ... }}` references and runs the statements in one
  /// transaction with the step's checkpoint.
  func runSQL(_ options: SQLStep, _ report: inout StepReport) throws {
    let store = try openStore()
    let sql = try render(options.sql, store: store)
    var statements: [(sql: String, changes: Int)] = []
    let finished = report
    try context.databaseWrites.withLock { _ in
      try store.database.transaction {
        statements = []
        do {
          // A COMMIT in the step's SQL would commit its first statements without the
          // checkpoint, and a rerun would repeat them. Writes to dray's own tables (the
          // journal among them) are refused too.
          try store.database.refusingTransactionControl {
            try store.database.forEachStatement(sql) { (statement) throws(SQLiteError) in
              while try statement.step() {}
              statements.append((statement.sql, store.database.changes))
            }
            // A trigger that would change dray's tables would do so when dray itself
            // writes its table (a load), where no authorizer looks.
            try store.database.checkTriggers()
          }
        } catch let error as SQLiteError where error.isRefusedTransactionControl {
          throw StepError.transactionControl(statement: (error.sql ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "; \n\t")))
        } catch let error as SQLiteError where error.refusedOwnTable != nil {
          throw StepError.ownTable(
            error.refusedOwnTable!, statement: (error.sql ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "; \n\t")),
            trigger: error.refusedInTrigger)
        }
        var done = finished
        done.statements = statements
        try Journal.record(checkpoint(done, status: .succeeded), in: store.database)
        CrashPoint.reach("before-commit:\(step.id)")
      }
    }
    report.statements = statements
  }

  /// The SQL with each `{{ table "R" "T" [params] }}` replaced by the quoted physical name.
  /// - Throws: `StepError.tableNotLoaded` when the table does not exist.
  func render(_ sql: String, store: Store) throws -> String {
    let template = try SQLTemplate(parsing: sql)
    return try template.render { reference in
      let params = try reference.paramsJSON.map { try JSONValue(parsing: $0) } ?? .object([])
      let name = Store.tableName(resource: reference.resource, table: reference.table, params: params)
      guard try store.database.tableExists(name) else {
        throw StepError.tableNotLoaded(resource: reference.resource, table: reference.table, physical: name)
      }
      return Database.quote(name)
    }
  }
}
