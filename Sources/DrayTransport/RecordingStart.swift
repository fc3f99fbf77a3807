public import Foundation

/// The state a recorded run started from, kept in the index's `start` section
/// (docs/recordings.md, "The start section"): what the job's database held that shaped the
/// run's requests (kept cursors, validators, the versions a delta starts from) and the rows
/// of the tables those belong to, so that a replay into a fresh folder, seeded with it,
/// sends the same requests and reports the same rows. Taken when the run starts, once it
/// holds the job's lock and before its first request; written with the index when the run
/// ends. Never holds a credential: kept OAuth 2.0 refresh tokens and login sessions are not
/// read.
public struct RecordingStart: Codable, Sendable, Equatable {
  /// The cursor each `incremental` step sends, by step id, as JSON text
  /// (`_dray_http_cursors.value`).
  public var cursors: [String: String]
  /// The validators each conditional `http` step kept for its definition as it stood, by
  /// step id (`_dray_http_validators`).
  public var validators: [String: Validators]
  /// Each step's last checkpoint in the run journal (`_dray_checkpoints`), by step id: what
  /// the report shows as the step's checkpoint `before`.
  public var checkpoints: [String: Checkpoint]
  /// The schemes of the resources whose tables a delta starts from, by resource, as the
  /// bookkeeping stores them (`_dray_schemes`).
  public var schemes: [String: String]
  /// The tables the run read or added to: an `http` step's table that a `merge`, an
  /// `append` or a `304` keeps, a `table_stream` delta's tables.
  public var tables: [Table]

  public init(
    cursors: [String: String] = [:], validators: [String: Validators] = [:], checkpoints: [String: Checkpoint] = [:],
    schemes: [String: String] = [:], tables: [Table] = []
  ) {
    self.cursors = cursors
    self.validators = validators
    self.checkpoints = checkpoints
    self.schemes = schemes
    self.tables = tables
  }

  /// Whether the run started from no data the job's database held: no cursor, validators or
  /// table (checkpoints aside, which shape no request).
  public var holdsNoData: Bool { cursors.isEmpty && validators.isEmpty && schemes.isEmpty && tables.isEmpty }

  /// Whether the run started from nothing the job's database held.
  public var isEmpty: Bool { cursors.isEmpty && validators.isEmpty && checkpoints.isEmpty && schemes.isEmpty && tables.isEmpty }

  /// A step's kept validators (`KeptValidators`), kept for the step's definition as the run
  /// read it (a replay keeps them for its own, which the database's place is part of).
  public struct Validators: Codable, Sendable, Equatable {
    /// The SHA-256 (hex) of the URL asked.
    public var request: String
    public var etag: String?
    public var lastModified: String?

    public init(request: String, etag: String?, lastModified: String?) {
      self.request = request
      self.etag = etag
      self.lastModified = lastModified
    }
  }

  /// A step's last checkpoint (`CheckpointRecord`).
  public struct Checkpoint: Codable, Sendable, Equatable {
    public var run: String
    public var lineage: String
    /// `succeeded`, `failed` or `sent`.
    public var status: String
    /// Whether it was the step's definition as the run read it (a replay then records its
    /// own definition's fingerprint, which the database's place is part of); the fingerprint
    /// itself is not kept.
    public var sameDefinition: Bool
    public var attempts: Int
    public var rows: Int
    public var bytes: Int64
    public var finishedAt: String

    public init(
      run: String, lineage: String, status: String, sameDefinition: Bool, attempts: Int, rows: Int, bytes: Int64, finishedAt: String
    ) {
      self.run = run
      self.lineage = lineage
      self.status = status
      self.sameDefinition = sameDefinition
      self.attempts = attempts
      self.rows = rows
      self.bytes = bytes
      self.finishedAt = finishedAt
    }
  }

  /// One kept table: its columns, its rows (in a file of the recording) and, for a table a
  /// delta starts from, its resource and the answer its bookkeeping records.
  public struct Table: Codable, Sendable, Equatable {
    /// The physical name.
    public var name: String
    /// `[name, type]`, in order; the type is a `ColumnType` raw value, or empty for none.
    public var columns: [[String]]
    /// How many rows `rowsFile` holds.
    public var rows: Int
    /// `start/NNNN.json`: a JSON array of rows, each an array of values in column order
    /// (`StartValue`), relative to the recording's folder.
    public var rowsFile: String
    /// Whether dray's table guard said the table held what dray last wrote.
    public var intact: Bool
    /// The platform resource and params whose scheme made the table; nil for an `http`
    /// step's table.
    public var resource: String?
    public var params: String?
    /// The content version, `ETag` and hash its bookkeeping records (`_dray_tables`).
    public var contentVersion: String?
    public var etag: String?
    public var cacheHash: String?

    public init(
      name: String, columns: [[String]], rows: Int, rowsFile: String, intact: Bool, resource: String? = nil, params: String? = nil,
      contentVersion: String? = nil, etag: String? = nil, cacheHash: String? = nil
    ) {
      self.name = name
      self.columns = columns
      self.rows = rows
      self.rowsFile = rowsFile
      self.intact = intact
      self.resource = resource
      self.params = params
      self.contentVersion = contentVersion
      self.etag = etag
      self.cacheHash = cacheHash
    }
  }

  /// The folder of the kept tables' row files inside the recording's folder.
  public static let folder = "start"
}

/// One value of a kept table's row in a recording's `start/` file: JSON null, a number
/// (an integer when it reads as one), a string, or `{"base64": "..."}` for bytes.
public enum StartValue: Codable, Sendable, Equatable {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)
  case bytes([UInt8])

  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(Int64.self) {
      self = .integer(value)
    } else if let value = try? container.decode(Double.self) {
      self = .real(value)
    } else if let value = try? container.decode(String.self) {
      self = .text(value)
    } else {
      let object = try container.decode([String: String].self)
      guard let text = object["base64"], let data = Data(base64Encoded: text) else {
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "a value is null, a number, a string or {\"base64\": ...}")
      }
      self = .bytes([UInt8](data))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .integer(let value): try container.encode(value)
    case .real(let value): try container.encode(value)
    case .text(let value): try container.encode(value)
    case .bytes(let value): try container.encode(["base64": Data(value).base64EncodedString()])
    }
  }
}
