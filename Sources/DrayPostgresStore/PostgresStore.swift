public import DrayModel
public import DrayPostgres
public import DrayTarget
internal import Foundation

/// PostgreSQL as a `TargetStore`: a job's tables and dray's bookkeeping in one schema of one
/// database (docs/postgres.md).
///
/// Bookkeeping tables, created on open in `schema` (the same as SQLite's, docs/store.md):
/// `_dray_resources(resource, scheme, fetched_at)`, `_dray_tables(name, resource, params,
/// source_table, content_version, etag, cache_hash, row_count, loaded_at, column_types)` and
/// `_dray_http_cursors(job, step_id, value, staged, fresh, updated_at, boundary,
/// staged_boundary)` and
/// `_dray_http_validators(job, step_id, fingerprint, request, etag, last_modified,
/// updated_at)` (`KeptValidators`), with the table
/// guard's `_dray_table_guard` and its trigger function (`PostgresTableGuard`). Physical table
/// names follow `TableNaming` with PostgreSQL's 63-byte identifier limit; columns are typed
/// by `PostgresColumnType` and filled under `PostgresValueRule`.
///
/// One connection, one owner (`PostgresConnection`); each step thread opens its own store.
public final class PostgresStore {
  public let connection: PostgresConnection
  /// The schema of the job's tables and of dray's own.
  public let schema: String
  /// The run lock this runner holds (`PostgresJournal.runLock`), whose generation every
  /// commit checks; nil for a store that only reads (the `dray` commands).
  let fence: PostgresRunLock?
  /// The partition claim every commit checks and extends (`PostgresClaims.check`), for a
  /// partition of a run several runners share; nil otherwise.
  let claim: PartitionClaim?

  /// PostgreSQL keeps 63 bytes of an identifier (`PostgresIdentifier.maxBytes`).
  public static let naming = TableNaming(maxIdentifierBytes: PostgresIdentifier.maxBytes)
  /// What PostgreSQL holds as a resource's tables (`SchemeLimits.check`): at most 1600
  /// columns a table (PostgreSQL 15 documentation, Appendix K "PostgreSQL Limits"); names
  /// that differ only in letter case and tables without columns are refused by dray's rule,
  /// as on SQLite.
  public static let schemeLimits = SchemeLimits(database: "PostgreSQL", maxColumns: 1600, reservedPrefix: nil, isOwnRule: false)

  /// Connects to `target`, points `search_path` at its schema (so that a step's SQL names
  /// tables without the schema) and creates the bookkeeping tables when missing.
  /// - Parameters:
  ///   - fence: the run lock whose generation every `write` checks before COMMIT.
  ///   - claim: the partition claim every `write` checks before COMMIT.
  ///   - cancellation: the run's interruption: it ends the connection attempt at once and
  ///     cancels the running statement (`stopWhen(_:)`); nil for none.
  /// - Throws: `PostgresError` (its `userMessage` says what to do: a wrong password, a
  ///   missing database or schema, no permission on the schema, an unreachable server).
  public init(
    target: PostgresTarget, fence: PostgresRunLock? = nil, claim: PartitionClaim? = nil, cancellation: Cancellation? = nil
  ) throws {
    connection = try PostgresConnection(
      url: target.url, password: target.password, timeouts: target.timeouts, cancellation: cancellation)
    schema = target.schema
    self.fence = fence
    self.claim = claim
    try PostgresStore.prepare(connection, schema: schema, tables: PostgresStore.bookkeeping) {
      try PostgresStore.addCursorColumns(schema: target.schema, on: $0)
      try PostgresTableGuard.create(schema: target.schema, on: $0)
      try PostgresStore.addTableColumn(schema: target.schema, on: $0)
    }
  }

  /// Connects to `target` to read only (the `dray` commands): nothing is created, and the
  /// session is read-only (`default_transaction_read_only`), so the server refuses any
  /// write (SQLSTATE 25006).
  /// - Throws: `PostgresError`, as `init(target:fence:)`.
  public init(reading target: PostgresTarget) throws {
    connection = try PostgresStore.connectReadOnly(target)
    schema = target.schema
    fence = nil
    claim = nil
  }

  /// A read-only session on `target`, its `search_path` set to the schema.
  static func connectReadOnly(_ target: PostgresTarget) throws -> PostgresConnection {
    let connection = try PostgresConnection(url: target.url, password: target.password, timeouts: target.timeouts)
    try connection.execute("SET client_min_messages TO warning")
    try connection.execute("SET default_transaction_read_only TO on")
    try connection.execute("SELECT set_config('search_path', $1, false)", [.text(PostgresIdentifier.quoted(target.schema))])
    return connection
  }

  /// True when the store's schema exists.
  /// - Throws: `PostgresError`.
  public func schemaExists() throws -> Bool {
    try !connection.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1", [.text(schema)]).rows.isEmpty
  }

  /// True when the schema exists and holds every one of dray's tables `names`.
  static func hasOwnTables(_ names: [String], schema: String, on connection: PostgresConnection) throws -> Bool {
    let found = try connection.execute(
      "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = ANY($2::text[])",
      [.text(schema), .text("{" + names.joined(separator: ",") + "}")]
    ).rows.first?.first?.integer
    return found == Int64(names.count)
  }

  /// Every recorded physical table, optionally of one resource, by name (as
  /// `Store.records(in:resource:)`); empty when the schema holds no bookkeeping yet.
  /// - Throws: `PostgresError`.
  public func records(resource: String? = nil) throws -> [Bookkeeping.TableRecord] {
    guard try PostgresStore.hasOwnTables(["_dray_tables"], schema: schema, on: connection) else { return [] }
    var sql = """
      SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count, loaded_at
      FROM \(own("_dray_tables"))
      """
    var values: [PostgresValue] = []
    if let resource {
      sql += " WHERE resource = $1"
      values.append(.text(resource))
    }
    sql += " ORDER BY name COLLATE \"C\""
    return try connection.execute(sql, values).named.map { row in
      Bookkeeping.TableRecord(
        name: try row["name"].text ?? "", resource: try row["resource"].text ?? "", params: try row["params"].text ?? "{}",
        sourceTable: try row["source_table"].text ?? "", contentVersion: try row["content_version"].text,
        etag: try row["etag"].text, cacheHash: try row["cache_hash"].text, rowCount: Int(try row["row_count"].integer ?? 0),
        loadedAt: try row["loaded_at"].text)
    }
  }

  static let bookkeeping = [Bookkeeping.resources, Bookkeeping.tables, Bookkeeping.cursors, Bookkeeping.validators]
    .map { createStatement($0) }.joined(separator: ";\n")

  /// Adds the columns of `_dray_http_cursors` a schema an older dray made lacks
  /// (`Bookkeeping.cursorsAddedColumns`, nullable text), only when one is missing: an
  /// `ALTER TABLE` takes the table's strongest lock, which a runner opening its store must
  /// not wait for while another publishes.
  static func addCursorColumns(schema: String, on connection: PostgresConnection) throws {
    let present = try connection.execute(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = '_dray_http_cursors'",
      [.text(schema)]
    ).named.compactMap { try $0["column_name"].text }
    for name in Bookkeeping.cursorsAddedColumns where !present.contains(name) {
      try connection.execute(
        "ALTER TABLE \(PostgresIdentifier.quoted(schema))._dray_http_cursors ADD COLUMN IF NOT EXISTS \(name) text")
    }
  }

  /// `CREATE TABLE IF NOT EXISTS` for one of dray's own tables, in PostgreSQL's types, with
  /// `extra` column definitions.
  static func createStatement(_ table: Bookkeeping.Table, extra: [String] = []) -> String {
    table.createStatement(
      types: { type in
        switch type {
        case .text: "text"
        case .integer: "bigint"
        case .flag: "boolean"
        }
      }, extra: extra)
  }

  /// Sets `search_path` to `schema` and runs `tables` (`CREATE TABLE IF NOT EXISTS`
  /// statements separated by `;`) in one transaction under the schema's setup lock, so that
  /// two runners opening one new schema do not race to create the same table; `then` runs
  /// last in that transaction.
  static func prepare(
    _ connection: PostgresConnection, schema: String, tables: String, then: ((PostgresConnection) throws -> Void)? = nil
  ) throws {
    try connection.execute("SELECT set_config('search_path', $1, false)", [.text(PostgresIdentifier.quoted(schema))])
    try connection.transaction {
      try connection.execute("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresRunLock.key(job: "", schema: schema))])
      for statement in tables.split(separator: ";") {
        try connection.execute("\(statement)".replacingOccurrences(of: "EXISTS _dray_", with: "EXISTS \(qualified("_dray_"))"))
      }
      try then?(connection)
    }
    func qualified(_ prefix: String) -> String { PostgresIdentifier.quoted(schema) + "." + prefix }
  }

  /// Adds `_dray_tables.column_types` to a schema an older dray made (asked first: an
  /// `ALTER TABLE` on every open would lock the table each time).
  static func addTableColumn(schema: String, on connection: PostgresConnection) throws {
    let found = try connection.execute(
      "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = '_dray_tables' AND column_name = $2",
      [.text(schema), .text(Bookkeeping.addedTableColumn)]
    ).rows
    guard found.isEmpty else { return }
    try connection.execute(
      "ALTER TABLE \(PostgresIdentifier.quoted(schema))._dray_tables ADD COLUMN IF NOT EXISTS \(Bookkeeping.addedTableColumn) text")
  }

  /// `"schema"."name"`, the name fitted to 63 bytes.
  func qualified(_ name: String) -> String {
    PostgresIdentifier.quoted(schema) + "." + PostgresIdentifier.sql(name)
  }

  /// dray's own table `name` (`_dray_...`) in the schema.
  func own(_ name: String) -> String { PostgresIdentifier.quoted(schema) + "." + name }

  /// True when table `name` exists in the schema.
  func tableExists(_ name: String) throws -> Bool {
    try !connection.execute(
      "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2", [.text(schema), .text(name)]
    ).rows.isEmpty
  }

  /// The column names of table `name`, in order: the rows `information_schema.columns`
  /// gives (tables, views, foreign and partitioned tables; columns the role owns or may use),
  /// read from the catalog itself, which a new session plans and runs in a fraction of the
  /// view's time (a load asks three times a run: 5 to 7 ms each through the view).
  func columnNames(ofTable name: String) throws -> [String] {
    try connection.execute(
      """
      SELECT a.attname::text FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'f', 'p')
        AND (pg_catalog.pg_has_role(c.relowner, 'USAGE')
          OR pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT, INSERT, UPDATE, REFERENCES'))
      ORDER BY a.attnum
      """, [.text(schema), .text(name)]
    ).rows.compactMap { $0.first?.text }
  }

  /// True when table `name` has exactly the columns a table of `table` gets: the row id
  /// first for a `cached` resource, then the scheme's, with their names (fitted) and types
  /// (`PostgresColumnType`), in order.
  public func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool {
    let rows = try connection.execute(
      """
      SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
      ORDER BY ordinal_position
      """, [.text(schema), .text(name)]
    ).rows
    let expected = PostgresTransaction.columnDefinitions(table, cached: cached).map {
      [PostgresIdentifier.fitted($0.name), $0.type.sqlName]
    }
    return rows.map { $0.map { $0.text ?? "" } } == expected
  }

  /// The scheme last recorded for `resource`, or nil.
  public func scheme(for resource: String) throws -> ResourceScheme? {
    let rows = try connection.execute("SELECT scheme FROM \(own("_dray_resources")) WHERE resource = $1", [.text(resource)]).rows
    guard let json = rows.first?.first?.text else { return nil }
    return try Bookkeeping.decodeScheme(json)
  }
}

@available(*, unavailable)
extension PostgresStore: Sendable {}

extension PostgresStore: KeptTables {}

extension PostgresStore: TargetStore {
  /// The URL with its password masked.
  public var location: String { connection.url.redacted }

  public var naming: TableNaming { PostgresStore.naming }

  public var loadsWhileDownloading: Bool { false }

  /// Cancels the running statement (a step's SQL, a `COPY`) once `cancellation` is set
  /// (`PostgresConnection.cancelStatements(when:)`); a load also checks it between rows.
  public func stopWhen(_ cancellation: Cancellation) { connection.cancelStatements(when: cancellation) }

  /// The version a delta can start from (`TableAnswerApplier.deltaBase`); intact tables by
  /// `PostgresTableGuard.isIntact`.
  public func deltaBase(scheme: ResourceScheme, params: JSONValue) throws -> String? {
    try TableAnswerApplier.deltaBase(scheme: scheme, params: params, in: self)
  }

  /// Whether every output table already holds the full answer `info` describes
  /// (`TableAnswerApplier.holdsAnswer`, docs/store.md "Unchanged answers"); intact tables by
  /// `PostgresTableGuard.isIntact`.
  public func holdsAnswer(_ info: AnswerInfo, scheme: ResourceScheme, params: JSONValue) throws -> Bool {
    try TableAnswerApplier.holdsAnswer(info, scheme: scheme, params: params, in: self)
  }

  /// The version and validators `_dray_tables` records for table `name`, or nil (`KeptTables`).
  public func recordedAnswer(ofTable name: String) throws -> AnswerInfo? {
    try connection.execute("SELECT content_version, etag, cache_hash FROM \(own("_dray_tables")) WHERE name = $1", [.text(name)])
      .named.first.map {
        AnswerInfo(contentVersion: try $0["content_version"].text, etag: try $0["etag"].text, cacheHash: try $0["cache_hash"].text)
      }
  }

  public func tableReference(resource: String, table: String, params: JSONValue) throws -> String? {
    let name = naming.physicalName(resource: resource, table: table, params: params)
    return try tableExists(name) ? qualified(name) : nil
  }

  /// Runs the one statement in a `READ ONLY` transaction: a `query` step reads, so a write
  /// to any table, dray's own included, is refused by the server (SQLSTATE 25006). Rows are
  /// handed over as they arrive, so memory stays bounded whatever the result's size.
  /// Values read as on SQLite (docs/partitions.md, "Placeholders"): a boolean as the integer
  /// 1 or 0 (SQLite has no booleans: its `true` is 1, and a loaded JSON boolean is stored as
  /// 1 or 0), a timestamp in RFC 3339 and a JSON string as the string
  /// (`PostgresResult.portableText(_:type:)`).
  public func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws {
    let statements = PostgresSQLText.statements(sql)
    guard let first = statements.first, statements.count == 1 else {
      let rest = statements.dropFirst().joined(separator: "; ")
      throw UserSQLError.notOneStatement(rest: statements.isEmpty ? nil : String(rest.prefix(200)))
    }
    if let control = PostgresSQLText.transactionControl(first) { throw control }
    try connection.transaction {
      try connection.execute("SET TRANSACTION READ ONLY")
      try connection.stream(first, portable: true, columns: columns) { try row($0.map(\.sqlValue)) }
    }
  }

  /// The kept cursor of an `incremental` step, from `_dray_http_cursors` (the columns of
  /// SQLite's `CursorLedger`; `fresh` a boolean). A schema an older dray made, read before
  /// any run added the digests' columns, has none: they read as unknown.
  /// - Throws: `PostgresError`; `CursorLedgerError` for a kept value that is not JSON.
  public func cursor(job: String, stepID: String) throws -> CursorEntry {
    let rows = try connection.execute(
      "SELECT * FROM \(own("_dray_http_cursors")) WHERE job = $1 AND step_id = $2", [.text(job), .text(stepID)]
    ).named
    guard let row = rows.first else { return CursorEntry() }
    return try CursorEntry(
      storedValue: try row["value"].text, staged: try row["staged"].text, fresh: try row["fresh"].bool == true, stepID: stepID,
      boundary: (try? row["boundary"])?.text, stagedBoundary: (try? row["staged_boundary"])?.text)
  }

  /// From `_dray_http_validators`, the columns of SQLite's.
  public func validators(job: String, stepID: String) throws -> KeptValidators? {
    let row = try connection.execute(
      "SELECT fingerprint, request, etag, last_modified FROM \(own("_dray_http_validators")) WHERE job = $1 AND step_id = $2",
      [.text(job), .text(stepID)]
    ).named.first
    return try row.map {
      KeptValidators(
        fingerprint: try $0["fingerprint"].text ?? "", request: try $0["request"].text ?? "", etag: try $0["etag"].text,
        lastModified: try $0["last_modified"].text)
    }
  }

  /// The name as PostgreSQL keeps it (fitted to 63 bytes), as the guard's trigger names it.
  public func isIntact(table name: String) throws -> Bool {
    try PostgresTableGuard.isIntact(PostgresIdentifier.fitted(name), in: self)
  }

  public func observeInsertedRows(every interval: Int, _ body: @escaping (Int) -> Void) -> (any InsertedRowsObservation)? { nil }

  /// Before a claimed partition's transaction looks for a table to create or widen: the
  /// job's definitions lock (`PostgresClaims.writeKey`), held to COMMIT, so that two
  /// runners' first commits do not both create the step's table (CREATE TABLE races in the
  /// catalog: SQLSTATE 23505); the second sees the first's table. Their rows go in side by
  /// side. Nothing for a runner alone, whose threads commit one at a time
  /// (`RunContext.databaseWrites`).
  /// - Throws: `PostgresError`.
  func lockDefinitions() throws {
    guard let claim else { return }
    try connection.execute("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresClaims.writeKey(job: claim.job, schema: schema))])
  }

  /// One transaction; just before COMMIT it checks the run lock's generation
  /// (`PostgresRunLock.checkFence`) and the partition's claim (`PostgresClaims.check`), so a
  /// runner that lost its lock or its claim commits nothing.
  public func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
    try Tracing.commit(system: "postgresql") {
      try connection.transaction {
        let value = try body(PostgresTransaction(store: self))
        try fence?.checkFence(on: connection)
        if let claim { try PostgresClaims.check(claim, on: connection, schema: schema) }
        return value
      }
    }
  }
}

extension PostgresValue {
  /// The value as the engine's `SQLValue`.
  var sqlValue: SQLValue {
    switch self {
    case .null: .null
    case .integer(let i): .integer(i)
    case .real(let d): .real(d)
    case .bool(let b): .integer(b ? 1 : 0)
    case .text(let t): .text(t)
    }
  }
}
