import DrayEngine
import DrayModel
import DrayTestSupport
import Testing

/// A step's partitions are part of its definition, so a changed source is a changed step;
/// how fast it runs (`concurrency`, `lease`) is not.
@Suite struct PartitionDefinitionTests {
  func step(_ partitions: String, path: String = "/sales/{region}") throws -> Step {
    let manifest = try ManifestText.load(
      """
      version: 1
      job: j
      database: { path: db.sqlite }
      steps:
        - id: sales
      \(partitions.isEmpty ? "" : "    partitions: \(partitions)\n")\
          http: { base_url: "https://api.example.com", path: "\(path)", load: { table: sales } }
      """)
    return manifest.steps[0]
  }

  @Test func theSourceChangesTheFingerprintAndConcurrencyDoesNot() throws {
    let base = try step("{ list: [{ region: eu }, { region: us }] }")
    #expect(
      base.definition.canonicalJSON
        == #"{"id":"sales","kind":"http","options":{"base_url":"https://api.example.com","format":"json","headers":[],"load":{"records":"","table":"sales"},"method":"GET","on_status":{},"path":"/sales/{region}","query":[],"tls":{"verify":true}},"partitions":{"list":[{"region":"eu"},{"region":"us"}]}}"#
    )
    let fingerprint = base.definition.canonicalJSON
    let faster = try step("{ list: [{ region: eu }, { region: us }], concurrency: 2, lease: 5m }")
    #expect(faster.definition.canonicalJSON == fingerprint)
    for changed in [
      "{ list: [{ region: eu }, { region: ap }] }", "{ list: [{ region: us }, { region: eu }] }", "{ rows: SELECT region FROM regions }",
    ] {
      #expect(try step(changed).definition.canonicalJSON != fingerprint, "\(changed)")
    }
    #expect(try step("").definition.canonicalJSON.contains("partitions") == false)
    let window = try step("{ window: { start: 2024-01-01, end: 2024-02-01, every: 14d } }", path: "/sales/{window_start}")
    #expect(window.partitions?.definition.canonicalJSON == #"{"window":{"end":"2024-02-01","every":"2w","start":"2024-01-01"}}"#)
  }

  /// `load.allow_empty` and `load.delete_missing` change what a load does, so each changes
  /// the step's definition (and its fingerprint); left at their defaults they are not
  /// written, so that the fingerprints of earlier steps stay.
  @Test func allowEmptyAndDeleteMissingChangeTheFingerprint() throws {
    func load(_ extra: String) throws -> Step { try job(extra).steps[0] }
    func job(_ extra: String) throws -> Manifest {
      try ManifestText.load(
        """
        version: 1
        job: j
        database: { path: db.sqlite }
        steps:
          - id: sales
            http: { base_url: "https://api.example.com", path: "/sales", load: { table: sales, write: merge, primary_key: [id]\(extra) } }
        """)
    }
    let base = try load("")
    let explicitDefaults = try load(", allow_empty: false, delete_missing: false")
    #expect(explicitDefaults.definition.canonicalJSON == base.definition.canonicalJSON)
    #expect(!base.definition.canonicalJSON.contains("delete_missing"))
    let manifest = try job("")
    for changed in [", allow_empty: true", ", delete_missing: true"] {
      let step = try load(changed)
      #expect(step.definition.canonicalJSON != base.definition.canonicalJSON, "\(changed)")
      #expect(step.fingerprint(in: manifest) != base.fingerprint(in: manifest), "\(changed)")
    }
    #expect(try load(", delete_missing: true").definition.canonicalJSON.contains(#""delete_missing":true"#))
  }
}
