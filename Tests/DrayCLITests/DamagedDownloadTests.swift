import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A finished download left by a killed run is confirmed with the server (only its size),
/// so its bytes on disk are checked by loading them: damaged ones are discarded and fetched
/// again, and `--fresh` never reuses them.
@Suite struct DamagedDownloadTests {
  /// Kills a run of `job` once COUNTRIES is downloaded, before its load; returns the
  /// finished answer's path.
  static func killAfterDownload(_ job: ResumeJob, _ options: [String] = []) throws -> String {
    let killed = try job.start(options, name: "killed", environment: ["DRAY_TEST_CRASH_AT": "downloaded:countries"])
    #expect(killed.wait() == .signaled(SIGKILL))
    let folder = job.folder.path + "/.dray/downloads/resume"
    let names = try FileManager.default.contentsOfDirectory(atPath: folder)
    let answer = try #require(names.first { $0.hasPrefix("countries-") && $0.hasSuffix(".answer") })
    return folder + "/" + answer
  }

  /// Replaces the first byte of `path` with `byte`.
  static func damage(_ path: String, byte: UInt8 = UInt8(ascii: "X")) throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    try handle.write(contentsOf: [byte])
    try handle.close()
  }

  func xRanges(_ job: ResumeJob) throws -> [String?] {
    try job.rpcRequests("COUNTRIES").map { ($0["headers"] as? [String: String])?["X-Range"] }
  }

  @Test func aDamagedFinishedDownloadIsDiscardedAndFetchedAgain() throws {
    let job = try ResumeJob()
    let answer = try Self.killAfterDownload(job, ["--fresh"])
    try Self.damage(answer)
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    let notes = try Report(rerun.stdout).step("countries")["notes"] as? [String]
    #expect(
      notes == [
        "the answer an earlier run downloaded (17067 bytes) could not be loaded (resource COUNTRIES: the answer is not valid JSON ('X' is not a JSON value, at byte 0)); it was discarded and downloaded again"
      ])
    #expect(try xRanges(job) == [nil, "bytes=17067-", nil])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/.dray/downloads").isEmpty)
  }

  @Test func anAnswerThatCannotBeLoadedIsDiscardedSoTheNextRunFetchesItAgain() throws {
    let job = try ResumeJob()
    try job.emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "garble": true}]"#)
    let broken = try job.run()
    #expect(broken.status == 1)
    let countries = try Report(broken.stdout).step("countries")
    #expect(
      (countries["error"] as? [String: String])?["message"]
        == "resource COUNTRIES: the answer is not valid JSON ('X' is not a JSON value, at byte 0); the answer was discarded, so the next run downloads it again"
    )
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/.dray/downloads/resume").isEmpty)
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(try xRanges(job) == [nil, nil])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
  }

  @Test func aTableAnswerThatCannotBeReadIsDiscardedToo() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-damaged")
    let manifest = try folder.write(
      "job.yaml",
      JobText.header(job: "export", emulator: emulator)
        + "steps:\n  - id: fruits\n    table: { resource: FRUITS, output: out/fruits.json }\n")
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/FRUITS/", "times": 1, "garble": true}]"#)
    let broken = try Command.dray(["run", manifest])
    #expect(broken.status == 1)
    #expect(
      broken.stdout.contains(
        "the answer of FRUITS is not a table answer: the answer is not valid JSON ('X' is not a JSON value, at byte 0); the answer was discarded, so the next run downloads it again"
      ), "\(broken.output)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/downloads/export").isEmpty)
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/out/fruits.json"))
    let rerun = try Command.dray(["run", manifest])
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(try folder.read("out/fruits.json").hasPrefix("[{\"name\""))
  }

  @Test func freshNeverReusesAFinishedOrPartialDownload() throws {
    let job = try ResumeJob()
    let answer = try Self.killAfterDownload(job)
    try Self.damage(answer)
    let fresh = try job.run(["--fresh"])
    #expect(fresh.status == 0, "\(fresh.output)")
    #expect(try Report(fresh.stdout).step("countries")["notes"] == nil)
    #expect(try xRanges(job) == [nil, nil])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
  }
}
