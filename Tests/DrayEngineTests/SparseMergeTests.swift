import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A `merge` writes each record whole (docs/http.md, "A field a record omits"): a field the
/// record omits is NULL in its row, as an explicit null is, whatever the other records of
/// the pull hold; on both targets.
@Suite struct SparseMergeTests {
  let folder = TemporaryDirectory()

  /// Loads `answer` (a JSON list of records) into table `t` by `merge` on `id`.
  func run(_ answer: String, _ server: RestServer, _ target: TargetDatabase) throws -> RunReport {
    let rules = [["path": "/sp", "status": 200, "body": answer] as [String: Any]]
    try server.setRules(String(decoding: try JSONSerialization.data(withJSONObject: rules), as: UTF8.self))
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: sp
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: a
          http:
            base_url: '\(server.url)'
            path: sp
            load: { table: t, records: /data, write: merge, primary_key: [id] }
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  static let answers = [
    // The report's two repros: alone, and beside a record that holds the field.
    #"{"data": [{"id": 1, "qty": 6}]}"#,
    #"{"data": [{"id": 1, "qty": 6}, {"id": 2, "name": "bob", "qty": 1}]}"#,
    #"{"data": [{"id": 2, "name": "bob", "qty": 1}, {"id": 1, "qty": 6}]}"#,
    #"{"data": [{"id": 1, "name": null, "qty": 6}]}"#,
  ]

  @Test(arguments: TargetDatabase.Kind.allCases, answers)
  func aFieldARecordOmitsIsNullWhateverItsNeighboursHold(kind: TargetDatabase.Kind, answer: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let first = try run(#"{"data": [{"id": 1, "name": "alice", "qty": 5}]}"#, server, target)
    try #require(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    let second = try run(answer, server, target)
    #expect(second.status == .succeeded, "\(second.steps.first?.errorMessage ?? "")")
    let rows = try target.rows("SELECT id, name, qty FROM t ORDER BY id")
    #expect(rows.first == ["1", nil, "6"], "\(rows)")
    #expect(rows.dropFirst().map { $0 } == (answer.contains("bob") ? [["2", "bob", "1"]] : []))
  }
}
