import DrayTestSupport
import Foundation
import Testing

/// A `database.path` in a folder that does not exist: the run creates the folder and says
/// so, and `dray plan` says it will (issue 25), so that a misspelt folder is noticed.
@Suite struct DatabaseFolderTests {
  @Test func aMissingDatabaseFolderIsCreatedWithANote() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml", "version: 1\njob: j\ndatabase: { path: new/deeper/db.sqlite }\nsteps:\n  - sql: SELECT 1\n")
    let note = "database: created the folder \(folder.path)/new, which did not exist (database.path: new/deeper/db.sqlite)\n"

    let plan = try Command.dray(["plan", path])
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(
      plan.stdout.contains("/new/deeper/db.sqlite (the folder \(folder.path)/new does not exist: a run creates it)\n"),
      "\(plan.stdout)")
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/new"))

    let run = try Command.dray(["run", path])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.output.contains(note), "\(run.output)")
    #expect(FileManager.default.fileExists(atPath: folder.path + "/new/deeper/db.sqlite"))

    let again = try Command.dray(["run", path])
    #expect(again.status == 0, "\(again.stderr)")
    #expect(!again.output.contains("created the folder"), "\(again.output)")
    #expect(!(try Command.dray(["plan", path]).stdout.contains("does not exist")))
  }
}
