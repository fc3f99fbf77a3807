import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@Suite struct JobsTests {
  /// `jobs/fruits-delta.yaml` asks for a delta from the version it holds; whether the
  /// server answers with a delta or with full data, the table ends up as the server has it.
  @Test func theFruitsDeltaJobFollowsTheServersChanges() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let text = try String(contentsOfFile: Repository.root + "/jobs/fruits-delta.yaml", encoding: .utf8)
    var environment = DemoUser.environment
    environment["FMP_HOST"] = emulator.url
    let first = try runJob(folder, text, file: "fruits-delta.yaml", environment: environment).1
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try String(contentsOfFile: folder.path + "/out/fruits-count.json", encoding: .utf8).contains(#"{"n":5,"ids":5}"#))

    // The data changes on the server: kiwi comes, pear goes.
    try changeFruits(emulator)

    let second = try runJob(folder, text, file: "fruits-delta.yaml", environment: environment).1
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    let notes = second.steps[1].notes
    #expect(
      notes.contains { $0.hasPrefix("delta v") } || notes.contains("asked for a delta from v1; the server sent full data"),
      "\(notes)")
    let store = try Store(path: folder.path + "/data/fruits.sqlite")
    let names = try store.database.rows("SELECT name FROM FRUITS__output_table ORDER BY id").map { try $0["name"] }
    #expect(names == ["apple", "plum", "quince", "cherry", "kiwi"].map { SQLValue.text($0) })
  }

  /// Sends FRUITS_EDIT through a one-step job (the uniform request that changes data).
  func changeFruits(_ emulator: Emulator) throws {
    let folder = TemporaryDirectory()
    let report = try runJob(
      folder,
      JobText.header(job: "edit", emulator: emulator) + """
        steps:
          - request: { resource: FRUITS_EDIT, params: { insert: [[6, kiwi, 0.9, 1]], delete: [2] } }
        """
    ).1
    #expect(report.exitCode == 0)
  }
}
