import DrayTestSupport
import Foundation
import Testing

/// `auth.api_key`: a key sent in a header or a query parameter of every request, pages
/// after the first included, and masked everywhere.
@Suite struct APIKeyTests {
  static let key = "ak-Sentinel-9931"

  static func manifest(_ server: OAuthServer, place: String, key: String = APIKeyTests.key) -> String {
    """
    version: 1
    job: keyed
    database: { path: data/db.sqlite }
    steps:
      - id: items
        http:
          base_url: "\(server.url)"
          path: items
          auth: { api_key: { \(place), value: "\(key)" } }
          load: { table: items, records: /data }
          paginate: { next: /next }

    """
  }

  /// Every file under `folder` but the job's database and manifest, as text.
  static func files(_ folder: String) -> [String] {
    (FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? [])
      .filter { !$0.contains(".sqlite") && !$0.hasSuffix(".yaml") }
      .compactMap { try? String(contentsOfFile: folder + "/" + $0, encoding: .utf8) }
  }

  @Test(arguments: ["header: X-API-Key", "query: api_key"])
  func theKeyGoesWithEveryRequestAndIsNeverPrinted(place: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--api-key", Self.key, "--pages", "3"])
    let path = folder.path + "/job.yaml"
    try Self.manifest(server, place: place).write(toFile: path, atomically: true, encoding: .utf8)
    let result = try Command.dray(["run", path, "--verbose"])
    #expect(result.status == 0, "\(result.output)")
    let paths = try server.stats().apiPaths
    #expect(paths.count == 3)
    // In the query of every page (the next links do not carry it), or in none.
    #expect(paths.allSatisfy { $0.contains("api_key=\(Self.key)") } == place.hasPrefix("query"), "\(paths)")
    let plan = try Command.dray(["plan", path])
    for text in [result.output, plan.output] + Self.files(folder.path) {
      #expect(!text.contains(Self.key), "the key was printed or written")
    }
  }

  @Test func aWrongKeyFailsWithTheServersWordsAndNoKey() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--api-key", Self.key])
    let path = folder.path + "/job.yaml"
    try Self.manifest(server, place: "query: api_key", key: "ak-Wrong-1234").write(toFile: path, atomically: true, encoding: .utf8)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    #expect(result.output.contains("401"), "\(result.output)")
    for text in [result.output] + Self.files(folder.path) { #expect(!text.contains("ak-Wrong-1234")) }
  }
}
