import DrayTestSupport
import Foundation
import Testing

/// `examples/rest-paginated.sh` and `examples/rest-incremental.sh`: the REST examples, each
/// with one command.
@Suite struct RestExampleTests {
  @Test func theIncrementalExampleMergesWhatChangedWithOneCommand() throws {
    let folder = TemporaryDirectory("dray-examples")
    try FileManager.default.copyItem(atPath: Repository.root + "/examples", toPath: folder.path + "/examples")
    try? FileManager.default.removeItem(atPath: folder.path + "/examples/out")
    let result = try Command.run(
      "/bin/bash", [folder.path + "/examples/run.sh", "rest-incremental"],
      environment: ["DRAY_REPO": Repository.root, "DRAY_BINARY": Repository.drayBinary])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.contains("  orders  http  succeeded  12 rows"))
    #expect(result.stdout.contains("updated_since=2024-01-01T00:00:10Z (the kept cursor 2024-01-01T00:00:12Z, less lag 2s)"))
    #expect(result.stdout.contains("  orders  http  succeeded  13 rows"))
    #expect(result.stderr.contains("step orders: added column coupon to table orders: the API's records hold it"))
    #expect(result.stderr.contains("step orders: merged 6 rows, deleted 1"))
    #expect(
      result.stdout.hasSuffix(
        #"{"status":"ok","result":{"database":{"records":[{"orders":13,"paid":2,"last_id":14,"coupons":"WINTER,WINTER"}]}}}"#
          + "\n"))
  }

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
