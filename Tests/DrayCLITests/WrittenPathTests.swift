import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Paths a user points dray at for it to write: `dray report -o`, and `report.path` with its
/// formats, run as the built binary. None may land on a file dray keeps for the job (the
/// database and its files, the manifest, the lock, the run journal), however it is named:
/// `./x`, through `..`, through a symbolic link, by a hard link. `-o` replaces only a page
/// dray wrote. (The step outputs' side of the rule: `PathSafetyTests`.) The rules that name
/// no database file run on both targets (the journal that `dray report` reads is in the
/// target); those of the database's own files, and of the journal file of a job without a
/// database, are SQLite's: a PostgreSQL target has no file in the job folder.
@Suite struct WrittenPathTests {
  /// A job that needs no server: one `sql` step, every report format, run once.
  struct Job {
    let folder = TemporaryDirectory("dray-written")
    var manifest: String { folder.path + "/job.yaml" }
    /// The run's JSON report, relative to the job folder.
    let report: String

    init(_ kind: TargetDatabase.Kind = .sqlite) throws {
      let target = try TargetDatabase(kind, folder: folder.path)
      try folder.write(
        "job.yaml",
        """
        version: 1
        job: nightly
        \(target.manifestBlock)steps:
          - id: cheap
            sql: CREATE TABLE IF NOT EXISTS cheap(name TEXT);
        report:
          path: "reports/{job}-{run_id}.json"
          formats: [json, junit, prometheus, html]

        """)
      let run = try Command.dray(["run", folder.path + "/job.yaml", "--quiet"])
      #expect(run.status == 0, "\(run.output)")
      let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/reports")
      report = "reports/" + (try #require(reports.first { $0.hasSuffix(".json") }))
    }

    /// Every regular file under the folder with its bytes (links are not followed).
    func files() -> [String: Data] {
      var files: [String: Data] = [:]
      let enumerator = FileManager.default.enumerator(atPath: folder.path)
      while let name = enumerator?.nextObject() as? String {
        let path = folder.path + "/" + name
        guard let kind = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType,
          kind == .typeRegular
        else { continue }
        files[name] = FileManager.default.contents(atPath: path)
      }
      return files
    }

    /// `dray report -o target`, run in the job folder.
    func page(_ target: String) throws -> Command.Result {
      try Command.dray(["report", "job.yaml", "-o", target], directory: folder.path)
    }

    /// `dray report -o target` is refused, exit 1, with `reason`, and no file changes (reading
    /// the database in WAL mode may add its `-wal` and `-shm` files).
    func expectRefused(_ target: String, _ reason: String, _ advice: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
      let before = files()
      let result = try page(target)
      // As typed, or relative to the current folder (the job folder) when absolute.
      let shown = target.hasPrefix(folder.path + "/") ? String(target.dropFirst(folder.path.count + 1)) : target
      #expect(result.status == 1, "\(target): \(result.output)", sourceLocation: sourceLocation)
      #expect(
        result.stderr == "dray: the page was not written to \(shown): \(reason); \(advice), then run again\n",
        sourceLocation: sourceLocation)
      #expect(result.stdout == "", sourceLocation: sourceLocation)
      let after = files()
      for (name, bytes) in before { #expect(after[name] == bytes, "\(target) changed \(name)", sourceLocation: sourceLocation) }
      let database = TargetDatabase.sqlitePath
      let added = Set(after.keys).subtracting(before.keys).subtracting([database + "-wal", database + "-shm"])
      #expect(added.isEmpty, "\(target) wrote \(added.sorted())", sourceLocation: sourceLocation)
    }
  }

  static let keptAdvice = "a report never overwrites the files dray keeps for the job; name another file (-o)"
  static let notPageAdvice = "name a new file, or move that one aside (-o)"
  static let notPage = "a file is there that is not a page dray wrote, and dray report replaces only its own pages"

  @Test func reportOutputNeverLandsOnTheJobsOwnFiles() throws {
    let job = try Job()
    for target in ["data/db.sqlite", "./data/db.sqlite", "data//db.sqlite", "data/../data/db.sqlite", job.folder.path + "/data/db.sqlite"] {
      try job.expectRefused(target, "it is the job's database (database.path)", Self.keptAdvice)
    }
    try job.expectRefused("data/db.sqlite-wal", "it is a file of the job's database (database.path)", Self.keptAdvice)
    try job.expectRefused("job.yaml", "it is the job's manifest", Self.keptAdvice)
    try job.expectRefused(".dray/nightly.lock", "it is the job's lock file (state.path)", Self.keptAdvice)
    // A folder that is a symbolic link, and `..` out of one: the kernel's reading of the path.
    try FileManager.default.createSymbolicLink(atPath: job.folder.path + "/via", withDestinationPath: "data")
    try job.expectRefused("via/db.sqlite", "it is the job's database (database.path)", Self.keptAdvice)
    try FileManager.default.createDirectory(atPath: job.folder.path + "/data/sub", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: job.folder.path + "/deep", withDestinationPath: "data/sub")
    try job.expectRefused("deep/../db.sqlite", "it is the job's database (database.path)", Self.keptAdvice)
    // Another name for the same file: a hard link.
    #expect(link(job.folder.path + "/data/db.sqlite", job.folder.path + "/copy.sqlite") == 0)
    try job.expectRefused(
      "copy.sqlite",
      "it is the job's database (database.path), by another name (a hard link, or a name the file system does not tell apart)",
      Self.keptAdvice)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func reportOutputReplacesOnlyAPageDrayWrote(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    // Past reports of every format, a file of the user's, a link to one: none is a page.
    let junit = String(job.report.dropLast(5)) + ".junit.xml"
    for target in [job.report, junit, "reports/nightly.prom", "./" + job.report] {
      try job.expectRefused(target, Self.notPage, Self.notPageAdvice)
    }
    try job.folder.write("notes.html", "<p>mine</p>\n")
    try job.expectRefused("notes.html", Self.notPage, Self.notPageAdvice)
    try FileManager.default.createSymbolicLink(atPath: job.folder.path + "/page.html", withDestinationPath: "notes.html")
    try job.expectRefused("page.html", "a symbolic link is there, and dray report replaces only its own pages", Self.notPageAdvice)

    // A new file, then the same file again: the page dray wrote is replaced.
    for _ in 0..<2 {
      let written = try job.page("out/page.html")
      #expect(written.status == 0, "\(written.output)")
      #expect(written.stdout == "out/page.html\n")
      #expect(try job.folder.read("out/page.html").hasPrefix("<!DOCTYPE html>\n"))
    }
    // The run's own page beside its report (report.formats: [html]) is dray's too.
    let html = String(job.report.dropLast(5)) + ".html"
    let again = try job.page(html)
    #expect(again.status == 0, "\(again.output)")
    guard kind == .sqlite else { return }
    // Names differ by case on a file system that tells them apart: a new file.
    let database = job.files()["data/db.sqlite"]
    let upper = try job.page("data/DB.sqlite")
    #expect(upper.status == 0, "\(upper.output)")
    #expect(job.files()["data/db.sqlite"] == database)
  }

  @Test func reportOutputNeverReplacesTheRunJournalOfAJobWithoutADatabase() throws {
    let folder = TemporaryDirectory("dray-written")
    let emulator = try Emulator()
    try folder.write(
      "job.yaml",
      JobText.header(job: "plain", emulator: emulator) + """
        steps:
          - id: fruits
            table: { resource: FRUITS, output: out/fruits.json }

        """)
    let run = try Command.dray(["run", "job.yaml", "--quiet"], directory: folder.path)
    #expect(run.status == 0, "\(run.output)")
    let journal = FileManager.default.contents(atPath: folder.path + "/.dray/plain.journal.sqlite")
    let result = try Command.dray(["report", "job.yaml", "-o", ".dray/plain.journal.sqlite"], directory: folder.path)
    #expect(result.status == 1)
    #expect(
      result.stderr
        == "dray: the page was not written to .dray/plain.journal.sqlite: it is the job's run journal (state.path); \(Self.keptAdvice), then run again\n"
    )
    #expect(FileManager.default.contents(atPath: folder.path + "/.dray/plain.journal.sqlite") == journal)
  }

  /// Every other writer a manifest points: a step's `output` (`query`, `table`, `request`) and
  /// `local` (`files get`), and `report.path`. A folder that is a symbolic link into the
  /// database's folder, or a hard link to the database, is refused when the run writes, the
  /// step failing with `path_refused` (the report: named on standard error, exit 1); a name
  /// that differs by case is another file on this file system.
  @Test func stepOutputsAndReportsNeverLandOnTheJobsFilesByAnotherName() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-written")
    let header = JobText.header(job: "nightly", emulator: emulator, database: "data/db.sqlite")
    try folder.write("job.yaml", header + "steps:\n  - id: fruits\n    table_stream: { resource: FRUITS }\n")
    let first = try Command.dray(["run", "job.yaml", "--quiet"], directory: folder.path)
    #expect(first.status == 0, "\(first.output)")
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/via", withDestinationPath: "data")
    #expect(link(folder.path + "/data/db.sqlite", folder.path + "/copy.sqlite") == 0)
    // The runs write their journal into the database: what must hold is that it stays one,
    // with the table loaded first.
    func intact() throws -> Bool {
      try Command.dray(["tables", "data/db.sqlite"], directory: folder.path).stdout == "FRUITS__output_table\n"
    }
    let steps: [(kind: String, step: (String) -> String)] = [
      ("query", { "query: { sql: SELECT 1 AS n, output: \"\($0)\" }" }),
      ("table", { "table: { resource: FRUITS, output: \"\($0)\" }" }),
      ("request", { "request: { resource: FRUITS, output: \"\($0)\" }" }),
      ("files", { "files: { connection: nfs4, action: get, path: file.txt, local: \"\($0)\" }" }),
    ]
    for (kind, step) in steps {
      for (target, what) in [
        ("via/db.sqlite", "it is the job's database (database.path)"),
        (
          "copy.sqlite",
          "it is the job's database (database.path), by another name (a hard link, or a name the file system does not tell apart)"
        ),
      ] {
        try folder.write("step.yaml", header + "steps:\n  - id: write\n    \(step(target))\n")
        let run = try Command.dray(["run", "step.yaml", "--quiet"], directory: folder.path)
        #expect(run.status == 1, "\(kind) \(target): \(run.output)")
        let key = kind == "files" ? "local" : "output"
        #expect(
          run.stderr.contains(
            "refused \(key) '\(target)': \(what); a step may not write the files dray keeps for the job"),
          "\(kind) \(target): \(run.stderr)")
        #expect(try intact(), "\(kind) \(target)")
      }
    }
    // Another name by case: another file here (ext4 tells them apart).
    try folder.write("case.yaml", header + "steps:\n  - id: write\n    query: { sql: SELECT 1 AS n, output: data/DB.sqlite }\n")
    let upper = try Command.dray(["run", "case.yaml", "--quiet"], directory: folder.path)
    #expect(upper.status == 0, "\(upper.output)")
    #expect(try intact())

    // The run's JSON report through the link: the database; through a hard link: the same.
    for (target, what) in [
      ("via/db.sqlite", "it is the job's database (database.path)"),
      (
        "copy.sqlite",
        "it is the job's database (database.path), by another name (a hard link, or a name the file system does not tell apart)"
      ),
    ] {
      try folder.write(
        "report.yaml",
        header + "steps:\n  - id: note\n    sql: SELECT 1;\nreport: { path: \"\(target)\", formats: [json, junit, prometheus] }\n")
      let run = try Command.dray(["run", "report.yaml", "--quiet"], directory: folder.path)
      #expect(run.status == 1, "report \(target): \(run.output)")
      #expect(
        run.stderr.contains(
          "the json report was not written to \(target): \(what); a report never overwrites the files dray keeps for the job; name another file (report.path), then run again"
        ), "\(run.stderr)")
      #expect(try intact(), "report \(target)")
    }
  }

  /// A past run's report is the job's too: a path of `report.path`'s pattern (`{job}` and
  /// `{run_id}` filled with any value) that exists, or of its JUnit and HTML siblings, is
  /// refused to a step's `output` and `local` (the step fails, `path_refused`); a path of the pattern that
  /// does not exist yet is free.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func stepOutputsNeverLandOnAPastReport(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-written")
    let target = try TargetDatabase(kind, folder: folder.path)
    let header =
      JobText.header(job: "nightly", emulator: emulator) + target.manifestBlock
      + "report: { path: \"reports/{job}-{run_id}.json\", formats: [json, junit, prometheus, html] }\n"
    try folder.write("job.yaml", header + "steps:\n  - id: note\n    sql: SELECT 1;\n")
    let first = try Command.dray(["run", "job.yaml", "--quiet"], directory: folder.path)
    #expect(first.status == 0, "\(first.output)")
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/reports")
    let json = "reports/" + (try #require(reports.first { $0.hasSuffix(".json") }))
    let stem = String(json.dropLast(5))
    let past: [(path: String, what: String)] = [
      (json, "a past run's report (report.path)"),
      (stem + ".junit.xml", "a past run's JUnit report (report.formats)"),
      (stem + ".html", "a past run's HTML page (report.formats)"),
    ]
    let steps: [(key: String, step: (String) -> String)] = [
      ("output", { "query: { sql: SELECT 1 AS n, output: \"\($0)\" }" }),
      ("local", { "files: { connection: nfs4, action: get, path: file.txt, local: \"\($0)\" }" }),
    ]
    for (key, step) in steps {
      for (target, what) in past {
        let before = FileManager.default.contents(atPath: folder.path + "/" + target)
        try folder.write("step.yaml", header + "steps:\n  - id: write\n    \(step(target))\n")
        let run = try Command.dray(["run", "step.yaml", "--quiet"], directory: folder.path)
        #expect(run.status == 1, "\(key) \(target): \(run.output)")
        #expect(
          run.stderr.contains("refused \(key) '\(target)': it is \(what); a step may not write the files dray keeps for the job"),
          "\(key) \(target): \(run.stderr)")
        #expect(FileManager.default.contents(atPath: folder.path + "/" + target) == before, "\(key) \(target)")
      }
    }
    // A name of the pattern that is no report yet is the user's to write.
    try folder.write("free.yaml", header + "steps:\n  - id: write\n    query: { sql: SELECT 1 AS n, output: reports/nightly-mine.json }\n")
    let free = try Command.dray(["run", "free.yaml", "--quiet"], directory: folder.path)
    #expect(free.status == 0, "\(free.output)")
  }

  /// A page dray wrote of one run is never replaced by a page of another run (nor of another
  /// job); a page of the same run is.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func reportOutputNeverReplacesThePageOfAnotherRun(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    let html = String(job.report.dropLast(5)) + ".html"
    let firstRun = String(html.dropFirst("reports/nightly-".count).dropLast(5))
    let second = try Command.dray(["run", "job.yaml", "--quiet"], directory: job.folder.path)
    #expect(second.status == 0, "\(second.output)")
    // The newest run's page over the first run's page: refused.
    try job.expectRefused(
      html,
      "the page of run \(firstRun) of job nightly is there, and dray report replaces a page only with a page of the same job and run",
      Self.notPageAdvice)
    // The first run's page again: replaced.
    let same = try Command.dray(["report", "job.yaml", "--run", firstRun, "-o", html], directory: job.folder.path)
    #expect(same.status == 0, "\(same.output)")
    #expect(same.stdout == html + "\n")
  }

  /// `-o` takes the page's file: an empty path or a folder is a usage error (exit 2); a
  /// missing folder on the way is created, as for `report.path`.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func reportOutputNamesAFile(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    for target in ["", "out/newdir/"] {
      let result = try job.page(target)
      #expect(result.status == 2, "\(target): \(result.output)")
      #expect(
        result.stderr
          == "dray: -o takes the page's file, such as -o reports/page.html; '\(target)' \(target.isEmpty ? "is empty" : "names a folder")\nRun 'dray help' for usage.\n"
      )
      #expect(!FileManager.default.fileExists(atPath: job.folder.path + "/out"))
    }
    let created = try job.page("out/newdir/page.html")
    #expect(created.status == 0, "\(created.output)")
    #expect(try job.folder.read("out/newdir/page.html").hasPrefix("<!DOCTYPE html>\n"))
  }

  /// `files get` into a `local` that is an existing folder: the manifest's error names the
  /// way to put the file inside it, `local: in/` (the run's own check says the same:
  /// `JobFolder.output`).
  @Test func filesGetIntoAFolderSuggestsTheSlash() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-written")
    try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
    try folder.write(
      "job.yaml",
      JobText.header(job: "nightly", emulator: emulator)
        + "steps:\n  - id: get\n    files: { connection: nfs4, action: get, path: file.txt, local: in }\n")
    let run = try Command.dray(["run", "job.yaml", "--quiet"], directory: folder.path)
    #expect(run.status == 2, "\(run.output)")
    #expect(
      run.stderr.hasPrefix(
        "job.yaml:8:68: error: 'steps.get.files.local': 'in' is a folder, not a regular file; to put the file inside the folder, end the path with a slash: local: in/\n"
      ), "\(run.stderr)")
  }
}
