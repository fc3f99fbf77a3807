public import DrayModel

/// The options of a step of one kind, or nil for a step of another, so that a test says
/// `let sql = try #require(step.kind.sql)` and fails (instead of passing silently) when the
/// kind is wrong.
extension StepKind {
  public var schemes: SchemesStep? { if case .schemes(let options) = self { options } else { nil } }
  public var tableStream: TableStreamStep? { if case .tableStream(let options) = self { options } else { nil } }
  public var table: TableStep? { if case .table(let options) = self { options } else { nil } }
  public var request: RequestStep? { if case .request(let options) = self { options } else { nil } }
  public var files: FilesStep? { if case .files(let options) = self { options } else { nil } }
  public var sql: SQLStep? { if case .sql(let options) = self { options } else { nil } }
  public var query: QueryStep? { if case .query(let options) = self { options } else { nil } }
  public var parallel: ParallelStep? { if case .parallel(let options) = self { options } else { nil } }
  public var http: HTTPStep? { if case .http(let options) = self { options } else { nil } }
}
