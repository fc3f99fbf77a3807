import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A device, a FIFO or a folder where a run writes a file, made after the manifest was
/// validated (so only the run's own checks stand between it and the file): refused by name,
/// never replaced, never opened.
@Suite struct SpecialFileTests {
  static func load(_ folder: TemporaryDirectory, _ text: String) throws -> Manifest {
    let path = try folder.write("job.yaml", text)
    return try ManifestLoader().load(path: path)
  }

  static func run(_ manifest: Manifest, fresh: Bool = false) -> RunReport {
    Runner(manifest: manifest, options: RunFlags(fresh: fresh), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  @Test(arguments: [S_IFIFO, S_IFCHR])
  func aDatabaseThatIsNotAFileFailsTheRunBeforeAnyStepAndStaysAsItWas(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let manifest = try Self.load(
      folder,
      """
      version: 1
      job: special
      database: { path: data.sqlite }
      steps:
        - { id: make, sql: CREATE TABLE t(x) }
      """)
    let database = folder.path + "/data.sqlite"
    try SpecialFile.make(kind, at: database)
    // Twice: a plain run, then with --fresh (which once replaced the node with a new journal).
    for fresh in [false, true] {
      let report = Self.run(manifest, fresh: fresh)
      #expect(report.exitCode == 1)
      let what = kind == S_IFIFO ? "a FIFO (named pipe)" : "a character device"
      #expect(
        report.errorMessage
          == "the run journal at \(database) is \(what), not an SQLite database file; dray neither opens nor replaces it: point database.path (or state.path, for a job without a database) at a regular file or a new path, or move it aside, then run again"
      )
      #expect(report.steps.map(\.status) == [.notRun])
      #expect(SpecialFile.type(database) == kind)
    }
  }

  @Test func aDatabaseThatIsAFolderIsNotCalledCutOff() throws {
    let folder = TemporaryDirectory()
    let manifest = try Self.load(
      folder, "version: 1\njob: special\ndatabase: { path: data.sqlite }\nsteps:\n  - { id: make, sql: CREATE TABLE t(x) }\n")
    try FileManager.default.createDirectory(atPath: folder.path + "/data.sqlite", withIntermediateDirectories: false)
    let report = Self.run(manifest)
    #expect(report.exitCode == 1)
    #expect(report.errorMessage?.contains("is a folder, not an SQLite database file") == true, "\(report.errorMessage ?? "")")
    #expect(SpecialFile.type(folder.path + "/data.sqlite") == S_IFDIR)
  }

  @Test(arguments: [S_IFIFO, S_IFCHR])
  func aStepOutputThatIsNotAFileFailsTheStepAndStaysAsItWas(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let manifest = try Self.load(
      folder,
      """
      version: 1
      job: special
      database: { path: data.sqlite }
      steps:
        - { id: rows, query: { sql: SELECT 1 AS n, output: out/rows.json } }
      """)
    try FileManager.default.createDirectory(atPath: folder.path + "/out", withIntermediateDirectories: false)
    try SpecialFile.make(kind, at: folder.path + "/out/rows.json")
    let report = Self.run(manifest)
    #expect(report.exitCode == 1)
    let step = try #require(report.steps.first)
    #expect(step.status == .failed)
    let what = kind == S_IFIFO ? "a FIFO (named pipe)" : "a character device"
    #expect(
      step.errorMessage?.contains(
        "output 'out/rows.json': it is \(what), not a regular file; dray writes a step's output only as a new file or over a regular file"
      ) == true, "\(step.errorMessage ?? "")")
    #expect(SpecialFile.type(folder.path + "/out/rows.json") == kind)
  }

  @Test(arguments: [S_IFIFO, S_IFCHR])
  func aReportThatIsNotAFileIsNotWrittenAndTheRunExits1(kind: mode_t) throws {
    let folder = TemporaryDirectory()
    let manifest = try Self.load(
      folder,
      """
      version: 1
      job: special
      database: { path: data.sqlite }
      steps:
        - { id: make, sql: CREATE TABLE t(x) }
      report: { path: run.json, formats: [json, junit, prometheus] }
      """)
    let path = folder.path + "/run.json"
    let textfile = folder.path + "/special.prom"
    try SpecialFile.make(kind, at: path)
    // The textfile is read for the last success before it is written: a FIFO must not block it.
    try SpecialFile.make(kind, at: textfile)
    let report = Self.run(manifest)
    #expect(report.status == .succeeded)
    #expect(report.exitCode == 1)
    #expect(report.unwrittenReports == [path, textfile])
    #expect(
      report.errorMessage
        == "the run's record is incomplete: \(ReportFiles.display(path)), \(ReportFiles.display(textfile)) could not be written")
    #expect(SpecialFile.type(path) == kind)
    #expect(SpecialFile.type(textfile) == kind)
    // The other format is still written.
    #expect(SpecialFile.type(folder.path + "/run.junit.xml") == S_IFREG)
  }

  @Test func aJournalThatIsAFIFOIsRefusedWithoutOpeningIt() throws {
    let folder = TemporaryDirectory()
    let path = folder.path + "/journal.sqlite"
    try SpecialFile.make(S_IFIFO, at: path)
    #expect(throws: JournalError.notAFile(path: path, kind: "a FIFO (named pipe)")) { try Journal(path: path, startingFresh: true) }
    #expect(throws: JournalError.notAFile(path: path, kind: "a FIFO (named pipe)")) { try Journal(readingAt: path) }
    #expect(SpecialFile.type(path) == S_IFIFO)
  }

  @Test func aLockFileThatIsAFIFOIsRefusedBeforeAnyStep() throws {
    let folder = TemporaryDirectory()
    let manifest = try Self.load(
      folder, "version: 1\njob: special\ndatabase: { path: d.sqlite }\nsteps:\n  - { id: make, sql: CREATE TABLE t(x) }\n")
    try FileManager.default.createDirectory(atPath: folder.path + "/.dray", withIntermediateDirectories: false)
    let lock = folder.path + "/.dray/special.lock"
    try SpecialFile.make(S_IFIFO, at: lock)
    let report = Self.run(manifest)
    #expect(report.exitCode == 1)
    #expect(report.errorMessage?.contains("\(lock): it is a FIFO (named pipe), not a regular file") == true, "\(report.errorMessage ?? "")")
    #expect(report.steps.map(\.status) == [.notRun])
    #expect(SpecialFile.type(lock) == S_IFIFO)
  }
}
