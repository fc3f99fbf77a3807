import DrayTestSupport
import Foundation
import Testing

/// A run whose call the server never answers holds the job's lock only as long as its time
/// limits allow: a second run of the same job meanwhile waits for nothing (it ends at once,
/// locked, changing nothing), and the first ends by its idle timeout and retry, not by the
/// server's hang ending.
@Suite struct LockedRunTests {
  @Test func aSecondRunDuringAHangEndsLockedAndTheFirstTimesOutIdle() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "hang": true}"#])
    let folder = TemporaryDirectory()
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: hung
      platform:
        host: "\(emulator.url)"
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        timeouts: { connect: 5s, idle: 3s, request: 60s }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      database: { path: data.sqlite }
      retry: { count: 1, interval: 10ms, backoff: fixed }
      steps:
        - id: fruits
          table_stream: { resource: FRUITS }
      """)
    let first = try BackgroundDray(["run", manifest], logPrefix: folder.path + "/first")
    try first.wait(for: "the call the server holds") {
      ((try? emulator.requests()) ?? []).contains { ($0["path"] as? String)?.hasPrefix("/api/v1/rpc/FRUITS/") == true }
    }
    let second = try Command.dray(["run", manifest])
    #expect(second.status == 75, "\(second.output)")
    #expect(second.output.contains("job 'hung' is already running"), "\(second.output)")

    let result = try first.finish()
    #expect(result.status == 0, "\(result.output)")
    let line = try #require(result.stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
    let report = try ReportCheck.json(String(line.dropFirst("report: ".count)))
    let step = try #require((report["steps"] as? [[String: Any]])?.first)
    let outcomes = (step["attempts"] as? [[String: Any]])?.filter { $0["call"] == nil }.map { $0["outcome"] as? String }
    #expect(outcomes == ["timeout_idle", "ok"], "\(step)")
  }
}

/// A job folder the user may not write: the run stops before it starts, and says which folder
/// it could not create and why (not that the lock file is missing). Run as `nobody`, as root
/// may write anywhere.
@Suite struct UnwritableJobFolderTests {
  @Test(.enabled(if: getuid() == 0, "runuser needs root")) func theFolderThatCannotBeCreatedIsNamedWithItsReason() throws {
    let folder = TemporaryDirectory()
    chmod(folder.path, 0o755)
    let job = folder.path + "/ro"
    try FileManager.default.createDirectory(atPath: job, withIntermediateDirectories: false)
    try """
    version: 1
    job: readonly
    database: { path: data/db.sqlite }
    steps:
      - id: one
        sql: CREATE TABLE t(n INTEGER)
    """.write(toFile: job + "/job.yaml", atomically: false, encoding: .utf8)
    chmod(job, 0o555)
    // A copy `nobody` may run: the build folder may be closed to it (a clone in a 0700 folder).
    let binary = folder.path + "/dray"
    try FileManager.default.copyItem(atPath: Repository.drayBinary, toPath: binary)
    chmod(binary, 0o755)
    let result = try Command.run("/usr/sbin/runuser", ["-u", "nobody", "--", binary, "run", "job.yaml"], directory: job)
    #expect(result.status == 1, "\(result.output)")
    #expect(
      result.stderr.contains(
        "cannot create the lock file \(job)/.dray/readonly.lock: cannot create the folder \(job)/.dray: Permission denied; check state.path and permissions"
      ), "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: job + "/data"))
  }
}
