import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Devices, FIFOs and folders named where dray writes or reads a file, through the built
/// binary: each refused by name with its kind, nothing replaced, no hang.
@Suite struct SpecialFileCommandTests {
  static func name(_ kind: mode_t) -> String {
    kind == S_IFIFO ? "a FIFO (named pipe)" : kind == S_IFCHR ? "a character device" : "a folder"
  }

  static func make(_ kind: mode_t, in folder: TemporaryDirectory, _ name: String) throws -> String {
    let path = folder.path + "/" + name
    if kind == S_IFDIR {
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    } else {
      try SpecialFile.make(kind, at: path)
    }
    return path
  }

  @Test(arguments: [S_IFIFO, S_IFCHR, S_IFDIR])
  func validationRefusesADatabaseReportOrOutputThatIsNotAFile(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let database = try Self.make(kind, in: folder, "mynull")
    let report = try Self.make(kind, in: folder, "run.json")
    let output = try Self.make(kind, in: folder, "rows.csv")
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: special
      database: { path: mynull }
      steps:
        - { id: rows, query: { sql: SELECT 1 AS n, output: rows.csv, format: csv } }
      report: { path: run.json }
      """)
    for arguments in [["run", job], ["run", "--fresh", job], ["validate", job]] {
      let result = try Command.dray(arguments)
      #expect(result.status == 2, "\(result.output)")
      let what = Self.name(kind)
      let lines = result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix(job + ":") }
      #expect(
        lines == [
          "\(job):3:19: error: 'database.path': 'mynull' is \(what), not an SQLite database file; dray neither opens nor replaces it: name a regular file or a new path",
          "\(job):5:54: error: 'steps.rows.query.output': 'rows.csv' is \(what), not a regular file; a step writes its output only as a new file or over a regular file: remove it or name another file",
          "\(job):6:17: error: 'report.path': 'run.json' is \(what), not a regular file; dray replaces only a regular file: move it aside or name another file",
          "\(job): 3 errors; nothing was run",
        ], "\(result.stderr)")
    }
    for path in [database, report, output] { #expect(SpecialFile.type(path) == kind) }
  }

  @Test(arguments: [S_IFIFO, S_IFCHR, S_IFDIR])
  func queryAndTablesSayTheDatabaseIsNotAFile(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let path = try Self.make(kind, in: folder, "db")
    let message = "\(path) is \(Self.name(kind)), not an SQLite database file; name the job's database file (database.path in its manifest)"
    let query = try Command.dray(["query", path, "SELECT 1"])
    #expect(query.status == 1)
    #expect(query.stdout == "{\"status\":\"error\",\"error\":\"\(message)\"}\n", "\(query.output)")
    let tables = try Command.dray(["tables", path])
    #expect(tables.status == 1)
    #expect(tables.stderr == "dray: \(message)\n")
    #expect(SpecialFile.type(path) == kind)
  }

  /// A file that is not a database (a manifest given in its place) is refused before SQLite
  /// opens it: `SELECT 1` reads no page and would answer as if it were one.
  @Test func queryAndTablesSayAFileThatIsNotADatabaseIsNotOne() throws {
    let folder = TemporaryDirectory()
    let manifest = try folder.write("job.yaml", "version: 1\njob: j\ndatabase: { path: data.sqlite }\n")
    let message =
      "\(manifest) is not an SQLite database (it does not start with SQLite's header); it looks like a manifest; name the job's database file (database.path in its manifest)"
    let query = try Command.dray(["query", manifest, "SELECT 1"])
    #expect(query.status == 1)
    #expect(query.stdout == "{\"status\":\"error\",\"error\":\"\(message)\"}\n", "\(query.output)")
    let tables = try Command.dray(["tables", manifest])
    #expect(tables.status == 1)
    #expect(tables.stderr == "dray: \(message)\n")
    // An empty file is an empty database.
    let empty = try folder.write("empty.sqlite", "")
    #expect(try Command.dray(["query", empty, "SELECT 1 AS one"]).stdout.contains(#"[{"one":1}]"#))
  }

  @Test func aReportUnderARegularFileIsNamedAsNotWrittenAndTheRunExits1() throws {
    let folder = TemporaryDirectory()
    // Validation refuses a file where the reports' folder should be (UncreatablePathTests);
    // here the run itself writes one, after validation.
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: unwritten
      database: { path: data.sqlite }
      steps:
        - { id: make, sql: CREATE TABLE t(x) }
        - { id: block, query: { sql: SELECT 1 AS n, output: reports, format: csv } }
      report: { path: "reports/{job}-{run_id}.json" }
      """)
    let result = try Command.dray(["run", job])
    #expect(result.status == 1, "\(result.output)")
    #expect(result.stderr.contains("error: the json report was not written to \(folder.path)/reports/unwritten-"), "\(result.stderr)")
    #expect(
      result.stderr.contains(
        ".json: \(folder.path)/reports is not a folder: Not a directory; name a file in a folder this user may write, with room on its disk (report.path), then run again"
      ))
    #expect(!result.stderr.contains("NSCocoaErrorDomain"))
    #expect(result.stdout.hasPrefix("job unwritten: succeeded"))
    #expect(result.stdout.contains("\nerror: the run's record is incomplete: \(folder.path)/reports/unwritten-"))
    #expect(!result.stdout.contains("\nreport: "), "\(result.stdout)")
    #expect(try folder.read("reports") == "n\r\n1\r\n")
  }
}

/// A manifest, or a file it reads, that is not a regular file is named for what it is,
/// and never read: a FIFO would keep `dray` waiting for a writer forever.
@Suite struct SpecialManifestTests {
  @Test(arguments: [S_IFIFO, S_IFCHR])
  func aManifestThatIsNotARegularFileIsNamedAndNeverRead(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let path = try SpecialFileCommandTests.make(kind, in: folder, "job.yaml")
    for arguments in [["validate", path], ["run", path], ["plan", path]] {
      let result = try Command.dray(arguments)
      #expect(result.status == 2)
      #expect(
        result.stderr.hasPrefix(
          "\(path):1:1: error: cannot open manifest: it is \(SpecialFileCommandTests.name(kind)); a manifest must be a regular file\n"),
        "\(result.stderr)")
    }
    let null = try Command.dray(["validate", "/dev/null"])
    #expect(
      null.stderr.hasPrefix("/dev/null:1:1: error: cannot open manifest: it is a character device; a manifest must be a regular file\n"))
  }

  @Test func aSecretFileThatIsNotARegularFileIsNamedAndNeverRead() throws {
    let folder = TemporaryDirectory()
    _ = try SpecialFileCommandTests.make(S_IFIFO, in: folder, "secret")
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: fifo
      description: "${file:secret}"
      platform: { host: "http://127.0.0.1:9/", environment: E, project: P }
      auth: { username: u, password_file: secret }
      database: { path: db.sqlite }
      steps:
        - id: get
          http: { base_url: "http://127.0.0.1:9/", auth: { bearer_file: secret } }
      """)
    let result = try Command.dray(["validate", job])
    #expect(result.status == 2)
    let lines = result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix(job + ":") }
    #expect(
      lines == [
        "\(job):3:14: error: 'description': 'secret' named by ${file:secret} is a FIFO (named pipe), not a regular file; name a regular file",
        "\(job):5:37: error: 'auth.password_file': 'secret' is a FIFO (named pipe), not a regular file; a secret file must be a regular file",
        "\(job):9:67: error: 'steps.get.http.auth.bearer_file': 'secret' is a FIFO (named pipe), not a regular file; a secret file must be a regular file",
        "\(job): 3 errors; nothing was run",
      ], "\(result.stderr)")
  }
}

/// Validation refuses every path a run would fail to create: a database or report path
/// that names a folder by its form, and any path under something that is not a folder.
@Suite struct UncreatablePathTests {
  @Test func validationRefusesWhatARunCouldNotCreate() throws {
    let folder = TemporaryDirectory()
    _ = try folder.write("afile", "not a folder")
    let cases: [(String, String)] = [
      (
        "database: { path: data/ }",
        "3:19: error: 'database.path': 'data/' ends in '/', so it names a folder; name the SQLite file, such as 'data/job.sqlite'"
      ),
      (
        "database: { path: data/.. }",
        "3:19: error: 'database.path': 'data/..' ends in '..', so it names a folder; name the SQLite file, such as 'data/../job.sqlite'"
      ),
      (
        "database: { path: afile/db.sqlite }",
        "3:19: error: 'database.path': 'afile/db.sqlite' cannot be created: \(folder.path)/afile is a regular file, not a folder; move it aside or name another path"
      ),
      (
        "database: { path: d.sqlite }\nreport: { path: reports/ }",
        "4:17: error: 'report.path': 'reports/' ends in '/', so it names a folder; name the report file, such as 'reports/{job}-{run_id}.json'"
      ),
      (
        "database: { path: d.sqlite }\nreport: { path: \"afile/{run_id}.json\" }",
        "4:17: error: 'report.path': 'afile/{run_id}.json' cannot be created: \(folder.path)/afile is a regular file, not a folder; move it aside or name another path"
      ),
      (
        "database: { path: d.sqlite }\nstate: { path: afile }",
        "4:16: error: 'state.path': 'afile' cannot be created: \(folder.path)/afile is a regular file, not a folder; move it aside or name another path"
      ),
      (
        "database: { path: d.sqlite }\ndownload: { path: afile/downloads }",
        "4:19: error: 'download.path': 'afile/downloads' cannot be created: \(folder.path)/afile is a regular file, not a folder; move it aside or name another path"
      ),
      (
        "database: { path: d.sqlite }\nsteps:\n  - { id: q, query: { sql: SELECT 1, output: out/. } }",
        "5:46: error: 'steps.q.query.output': 'out/.' ends in '.', so it names a folder; name the file to write, such as 'out/./rows.json'"
      ),
      (
        "database: { path: d.sqlite }\nsteps:\n  - { id: q, query: { sql: SELECT 1, output: afile/rows.json } }",
        "5:46: error: 'steps.q.query.output': 'afile/rows.json' cannot be created: \(folder.path)/afile is a regular file, not a folder; move it aside or name another path"
      ),
    ]
    for (block, message) in cases {
      let steps = block.contains("steps:") ? "" : "\nsteps:\n  - { id: s, sql: SELECT 1 }"
      let job = try folder.write("job.yaml", "version: 1\njob: paths\n\(block)\(steps)\n")
      for command in ["validate", "run"] {
        let result = try Command.dray([command, job])
        #expect(result.status == 2, "\(block): \(result.output)")
        let lines = result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix(job + ":") }
        #expect(lines == ["\(job):\(message)", "\(job): 1 error; nothing was run"], "\(block)")
      }
    }
  }
}
