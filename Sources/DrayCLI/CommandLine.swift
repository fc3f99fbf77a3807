internal import DrayEngine
internal import DrayManifest
internal import DrayModel
internal import DrayTarget
internal import Foundation
internal import Glibc

/// The `dray` command line: parses arguments, runs a command, returns the exit code.
public enum DrayCommandLine {
  static let usage = """
    dray: a declarative job runner for mobile platform servers and REST APIs

    Usage:
      dray run JOB.yaml [--fresh] [--from STEP] [--only STEP] [--resend STEP] [--quiet | --verbose] [--log-format text|json]
                        [--when-locked exit|succeed|join] [--join [--run-key KEY]] [--record DIR | --replay DIR]
      dray validate JOB.yaml... [--no-credentials]
      dray plan JOB.yaml [--fresh] [--from STEP] [--only STEP] [--resend STEP] [--json]
      dray status JOB.yaml [--runs N]
      dray report JOB.yaml [--run RUN_ID] [--runs N] [-o FILE.html]
      dray tables DATABASE [--schema NAME] [--resource NAME [--params JSON] [--table TABLE]] [--json]
      dray query DATABASE SQL [--schema NAME]
      dray schema
      dray version

    Options:
      --fresh           ignore checkpoints: every step runs again
      --from STEP       run STEP and every step after it
      --only STEP       run STEP alone
      --resend STEP     send STEP's call again although an earlier run sent it without a transaction id
                        and whether the server applied it is unknown (dray never does so unasked)
      --quiet           a good run prints nothing; warnings, errors and a failed run's summary still show
      --verbose         also every attempt of every call, checkpoints and SQL statements
      --log-format F    text (the default) or json (one object per line)
      --when-locked W   what run does when another run holds the job's lock: exit (75, the default)
                        or succeed (0, saying so; for a scheduled start the holder's run covers)
                        or join (the same as --join)
      --join            PostgreSQL: join the run in progress (claim partitions) instead of exiting 75;
                        exits with the run's exit code once it ends
      --run-key KEY     with --join: runners given one key share one run; a key whose run ended
                        exits with that run's code and starts nothing (a Kubernetes Job's UID)
      --record DIR      run also writes every HTTP exchange into DIR, secrets masked (docs/recordings.md)
      --replay DIR      run answers every request from the recording in DIR: no network call, no credentials needed
      --no-credentials  validate accepts unset credentials (auth, bearer, basic, secret headers)
      --json            plan and tables print JSON
      --runs N          status shows the N latest runs (default 10), report charts them (default 30)
      --run RUN_ID      report draws this run (default the newest)
      -o FILE           report writes the page there (default beside the run's JSON report, .html)
      --schema NAME     tables and query: the schema of a PostgreSQL DATABASE (default public)

    DATABASE is an SQLite file or a PostgreSQL URL (postgresql://user@host:port/database;
    the password from PGPASSWORD or ~/.pgpass).

    Paths in a manifest are relative to its folder. `dray COMMAND --help` prints this.
    Exit codes: 0 success, 1 a step failed (or the run's record is incomplete),
    2 invalid manifest or usage, 69 the run failed only because services stayed unavailable
    after its retries (trying again later may succeed), 75 another run of the job is in
    progress, 130 interrupted (SIGINT, SIGTERM, SIGHUP).
    """

  /// Runs `dray` with `arguments` (without the program name).
  /// - Returns: the process exit code.
  public static func main(_ arguments: [String]) -> Int32 {
    // Output to a closed pipe (`dray run job.yaml | head`) must not kill a run before it
    // records its end and writes its report: with SIGPIPE handled, a write fails with EPIPE
    // instead, and the console drops what it cannot write.
    signal(SIGPIPE) { _ in }
    guard let command = arguments.first else {
      printError(usage)
      return ExitCode.usage
    }
    let rest = Array(arguments.dropFirst())
    if rest.contains("--help") || rest.contains("-h") {
      print(usage)
      return ExitCode.success
    }
    do {
      switch command {
      case "run": return try RunCommand.main(rest)
      case "validate": return try ValidateCommand.main(rest)
      case "plan": return try PlanCommand.main(rest)
      case "schema": return try SchemaCommand.main(rest)
      case "status": return try StatusCommand.main(rest)
      case "report": return try ReportCommand.main(rest)
      case "tables": return try TablesCommand.main(rest)
      case "query": return try QueryCommand.main(rest)
      case "version", "--version": return try VersionCommand.main(rest)
      case "help", "--help", "-h":
        print(usage)
        return ExitCode.success
      default:
        let commands = ["run", "validate", "plan", "status", "report", "tables", "query", "schema", "version"]
        throw UsageError(
          "unknown command '\(PrintableText.excerpt(command))'"
            + (EditDistance.closest(to: command, among: commands).map { "; did you mean '\($0)'? Commands: " } ?? "; commands: ")
            + commands.joined(separator: ", "))
      }
    } catch let error as UsageError {
      printError("dray: \(error.message)\nRun 'dray help' for usage.")
      return ExitCode.usage
    } catch {
      printError("dray: \(error)")
      return ExitCode.stepFailed
    }
  }

  static func printError(_ text: String) {
    try? FileHandle.standardError.write(contentsOf: Data((text + "\n").utf8))
  }
}

/// A command line that does not parse.
struct UsageError: Error {
  var message: String
  init(_ message: String) { self.message = message }
}

/// Flags and positional arguments of one command.
struct Arguments {
  var positional: [String] = []
  var flags: Set<String> = []
  var values: [String: String] = [:]

  /// Parses `arguments`; `flags` take no value, `options` take one (`--name value` or
  /// `--name=value`).
  init(_ arguments: [String], flags known: Set<String> = [], options: Set<String> = []) throws(UsageError) {
    var index = 0
    var onlyPositional = false
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if onlyPositional || !argument.hasPrefix("-") || argument == "-" {
        positional.append(argument)
        continue
      }
      if argument == "--" {
        onlyPositional = true
        continue
      }
      var name = argument
      var value: String?
      if let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
      }
      if known.contains(name) {
        guard value == nil else { throw UsageError("\(name) takes no value") }
        flags.insert(name)
      } else if options.contains(name) {
        if value == nil {
          guard index < arguments.count else { throw UsageError("\(name) needs a value") }
          value = arguments[index]
          index += 1
        }
        guard values[name] == nil else { throw UsageError("\(name) is given twice; give it once") }
        values[name] = value
      } else {
        let all = (known.union(options)).sorted()
        let closest = EditDistance.closest(to: name, among: all).map { "; did you mean '\($0)'?" } ?? ""
        throw UsageError(
          "unknown option '\(PrintableText.excerpt(name))'" + closest
            + (all.isEmpty ? "" : (closest.isEmpty ? "; options: " : " Options: ") + all.joined(separator: ", ")))
      }
    }
  }
}

extension Arguments {
  /// `--fresh`, `--from STEP` and `--only STEP` of `run` and `plan`, the step checked among
  /// `ids` (the job's top-level steps).
  /// - Throws: `UsageError` naming a step that is not there, with the closest and the list.
  func runFlags(steps ids: [String]) throws -> RunFlags {
    for option in ["--from", "--only", "--resend"] {
      if let id = values[option], !ids.contains(id) {
        throw UsageError(
          "\(option) \(PrintableText.excerpt(id)): no such step"
            + (EditDistance.closest(to: id, among: ids).map { "; did you mean '\($0)'? Steps: " } ?? "; steps: ")
            + ids.joined(separator: ", "))
      }
    }
    return RunFlags(fresh: flags.contains("--fresh"), from: values["--from"], only: values["--only"], resend: values["--resend"])
  }
}

extension Arguments {
  /// `text` as a count of at least 1 (`--runs 30`).
  /// - Throws: `UsageError` for text that is no whole number, one below 1, or one past
  ///   `Int.max` (saying it is too large, and the largest).
  static func positiveCount(_ text: String, flag: String) throws(UsageError) -> Int {
    if let n = Int(text), n > 0 { return n }
    let shown = PrintableText.excerpt(text)
    let digits = text.hasPrefix("+") ? text.dropFirst() : Substring(text)
    if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.contains(where: { $0 != "0" }) {
      throw UsageError("\(flag) \(shown) is too large: the largest it takes is \(Int.max)")
    }
    throw UsageError("\(flag) takes a positive number, found '\(shown)'")
  }
}

/// Loads a manifest or prints its diagnostics.
enum ManifestInput {
  /// - Returns: the manifest, or nil after printing every problem to standard error.
  /// - Parameters:
  ///   - secretsMayBeMissing: whether credentials may be unresolved
  ///     (`ManifestLoader.secretsMayBeMissing`), for commands that never sign in.
  ///   - recordsOnly: read only where the job keeps its records (`ManifestLoader.recordsOnly`),
  ///     for commands that read the journal and the reports; a problem there is said to be
  ///     in what the command needs.
  static func load(_ path: String, secretsMayBeMissing: Bool = false, recordsOnly: Bool = false) -> Manifest? {
    var loader = ManifestLoader()
    loader.secretsMayBeMissing = secretsMayBeMissing
    loader.recordsOnly = recordsOnly
    do {
      let manifest = try loader.load(path: path)
      for warning in manifest.warnings { DrayCommandLine.printError(warning) }
      return manifest
    } catch {
      DrayCommandLine.printError(error.description)
      let count = error.diagnostics.count
      let errors = "\(count) error\(count == 1 ? "" : "s")"
      DrayCommandLine.printError(
        recordsOnly
          ? "\(path): \(errors) in what this command reads to find the job's journal and reports (version, job, database, state, download, report); nothing was read"
          : "\(path): \(errors); nothing was run")
      return nil
    }
  }
}
