import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A `table_stream` load reads the answer's part as it arrives, and commits only once the
/// download is whole and verified (docs/network.md, "Loading while downloading"). COUNTRIES
/// answers 17,067 bytes (249 rows).
@Suite struct StreamLoadTests {
  static let countriesBytes = 17067

  /// The size of the part the `countries` step is downloading; 0 when there is none.
  static func partSize(_ job: ResumeJob) -> Int {
    let folder = job.folder.path + "/.dray/downloads/resume"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    guard let name = names.first(where: { $0.hasPrefix("countries-") && $0.hasSuffix(".part") }),
      let size = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int
    else { return 0 }
    return size
  }

  /// Writes `job`'s manifest asking for uncompressed answers, so that a fault's byte counts
  /// (on the wire) are the part's.
  static func identity(_ job: ResumeJob) throws {
    let text = ResumeJob.text(host: job.emulator.url)
    try job.folder.write(
      "resume.yaml", text.replacing("  timeouts: { connect: 2s }\n", with: "  timeouts: { connect: 2s }\n  compression: false\n"))
  }

  /// The X-Range of each request the emulator received for COUNTRIES' table data.
  /// A job, and beside it a clean run of the same job (same emulator, uncompressed answers)
  /// whose database the faulted run must equal; `faults` are set for the next runs.
  static func besideACleanRun(faults: String) throws -> (job: ResumeJob, clean: ResumeJob) {
    let job = try ResumeJob()
    let clean = ResumeJob(sharing: job)
    try identity(job)
    try identity(clean)
    #expect(try clean.run().status == 0)
    _ = try job.emulator.admin("POST", "reset")
    _ = try job.emulator.admin("POST", "faults", json: faults)
    return (job, clean)
  }

  static func ranges(_ job: ResumeJob) throws -> [String?] {
    try job.rpcRequests("COUNTRIES").map { ($0["headers"] as? [String: String])?["X-Range"] }
  }

  @Test func aKillWhileAnAnswerLoadsAsItArrivesCommitsNoRowAndTheNextRunResumesItsPart() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 2000}"#])
    let run = try job.start(name: "killed")
    // The load's transaction is open while the answer is still arriving.
    #expect(run.waitUntil { StreamLoadTests.partSize(job) > 0 && SQLiteFile.isWriteLocked(job.database) })
    run.send(SIGKILL)
    #expect(run.wait() == .signaled(SIGKILL))
    let held = StreamLoadTests.partSize(job)
    #expect(held > 0 && held < StreamLoadTests.countriesBytes)
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["0"]])

    try job.emulator.admin("DELETE", "faults")
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(try StreamLoadTests.ranges(job) == [nil, "bytes=\(held)-"])
    let notes = try Report(rerun.stdout).step("countries")["notes"] as? [String]
    #expect(notes == ["resumed a partial download at byte \(held)"])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
  }

  @Test func anAnswerCutMidwayIsResumedAndLoadsExactlyTheRowsOfACleanRun() throws {
    let (job, clean) = try StreamLoadTests.besideACleanRun(
      faults: #"[{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "close_after": 9000}]"#)

    let run = try job.run()
    #expect(run.status == 0, "\(run.output)")
    #expect(try StreamLoadTests.ranges(job) == [nil, "bytes=9000-"])
    #expect(try DatabaseDigest(path: job.database).differences(from: DatabaseDigest(path: clean.database)) == [])
  }

  /// A server that ignores the range sends the whole answer again: what was read of the first
  /// one is dropped, and the answer loads from its start once finished.
  @Test func anAnswerSentAgainFromItsStartLoadsOnceFinishedWithExactlyTheRowsOfACleanRun() throws {
    let (job, clean) = try StreamLoadTests.besideACleanRun(
      faults:
        #"[{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "close_after": 9000}, {"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "ignore_range": true}]"#
    )

    let run = try job.run()
    #expect(run.status == 0, "\(run.output)")
    #expect(try StreamLoadTests.ranges(job) == [nil, "bytes=9000-"])
    let notes = try Report(run.stdout).step("countries")["notes"] as? [String] ?? []
    #expect(notes.contains("the download started the answer again from byte 0; it was loaded once finished"))
    #expect(try DatabaseDigest(path: job.database).differences(from: DatabaseDigest(path: clean.database)) == [])
  }

  /// The whole answer arrives, then fails its length check (the server announced more bytes
  /// and closed the connection): what was loaded from it is rolled back, and the part is kept
  /// for the next run, whose range request the server confirms.
  @Test func anAnswerThatFailsItsLengthCheckAfterArrivingCommitsNothing() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "overstate_length": 10}"#])
    try StreamLoadTests.identity(job)
    let text = try String(contentsOfFile: job.manifest, encoding: .utf8)
    try job.folder.write("resume.yaml", text.replacing("retry: { count: 2, interval: 10ms }", with: "retry: { count: 0 }"))

    let first = try job.run()
    #expect(first.status == 69, "\(first.output)")  // a cut answer: unavailable
    #expect(try Report(first.stdout).step("countries")["status"] as? String == "failed")
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["0"]])
    #expect(StreamLoadTests.partSize(job) == StreamLoadTests.countriesBytes)

    let second = try job.run()
    #expect(second.status == 0, "\(second.output)")
    #expect(try StreamLoadTests.ranges(job) == [nil, "bytes=\(StreamLoadTests.countriesBytes)-"])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
  }
}
