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

  @Test func aReportUnderARegularFileIsNamedAsNotWrittenAndTheRunExits1() throws {
    let folder = TemporaryDirectory()
    _ = try folder.write("reports", "a file where the reports' folder should be\n")
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: unwritten
      database: { path: data.sqlite }
      steps:
        - { id: make, sql: CREATE TABLE t(x) }
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
    #expect(try folder.read("reports") == "a file where the reports' folder should be\n")
  }
}
