import DrayManifest
import DrayTestSupport
import Testing

/// Every manifest under `examples/` and `jobs/` validates, found by globbing the folders.
@Suite struct ExampleManifestsTests {
  @Test func theFoldersHoldManifests() {
    #expect(ExampleManifests.all.contains(Repository.root + "/jobs/iso-reference.yaml"))
  }

  @Test(arguments: ExampleManifests.all)
  func validates(_ path: String) {
    do {
      _ = try ManifestLoader(environment: ExampleManifests.environment).load(path: path)
    } catch {
      Issue.record("\(path) does not validate:\n\(error)")
    }
  }
}
