public import DrayModel

/// Reads an answer file in its format: records for a table, and single values (a next link,
/// a cursor) for pagination.
public struct RecordReader {
  public var format: AnswerFormat
  public var records: RecordSelector?
  public var columns: [HTTPStep.Column]?
  public var probes: [RecordSelector]
  /// With `columns`: refuse a JSON record holding a field they do not name.
  public var refusingExtra: Bool

  /// - Parameters:
  ///   - records: where the records are; nil to read only the probes.
  ///   - columns: declared columns, or nil to take what each record holds.
  ///   - probes: selectors of single values; each must be in `format`'s syntax.
  public init(
    format: AnswerFormat, records: RecordSelector?, columns: [HTTPStep.Column]? = nil, probes: [RecordSelector] = [],
    refusingExtra: Bool = false
  ) {
    self.refusingExtra = refusingExtra
    self.format = format
    self.records = records
    self.columns = columns
    self.probes = probes
  }

  /// Reads `file`, handing each record to `each`.
  /// - Throws: `RecordError`; errors thrown by `each`.
  public func read(file: String, each: (Record) throws -> Void) throws -> AnswerSummary {
    switch format {
    case .json:
      let pointer: JSONPointer? =
        switch records {
        case .json(let p)?: p
        default: nil
        }
      let probes = probes.compactMap { if case .json(let p) = $0 { p } else { nil } }
      return try JSONRecordReader(records: pointer, columns: columns, probes: probes, refusingExtra: refusingExtra).read(
        file: file, each: each)
    case .xml:
      let path: XMLPath? =
        switch records {
        case .xml(let p)?: p
        default: nil
        }
      let probes = probes.compactMap { if case .xml(let p) = $0 { p } else { nil } }
      return try XMLRecordReader(records: path, columns: columns, probes: probes).read(file: file, each: each)
    }
  }

  /// Reads `file` twice if needed: first to infer the columns (when none are declared), then
  /// to hand each record to `each` after `prepare` receives the columns.
  /// - Throws: `RecordError`; errors thrown by `prepare` or `each`.
  public func load(
    file: String, prepare: ([(name: String, type: ColumnType?)]) throws -> Void, each: (Record) throws -> Void
  ) throws -> AnswerSummary {
    if let columns {
      try prepare(columns.map { ($0.name, $0.type) })
    } else {
      var inference = ColumnInference()
      _ = try read(file: file) { inference.add($0) }
      try prepare(inference.columns)
    }
    return try read(file: file, each: each)
  }
}
