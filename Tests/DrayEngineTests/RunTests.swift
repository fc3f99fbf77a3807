import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Row counts of the ISO lists the emulator serves, read from Debian's files.
func isoCount(_ file: String, _ key: String) throws -> Int {
  let data = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/iso-codes/json/\(file)"))
  let object = try JSONSerialization.jsonObject(with: data) as? [String: [Any]]
  return object?[key]?.count ?? -1
}

@Suite struct RunTests {
  func manifest(_ folder: TemporaryDirectory, _ emulator: Emulator) throws -> Manifest {
    let text = try String(contentsOfFile: Repository.root + "/jobs/iso-reference.yaml", encoding: .utf8)
    let path = try folder.write("iso.yaml", text)
    var environment = DemoUser.environment
    environment["FMP_HOST"] = emulator.url
    return try ManifestLoader(environment: environment).load(path: path)
  }

  @Test func theISOJobLoadsEveryRowAndARerunDoesNotDoubleThem() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try manifest(folder, emulator)
    let console = Console(level: .quiet)
    let first = Runner(manifest: job, console: console, cancellation: Cancellation()).run()
    #expect(first.exitCode == 0)
    #expect(first.steps.map(\.status) == Array(repeating: .succeeded, count: 6))
    let expected = [
      "COUNTRIES__output_table": try isoCount("iso_3166-1.json", "3166-1"),
      "CURRENCIES__output_table": try isoCount("iso_4217.json", "4217"),
      "LANGUAGES__output_table": try isoCount("iso_639-3.json", "639-3"),
      "SUBDIVISIONS__output_table": try isoCount("iso_3166-2.json", "3166-2"),
    ]
    #expect(expected["COUNTRIES__output_table"] == 249)
    func counts() throws -> [String: Int] {
      let store = try Store(path: folder.path + "/data/iso.sqlite")
      var out: [String: Int] = [:]
      for name in expected.keys {
        if case .integer(let n)? = try store.database.rows("SELECT count(*) AS n FROM \(Database.quote(name))").first?["n"] {
          out[name] = Int(n)
        }
      }
      return out
    }
    #expect(try counts() == expected)
    let second = Runner(manifest: job, console: console, cancellation: Cancellation()).run()
    #expect(second.exitCode == 0)
    #expect(second.resumes == nil)
    #expect(second.steps.allSatisfy { $0.status == .succeeded })
    #expect(try counts() == expected)
    let report = try String(contentsOfFile: Runner.reportPath(job, runID: second.runID), encoding: .utf8)
    #expect(report.contains(#""job":"iso-reference""#))
    #expect(report.contains(#""status":"succeeded""#))
  }

  @Test func sqlTemplatesNameThePhysicalTable() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "fruits.yaml",
      """
      version: 1
      job: fruits
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      database: { path: fruits.sqlite }
      steps:
        - schemes: {}
        - id: load
          table_stream: { resource: FRUITS }
        - id: cheap
          sql: |
            CREATE TABLE cheap AS SELECT name FROM {{ table "FRUITS" "output_table" }} WHERE price < 1.3;
      """)
    let job = try ManifestLoader(environment: [:]).load(path: path)
    let report = Runner(manifest: job, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 0)
    let store = try Store(path: folder.path + "/fruits.sqlite")
    let names = try store.database.rows("SELECT name FROM cheap ORDER BY name").map { try $0["name"] }
    #expect(names == [.text("apple"), .text("plum")])
    let rowIDs = try store.database.rows("SELECT hhive_id FROM FRUITS__output_table ORDER BY 1").map { try $0["hhive_id"] }
    #expect(rowIDs == (1...5).map { .integer(Int64($0)) })
  }
}
