internal import DrayDatabases
internal import DrayEngine
internal import DrayJSON
internal import DrayManifest
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// `dray status JOB.yaml [--runs N]`: recent runs and each step's checkpoint, read without
/// writing anything: from the SQLite journal, or for `database.url` from the journal in the
/// job's PostgreSQL schema (password as for `dray run`: `database.password`, the URL,
/// `PGPASSWORD`, `~/.pgpass`).
enum StatusCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, options: ["--runs"])
    guard args.positional.count == 1 else { throw UsageError("status takes one manifest: dray status JOB.yaml") }
    // Status reads the journal only: the job's secrets, and any variable outside the blocks
    // that say where it is, need not be set.
    guard let manifest = ManifestInput.load(args.positional[0], secretsMayBeMissing: true, recordsOnly: true) else {
      return ExitCode.usage
    }
    let steps = definedSteps(args.positional[0])
    let limit = try args.values["--runs"].map { try Arguments.positiveCount($0, flag: "--runs") }
    let database = Databases.open(manifest)
    do {
      guard let reader = try database.openReadOnly(), let journal = try reader.journal() else {
        print("job \(manifest.job): no runs yet (no journal \(database.journalPlace))")
        return ExitCode.success
      }
      print(
        try text(
          manifest, steps: steps, journal: journal, limit: limit ?? 10, running: reader.runner,
          claims: { try reader.claims(job: $0.job, runID: $0.id) }))
    } catch {
      DrayCommandLine.printError("dray: \(database.failure(error)?.message ?? "\(error)")")
      return ExitCode.stepFailed
    }
    return ExitCode.success
  }

  /// The whole manifest at `path`, to compare each checkpoint with its step's definition;
  /// nil, after a note on standard error naming the first problem, when it does not load
  /// here (a variable a step needs is not set).
  static func definedSteps(_ path: String) -> Manifest? {
    var loader = ManifestLoader()
    loader.secretsMayBeMissing = true
    do {
      return try loader.load(path: path)
    } catch {
      let first = error.diagnostics.first.map { "\($0.location): \($0.message)" }
      DrayCommandLine.printError(
        "note: the steps were not read here (\(first ?? "\(error)")); checkpoints are listed as the journal holds them, not compared with the steps' definitions"
      )
      return nil
    }
  }

  /// The status report of `manifest`'s job from `journal`.
  /// - Parameters:
  ///   - steps: the whole manifest, whose steps' checkpoints are listed in order and compared
  ///     with their definitions; nil lists the journal's checkpoints as they are.
  ///   - running: what is known of a `running` run's runner: its process on this machine (a
  ///     journal on this machine's disk), or the session holding the job's run lock (a shared
  ///     database's journal).
  ///   - claims: the claims of a `running` run's partitions (`dray run --join`), told under
  ///     its line (`claimLines`).
  static func text(
    _ manifest: Manifest, steps whole: Manifest?, journal: any RunJournal, limit: Int, running: (RunRecord) throws -> String,
    claims: (RunRecord) throws -> [ClaimView] = { _ in [] }
  ) throws -> String {
    let runs = try journal.runs(job: manifest.job, limit: limit)
    var lines = ["job \(manifest.job): \(runs.count) recent run\(runs.count == 1 ? "" : "s") (journal \(journal.location))"]
    for run in runs {
      var line = "  \(run.id)  \(run.status.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)) started \(run.startedAt)"
      if let ended = run.endedAt { line += ", ended \(ended)" }
      var notes: [String] = []
      if !run.flags.text.isEmpty { notes.append(run.flags.text) }
      if run.lineage != run.id { notes.append("continues \(run.lineage)") }
      switch run.status {
      case .abandoned: notes.append("process \(run.processID) ended without recording an end")
      case .running: notes.append(try running(run))
      default: break
      }
      if !notes.isEmpty { line += "; " + notes.joined(separator: "; ") }
      lines.append(line)
      if run.status == .running { lines += claimLines(try claims(run)) }
    }
    let checkpoints = try journal.checkpoints(job: manifest.job)
    lines.append("checkpoints:")
    let listed: [(id: String, fingerprint: String?)] =
      whole.map { whole in whole.allSteps.map { ($0.id, $0.fingerprint(in: whole)) } } ?? checkpoints.map { ($0.stepID, nil) }
    // A partitioned step that has not finished: how far its partitions got in the newest
    // run's chain (each partition has its own checkpoint, `STEP[...]`).
    // A step whose checkpoint is not `succeeded` in a run still running is under way: its
    // checkpoint is the one the step records as it starts, not an end.
    let running = Set(runs.filter { $0.status == .running }.map(\.id))
    func partitions(of id: String) -> String {
      guard let newest = runs.first else { return "" }
      let lineage = newest.lineage
      let members = checkpoints.filter { $0.stepID.hasPrefix(id + "[") && $0.lineage == lineage }
      let finished = members.filter { $0.status == .succeeded }
      guard !members.isEmpty else { return "" }
      let failed = members.count - finished.count
      return "; partitions: \(finished.count) finished (\(HumanUnits.counted(Int(finished.reduce(0) { $0 + $1.rows }), "row")))"
        + (failed > 0 ? ", \(failed) failed" : "")
        + (running.contains(newest.id)
          ? " so far" : " in run \(lineage) and those continuing it; the next dray run resumes the others")
    }
    for step in listed {
      guard let c = checkpoints.first(where: { $0.stepID == step.id }) else {
        lines.append("  \(step.id): none" + partitions(of: step.id))
        continue
      }
      let changed = step.fingerprint.map { c.fingerprint == $0 ? "" : " (definition changed since)" } ?? ""
      if c.status != .succeeded && c.status != .sent && running.contains(c.runID) {
        lines.append("  \(step.id): running in run \(c.runID)\(changed)" + partitions(of: step.id))
        continue
      }
      lines.append(
        "  \(step.id): \(c.status.rawValue) in run \(c.runID) at \(c.finishedAt)"
          + (c.attempts > 1 ? ", \(c.attempts) attempts" : "")
          + ", \(HumanUnits.counted(Int(c.rows), "row")), \(HumanUnits.counted(Int(c.bytes), "byte"))\(changed)"
          + (c.status == .sent ? "; its call's outcome is unknown: not sent again until dray run --resend \(step.id)" : "")
          + (c.status == .succeeded ? "" : partitions(of: step.id))
      )
    }
    return lines.joined(separator: "\n")
  }
}

extension StatusCommand {
  /// One line per partitioned step of a run in progress whose partitions runners claim
  /// (`dray run --join`; docs/partitions.md, "Many runners"): how many are open for claims,
  /// done, failed, waiting for a runner and claimed, and by whom, each runner with the
  /// soonest expiry of its claims by the database's clock:
  /// `    claims of step issues: 12 partitions, 5 done, 3 waiting, 4 claimed (host:41:3f2a9c01: 2, expiring in 1.4s; ...)`.
  static func claimLines(_ claims: [ClaimView]) -> [String] {
    var steps: [String] = []
    for claim in claims where !steps.contains(claim.stepID) { steps.append(claim.stepID) }
    return steps.map { id in
      let step = claims.filter { $0.stepID == id }
      func count(_ state: ClaimState.State) -> Int { step.filter { $0.state == state }.count }
      var parts = [HumanUnits.counted(step.count, "partition"), "\(count(.done)) done"]
      if count(.failed) > 0 { parts.append("\(count(.failed)) failed") }
      parts.append("\(count(.pending)) waiting")
      var owners: [String] = []
      for claim in step where claim.state == .claimed {
        if let owner = claim.owner, !owners.contains(owner) { owners.append(owner) }
      }
      let held = owners.map { owner in
        let own = step.filter { $0.state == .claimed && $0.owner == owner }
        let soonest = own.compactMap(\.expiresIn).min() ?? 0
        let expiry =
          soonest > 0
          ? String(format: "expiring in %.1fs", soonest) : String(format: "expired %.1fs ago, anyone's to take", -soonest)
        return "\(owner): \(own.count), \(expiry)"
      }
      parts.append("\(count(.claimed)) claimed" + (held.isEmpty ? "" : " (\(held.joined(separator: "; ")))"))
      return "    claims of step \(id): " + parts.joined(separator: ", ")
    }
  }
}

/// `dray tables DATABASE [--schema S] [--resource R [--params JSON] [--table T]] [--json]`:
/// physical table names, as the SDK's `getTableNamesInDatabase` (every table dray recorded)
/// and `getTablesName` (the tables of one resource and parameter set) give them.
///
/// DATABASE is an SQLite file or a PostgreSQL URL (`DatabaseArgument`; `--schema`, default
/// `public`, names the job's schema). Prints one name per line, or with `--json` the
/// bookkeeping of each table. Reads the database without changing it. Exits 1 when
/// `--resource` names tables that were never loaded, when there is no database (or no
/// such schema), or when PostgreSQL cannot be reached or refuses; 2 for a wrong command
/// line, a malformed URL included.
enum TablesCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, flags: ["--json"], options: ["--resource", "--params", "--table", "--schema"])
    guard args.positional.count == 1 else {
      throw UsageError(
        "tables takes one database: dray tables DATABASE [--schema NAME] [--resource NAME [--params JSON] [--table NAME]] [--json]")
    }
    let database = try DatabaseArgument.open(args.positional[0], schema: args.values["--schema"])
    let resource = args.values["--resource"]
    if resource == nil && (args.values["--params"] != nil || args.values["--table"] != nil) {
      throw UsageError("--params and --table choose among the tables of one resource; add --resource NAME")
    }
    var params = JSONValue.object([])
    // An empty string is the empty object, as the SDK's getTablesName takes it (its sample
    // passes "").
    if let text = args.values["--params"], BlankAnswer.size(of: Array(text.utf8)) == nil {
      do {
        params = try JSONValue(parsing: text)
      } catch {
        // What is wrong and the byte it is at; a comment is refused as such (JSON has none).
        throw UsageError("--params must be a JSON object, such as '{\"region\":\"EU\"}': \(error.message)")
      }
      guard case .object = params else { throw UsageError("--params must be a JSON object, such as '{\"region\":\"EU\"}'") }
    }
    let location = database.location
    let reader: any DatabaseReader
    var records: [Bookkeeping.TableRecord]
    do {
      guard let opened = try database.openReadOnly() else {
        DrayCommandLine.printError("dray: \(database.absence)")
        return ExitCode.stepFailed
      }
      reader = opened
      records = try reader.tables(resource: resource)
    } catch {
      DrayCommandLine.printError("dray: \(database.failure(error)?.message ?? "\(error)")")
      return ExitCode.stepFailed
    }
    if let resource {
      records = records.filter { $0.params == params.canonicalJSON }
      if let table = args.values["--table"] {
        let tables = records.map(\.sourceTable)
        records = records.filter { $0.sourceTable == table }
        if records.isEmpty && !tables.isEmpty {
          DrayCommandLine.printError(
            "dray: resource '\(resource)' has no output table '\(table)' in \(location); its tables: \(tables.joined(separator: ", "))")
          return ExitCode.stepFailed
        }
      }
      if records.isEmpty {
        let table = args.values["--table"] ?? "output_table"
        let name = database.naming.physicalName(resource: resource, table: table, params: params)
        DrayCommandLine.printError(
          "dray: \(location) holds no table of resource '\(resource)'\(args.values["--table"].map { ", output table '\($0)'" } ?? "") for params \(params.canonicalJSON); a schemes or table_stream step would create \(reader.quoted(name))"
        )
        return ExitCode.stepFailed
      }
    }
    if args.flags.contains("--json") {
      print(JSONValue.array(records.map(TablesCommand.json)).json)
    } else {
      for record in records { print(record.name) }
    }
    return ExitCode.success
  }

  static func json(_ record: Bookkeeping.TableRecord) -> JSONValue {
    func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    return .object([
      ("name", .string(record.name)), ("resource", .string(record.resource)), ("table", .string(record.sourceTable)),
      ("params", (try? JSONValue(parsing: record.params)) ?? .string(record.params)), ("rows", .integer(Int64(record.rowCount))),
      ("content_version", text(record.contentVersion)), ("etag", text(record.etag)), ("cache_hash", text(record.cacheHash)),
      ("loaded_at", text(record.loadedAt)),
    ])
  }
}

/// `dray query DATABASE SQL [--schema S]`: runs one read-only statement and prints the
/// SDK's `query` answer, `{"status":"ok","result":{"database":{"records":[{column: value}]}}}`,
/// or `{"status":"error","error":"<the database's message>"}` with exit code 1.
///
/// On an SQLite file (read-only connection) the statement must be one for which
/// `sqlite3_stmt_readonly` is true (https://sqlite.org/c3ref/stmt_readonly.html; any other
/// is refused before it runs). On a PostgreSQL URL (`DatabaseArgument`; `search_path` set
/// to `--schema`, default `public`) it runs in a `READ ONLY` transaction of a read-only
/// session, so the server refuses any write (SQLSTATE 25006).
///
/// Values: integers as JSON integers (exact), reals as the shortest JSON number that reads
/// back as the same double (infinities as null), text as a string, NULL as null, an SQLite
/// BLOB as a base64 string, a PostgreSQL boolean as 1 or 0 (as SQLite stores it) and any
/// other PostgreSQL type as its text. SQLite's records stream out as the statement steps,
/// so memory stays flat whatever the row count (PostgreSQL's answer is read whole first); an
/// error after the first 1 MiB of output was written cannot turn into the error shape: the
/// output stops there, the error goes to standard error, the exit code is 1. A malformed
/// URL is a wrong command line (exit 2).
enum QueryCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, options: ["--schema"])
    guard args.positional.count == 2 else {
      throw UsageError("query takes a database and SQL: dray query DATABASE 'SELECT ...' [--schema NAME]")
    }
    let database = try DatabaseArgument.open(args.positional[0], schema: args.values["--schema"])
    let sql = args.positional[1]
    let output = Output()
    var names: [[UInt8]] = []
    var first = true
    func begin(_ columns: [String]) {
      names = columns.map { name -> [UInt8] in
        var key = ""
        JSONValue.writeString(name, to: &key)
        return Array(key.utf8) + [UInt8(ascii: ":")]
      }
      output.append(#"{"status":"ok","result":{"database":{"records":["#)
    }
    func record(_ values: [SQLValue]) {
      output.append(first ? "{" : ",{")
      first = false
      for (index, name) in names.enumerated() {
        if index > 0 { output.append(",") }
        output.bytes.append(contentsOf: name)
        QueryCommand.append(values[index], to: output)
      }
      output.append("}")
      output.flushIfFull()
    }
    do {
      guard let reader = try database.openReadOnly() else { throw QueryError("no database at \(database.location)") }
      try reader.query(sql, columns: begin, row: record)
      output.append("]}}}\n")
      output.flush()
      return ExitCode.success
    } catch {
      let message = QueryCommand.message(error, in: database)
      if output.flushed {
        output.flush()
        DrayCommandLine.printError("\ndray: the query failed after its first records were printed: \(message)")
      } else {
        print(JSONValue.object([("status", .string("error")), ("error", .string(message))]).json)
      }
      return ExitCode.stepFailed
    }
  }

  /// The error shape's message for what stopped a query.
  static func message(_ error: any Error, in database: any JobDatabase) -> String {
    switch error {
    case let refusal as ReadOnlyQueryError: refusal.description
    case UserSQLError.notOneStatement(let rest?): "dray query runs one statement; found another after the first: \(rest)"
    case UserSQLError.notOneStatement(nil): "the query holds no SQL statement"
    case UserSQLError.transactionControl(let statement):
      "dray query only reads, in a transaction of its own; '\(statement)' would begin or end one: remove it"
    default: database.failure(error)?.message ?? "\(error)"
    }
  }

  /// A query that cannot run, in the error shape.
  struct QueryError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }

  static func append(_ value: SQLValue, to output: Output) {
    switch value {
    case .null: output.append("null")
    case .integer(let i): output.append(String(i))
    case .real(let d): output.append(d.isFinite ? "\(d)" : "null")
    case .text(let s):
      var text = ""
      JSONValue.writeString(s, to: &text)
      output.append(text)
    case .blob(let b): output.append("\"" + Data(b).base64EncodedString() + "\"")
    }
  }

  /// Standard output, written in 1 MiB pieces.
  final class Output {
    var bytes: [UInt8] = []
    /// True once anything was written.
    var flushed = false

    func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    func flushIfFull() {
      if bytes.count >= 1 << 20 { flush() }
    }

    func flush() {
      guard !bytes.isEmpty else { return }
      try? FileHandle.standardOutput.write(contentsOf: Data(bytes))
      bytes.removeAll(keepingCapacity: true)
      flushed = true
    }
  }
}

/// The DATABASE argument of `dray tables` and `dray query` (`Databases.open(argument:schema:)`).
enum DatabaseArgument {
  /// - Throws: `UsageError` for an argument that names no database.
  static func open(_ text: String, schema: String?) throws(UsageError) -> any JobDatabase {
    do {
      return try Databases.open(argument: text, schema: schema)
    } catch {
      throw UsageError(error.description)
    }
  }
}
