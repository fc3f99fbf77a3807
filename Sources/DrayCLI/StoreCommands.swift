internal import DrayEngine
internal import DrayJSON
internal import DrayModel
internal import DrayStore
internal import Foundation
internal import Glibc

/// `dray status JOB.yaml [--runs N]`: recent runs and each step's checkpoint, read without
/// writing anything.
enum StatusCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, options: ["--runs"])
    guard args.positional.count == 1 else { throw UsageError("status takes one manifest: dray status JOB.yaml") }
    guard let manifest = ManifestInput.load(args.positional[0]) else { return ExitCode.usage }
    let limit = try args.values["--runs"].map { text in
      guard let n = Int(text), n > 0 else { throw UsageError("--runs takes a positive number, found '\(text)'") }
      return n
    }
    let path = Runner.journalPath(for: manifest)
    let journal: Journal
    do {
      journal = try Journal(readingAt: path)
    } catch .missing {
      print("job \(manifest.job): no runs yet (no journal at \(path))")
      return ExitCode.success
    } catch {
      DrayCommandLine.printError("dray: \(error)")
      return ExitCode.stepFailed
    }
    print(try text(manifest, journal: journal, limit: limit ?? 10))
    return ExitCode.success
  }

  /// The status report of `manifest`'s job from `journal`.
  static func text(_ manifest: Manifest, journal: Journal, limit: Int) throws -> String {
    let runs = try journal.runs(job: manifest.job, limit: limit)
    var lines = ["job \(manifest.job): \(runs.count) recent run\(runs.count == 1 ? "" : "s") (journal \(journal.path))"]
    for run in runs {
      var line = "  \(run.id)  \(run.status.padding(toLength: 11, withPad: " ", startingAt: 0)) started \(run.startedAt)"
      if let ended = run.endedAt { line += ", ended \(ended)" }
      var notes: [String] = []
      if !run.options.isEmpty { notes.append(run.options) }
      if run.lineage != run.id { notes.append("continues \(run.lineage)") }
      switch run.status {
      case "abandoned": notes.append("process \(run.processID) ended without recording an end")
      case "running":
        notes.append(
          kill(pid_t(run.processID), 0) == 0 || errno == EPERM
            ? "process \(run.processID)" : "process \(run.processID) is gone; the next run marks it abandoned")
      default: break
      }
      if !notes.isEmpty { line += "; " + notes.joined(separator: "; ") }
      lines.append(line)
    }
    let checkpoints = try journal.checkpoints(job: manifest.job)
    lines.append("checkpoints:")
    for step in manifest.allSteps {
      guard let c = checkpoints.first(where: { $0.stepID == step.id }) else {
        lines.append("  \(step.id): none")
        continue
      }
      let changed = c.fingerprint == step.fingerprint(in: manifest) ? "" : " (definition changed since)"
      lines.append(
        "  \(step.id): \(c.status) in run \(c.runID) at \(c.finishedAt)"
          + (c.attempts > 1 ? ", \(c.attempts) attempts" : "") + ", \(c.rows) rows, \(c.bytes) bytes\(changed)"
      )
    }
    return lines.joined(separator: "\n")
  }
}

/// `dray tables DATABASE [--resource R] [--params JSON]`: the SDK's getTablesName (with a
/// resource) or every recorded table (getTableNamesInDatabase).
enum TablesCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, flags: ["--json"], options: ["--resource", "--params", "--table"])
    guard args.positional.count == 1 else {
      throw UsageError("tables takes one database: dray tables DATABASE [--resource NAME] [--params JSON]")
    }
    let path = args.positional[0]
    guard FileManager.default.fileExists(atPath: path) else { throw UsageError("no database at \(path)") }
    let store = try Store(path: path)
    var params = JSONValue.object([])
    if let text = args.values["--params"] {
      do {
        params = try JSONValue(parsing: text)
      } catch {
        throw UsageError("--params must be a JSON object: \(error.message)")
      }
      guard case .object = params else { throw UsageError("--params must be a JSON object, such as '{\"region\":\"EU\"}'") }
    }
    var records = try store.records(resource: args.values["--resource"])
    if args.values["--resource"] != nil {
      records = records.filter { $0.params == params.canonicalJSON }
    }
    if let table = args.values["--table"] { records = records.filter { $0.sourceTable == table } }
    for record in records {
      print(
        "\(record.name)\t\(record.resource)\t\(record.sourceTable)\t\(record.params)\t\(record.rowCount) rows\t\(record.contentVersion ?? "-")"
      )
    }
    return ExitCode.success
  }
}

/// `dray query DATABASE SQL`: the SDK's query answer shape,
/// `{"status":"ok","result":{"database":{"records":[...]}}}`, or `{"status":"error",...}`.
enum QueryCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments)
    guard args.positional.count == 2 else { throw UsageError("query takes a database and SQL: dray query DATABASE 'SELECT ...'") }
    let path = args.positional[0]
    guard FileManager.default.fileExists(atPath: path) else { throw UsageError("no database at \(path)") }
    do {
      let database = try Database(path: path, create: false, readOnly: true)
      let rows = try database.rows(args.positional[1])
      let records = JSONValue.array(rows.map { row in .object(row.map { ($0.0, QueryCommand.json($0.1)) }) })
      print(JSONValue.object([("status", .string("ok")), ("result", .object([("database", .object([("records", records)]))]))]).json)
      return ExitCode.success
    } catch {
      print(JSONValue.object([("status", .string("error")), ("error", .string("\(error)"))]).json)
      return ExitCode.stepFailed
    }
  }

  static func json(_ value: SQLValue) -> JSONValue {
    switch value {
    case .null: .null
    case .integer(let i): .integer(i)
    case .real(let d): d.isFinite ? .number("\(d)") : .null
    case .text(let s): .string(s)
    case .blob(let b): .string(Data(b).base64EncodedString())
    }
  }
}
