public import DrayModel

/// Reads an answer file in its format: records for a table, and single values (a next link,
/// a cursor) for pagination.
public struct RecordReader {
  public var format: AnswerFormat
  public var records: RecordSelector?
  public var columns: [HTTPStep.Column]?
  public var probes: [RecordSelector]
  /// With `columns`: a JSON record's fields they do not name follow the declared columns, as
  /// their own columns (for `load.contract.new_columns`); otherwise they are not read.
  public var keepingExtra: Bool
  /// The column of an incremental cursor, whose JSON numbers keep their written text
  /// (`JSONRecordReader.cursorColumn`).
  public var cursorColumn: String?

  /// - Parameters:
  ///   - records: where the records are; nil to read only the probes.
  ///   - columns: declared columns, or nil to take what each record holds.
  ///   - probes: selectors of single values; each must be in `format`'s syntax.
  public init(
    format: AnswerFormat, records: RecordSelector?, columns: [HTTPStep.Column]? = nil, probes: [RecordSelector] = [],
    keepingExtra: Bool = false
  ) {
    self.keepingExtra = keepingExtra
    self.format = format
    self.records = records
    self.columns = columns
    self.probes = probes
  }

  /// Whether `load` reads an answer in one pass, so that it can read it while it downloads:
  /// a JSON answer whose columns are declared (`load.columns`). Columns taken from the
  /// records themselves need a first pass over the whole answer, and libxml2 reads an XML
  /// answer from a finished file.
  public var readsInOnePass: Bool { format == .json && columns != nil }

  /// Reads `file`, handing each record to `each`; with `growing` (only when
  /// `readsInOnePass`), the part a download is still writing, as it arrives.
  /// - Throws: `RecordError`; `GrowingFile.Stop`; errors thrown by `each`.
  public func read(file: String, growing: GrowingFile? = nil, each: (Record) throws -> Void) throws -> AnswerSummary {
    precondition(growing == nil || readsInOnePass, "only an answer read in one pass is read as it downloads")
    switch format {
    case .json:
      let pointer: JSONPointer? =
        switch records {
        case .json(let p)?: p
        default: nil
        }
      let probes = probes.compactMap { if case .json(let p) = $0 { p } else { nil } }
      var reader = JSONRecordReader(records: pointer, columns: columns, probes: probes, keepingExtra: keepingExtra)
      reader.cursorColumn = cursorColumn
      return try reader.read(file: file, growing: growing, each: each)
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

  /// The columns `load` takes from the records of the finished `file` when none are declared
  /// (a first pass over the whole answer, which needs no database): nil when columns are
  /// declared. A partitioned step reads it before it waits for the database, so that
  /// partitions infer their pages' columns side by side (docs/partitions.md).
  /// - Throws: `RecordError`.
  public func inferredColumns(file: String) throws -> [(name: String, type: ColumnType?)]? {
    guard columns == nil else { return nil }
    var inference = ColumnInference()
    _ = try read(file: file) { inference.add($0) }
    return inference.columns
  }

  /// Reads `file` twice if needed: first to infer the columns (when none are declared and
  /// `inferred` does not give them, from `inferredColumns(file:)` of the same file), then to
  /// hand each record to `each` after `prepare` receives the columns. With `growing` (only
  /// when `readsInOnePass`), reads the part a download is still writing, as it arrives.
  /// - Throws: `RecordError`; `GrowingFile.Stop`; errors thrown by `prepare` or `each`.
  public func load(
    file: String, growing: GrowingFile? = nil, inferred: [(name: String, type: ColumnType?)]? = nil,
    prepare: ([(name: String, type: ColumnType?)]) throws -> Void, each: (Record) throws -> Void
  ) throws -> AnswerSummary {
    if let columns {
      try prepare(columns.map { ($0.name, $0.type) })
    } else if let inferred {
      try prepare(inferred)
    } else {
      var inference = ColumnInference()
      _ = try read(file: file) { inference.add($0) }
      try prepare(inference.columns)
    }
    return try read(file: file, growing: growing, each: each)
  }
}
