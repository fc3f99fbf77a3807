import DrayTestSupport
import Foundation
import Testing

/// `examples/rest-paginated.sh`: the paginated REST example with one command.
@Suite struct RestExampleTests {
  @Test func theRestExampleRunsAgainstItsServerWithOneCommand() throws {
    let folder = TemporaryDirectory("dray-examples")
    try FileManager.default.copyItem(atPath: Repository.root + "/examples", toPath: folder.path + "/examples")
    try? FileManager.default.removeItem(atPath: folder.path + "/examples/out")
    let result = try Command.run(
      "/bin/bash", [folder.path + "/examples/run.sh", "rest-paginated"],
      environment: ["DRAY_REPO": Repository.root, "DRAY_BINARY": Repository.drayBinary])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.hasPrefix("REST test server at http://127.0.0.1:"))
    #expect(result.stdout.contains("  items      http  succeeded  95 rows"))
    #expect(
      result.stdout.hasSuffix(
        #"{"status":"ok","result":{"database":{"records":[{"tag":"even","n":47,"avg_price":96.0},{"tag":"odd","n":48,"avg_price":48.5}]}}}"#
          + "\n"))
    #expect(result.stderr.contains("step items: page 5: 15 records"))
    #expect(!result.output.contains("demo-token"))
  }
}
