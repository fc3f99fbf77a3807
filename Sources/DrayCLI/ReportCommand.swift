internal import DrayDatabases
internal import DrayEngine
internal import DrayModel
internal import Foundation

/// `dray report JOB.yaml [--run RUN_ID] [--runs N] [-o FILE.html]`: one HTML page of a run
/// (the newest unless `--run` names one) and the job's last N runs (default 30), read from
/// the journal and the JSON reports without changing them (docs/report.md, "The HTML page").
///
/// Writes the page to `-o FILE`, or beside the run's JSON report (its path with `.json`
/// replaced by `.html`), whole or not at all, and prints its path. Never over a file dray
/// keeps for the job (`KeptPaths.forReports`: the database, the manifest, the lock, the run
/// journal), and only over a page dray wrote (`ReportFiles.writeFile`): a past report or a
/// file of the user's is refused, not replaced. The page holds no secret:
/// it is drawn from the JSON reports, whose free text each run masked before writing them
/// (`RunReport.redacted(by:)`), and from the journal, which holds none. Exits 1 when the
/// page cannot be written, 2 for a wrong command line (a `--run` the job has no run or
/// report of included) or an invalid manifest.
enum ReportCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, options: ["--run", "--runs", "-o"])
    guard args.positional.count == 1 else {
      throw UsageError("report takes one manifest: dray report JOB.yaml [--run RUN_ID] [--runs N] [-o FILE.html]")
    }
    // The page reads the journal and reports only: the job's secrets, and any variable outside
    // the blocks that say where they are, need not be set.
    guard let manifest = ManifestInput.load(args.positional[0], secretsMayBeMissing: true, recordsOnly: true) else {
      return ExitCode.usage
    }
    if let output = args.values["-o"], output.isEmpty || output.hasSuffix("/") {
      throw UsageError(
        "-o takes the page's file, such as -o reports/page.html; '\(output)' \(output.isEmpty ? "is empty" : "names a folder")")
    }
    let limit = try args.values["--runs"].map { try Arguments.positiveCount($0, flag: "--runs") }
    let page = HTMLReport.page(
      manifest, database: Databases.open(manifest), runID: args.values["--run"], runs: limit ?? HTMLReport.defaultRuns)
    // A run the journal's recent runs do not hold and no report names is most likely a typo.
    if let wanted = args.values["--run"], !page.history.contains(where: { $0.id == wanted }),
      !FileManager.default.fileExists(atPath: Runner.reportPath(manifest, runID: wanted))
    {
      let newest = page.history.prefix(3).map(\.id)
      DrayCommandLine.printError(
        "dray: job \(manifest.job) has no run '\(PrintableText.excerpt(wanted))' among its last \(limit ?? HTMLReport.defaultRuns) runs, "
          + "and no report of that name; "
          + (newest.isEmpty
            ? "it has no run yet" : "its newest: \(newest.joined(separator: ", ")); name one, or leave --run out for the newest")
      )
      return ExitCode.usage
    }
    let runID = args.values["--run"] ?? page.history.first?.id
    guard let path = args.values["-o"] ?? runID.map({ htmlPath(manifest, runID: $0) }) else {
      DrayCommandLine.printError(
        "dray: job \(manifest.job) has no run yet, so there is no report to put the page beside; run it first, or name the page with -o FILE.html"
      )
      return ExitCode.stepFailed
    }
    do {
      try ReportFiles.writeFile(
        page.html(), to: path, keeping: KeptPaths.forReports(of: manifest), onlyOverAPageOf: (manifest.job, page.runID))
    } catch {
      DrayCommandLine.printError(
        "dray: the page was not written to \(ReportFiles.display(path)): \(error.reason); \(error.advice(args.values["-o"] == nil ? "report.path" : "-o")), then run again"
      )
      return ExitCode.stepFailed
    }
    print(ReportFiles.display(path))
    return ExitCode.success
  }

  /// The JSON report's path with `.json` replaced by `.html`, as `report.formats: [html]` writes it.
  static func htmlPath(_ manifest: Manifest, runID: String) -> String {
    var withHTML = manifest
    withHTML.report.formats = [.html]
    return withHTML.reportFiles(runID: runID).first { $0.format == .html }?.path ?? ""
  }
}
