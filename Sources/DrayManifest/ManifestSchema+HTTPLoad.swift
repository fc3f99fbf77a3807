internal import DrayModel

// What an `http` step does with its records: the table, the write mode, the contract and its
// quarantine (docs/http.md, "Contract"), the incremental cursor, declared columns.
extension ManifestSchema {
  static let columnType = Value.choice(ColumnType.allCases.map(\.rawValue))

  public static let httpLoad: [Key] = [
    Key("table", .string(nonEmpty: true), required: true, "The table to fill; replaced whole when the last page is in."),
    Key(
      "records", .string(nonEmpty: false),
      "Where the records are: a JSON Pointer (default: the whole document) or, required for XML, an element path."),
    Key("columns", .nonEmpty(.dictionary(.oneOf([columnType, .mapping(httpColumn)]))), "Declared columns by name; inferred when not set."),
    loadExpect,
    Key(
      "write", .choice(HTTPStep.WriteMode.allCases.map(\.rawValue)), default: .string(HTTPStep.WriteMode.replace.rawValue),
      "How records meet the table's rows: replace them all, append, or merge by primary_key."),
    Key("primary_key", .nonEmpty(.list(.string(nonEmpty: true))), "The record fields that identify a row; required by write: merge."),
    Key("deleted", .string(nonEmpty: true), "JSON Pointer to a boolean in each record; true deletes its row (write: merge)."),
    contractKey,
    quarantineKey,
    Key(
      "extra", .choice(["ignore", "refuse"]),
      "Deprecated, the old spelling of contract.new_columns with columns: ignore (their default) or refuse (freeze)."),
    Key(
      "allow_empty", .boolean, default: .bool(false),
      "true: an answer without records may empty a table that holds rows; otherwise such a load fails and keeps the table."),
    Key(
      "delete_missing", .boolean, default: .bool(false),
      "true: a full merge pull deletes the rows whose primary_key none of its records held, once every page arrived (write: merge, no incremental)."
    ),
  ]

  /// `load.contract` of an `http` step and of a `table_stream` step: one declaration.
  static let contractKey = Key(
    "contract", .mapping(httpContract),
    "What records that do not fit the table do: new_columns (a field or scheme column without a column) and types (a value its column does not hold)."
  )

  /// `load.quarantine` of an `http` step and of a `table_stream` step: one declaration.
  static let quarantineKey = Key(
    "quarantine", .oneOf([.string(nonEmpty: true), .mapping(httpQuarantine)]),
    "The table records set aside or trimmed by the contract are noted in (default <table>_rejected), or { table, max_rows, max_share }."
  )

  /// `table_stream.load`: the data contract of a scheme that changes between runs
  /// (docs/steps.md, "Scheme drift").
  public static let tableStreamLoad: [Key] = [contractKey, quarantineKey]

  public static let httpContract: [Key] = [
    Key(
      "new_columns", .choice(HTTPStep.Rule.allCases.map(\.rawValue)),
      "A field the table has no column for: evolve (add the column; the default without columns), freeze, discard_row, discard_value."
    ),
    Key(
      "types", .choice(HTTPStep.TypeRule.allCases.map(\.rawValue)), default: .string(HTTPStep.TypeRule.asGiven.rawValue),
      "A value its column's type does not hold: as_given (SQLite stores it, PostgreSQL refuses it), evolve (widen), freeze, discard_row, discard_value."
    ),
  ]

  public static let httpQuarantine: [Key] = [
    Key("table", .string(nonEmpty: true), "The quarantine table's name; default <table>_rejected."),
    Key(
      "max_rows", .integer(0...Int(Int32.max)), "Most records a run may set aside or trim; past it the load fails and publishes nothing."),
    Key("max_share", .number, "Most share (0 to 1) of a run's records that may be set aside or trimmed; past it the load fails."),
  ]

  public static let httpIncremental: [Key] = [
    Key("cursor", .string(nonEmpty: true), required: true, "JSON Pointer to the field of each record that grows (updated_at, id)."),
    Key("param", .string(nonEmpty: true), required: true, "The query parameter that sends the kept value on the first page."),
    Key("initial", .json, required: true, "The value sent before any is kept: a string or a number."),
    Key("lag", .duration(minimum: .zero), "A window re-read before the kept value (RFC 3339 instants only)."),
    Key(
      "boundary", .choice(IncrementalCursor.Boundary.allCases.map(\.rawValue)),
      default: .string(IncrementalCursor.Boundary.inclusive.rawValue),
      "Whether the API answers the records at the value sent (inclusive, >=) or only after it (exclusive, >)."),
  ]

  public static let httpColumn: [Key] = [
    Key("type", columnType, default: .string(ColumnType.text.rawValue), "The column's type."),
    Key("from", .string(nonEmpty: false), "Where the value is in a record; the member or child named like the column when not set."),
  ]
}
