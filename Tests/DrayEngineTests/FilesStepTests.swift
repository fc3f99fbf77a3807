import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

@Suite struct FilesStepTests {
  let seed = Repository.root + "/Emulator/files"

  @Test func listAndMetaWriteTheServersAnswers() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "list", emulator: emulator) + """
        steps:
          - id: top
            files: { connection: local_storage, action: list, path: ., local: out/top.json }
          - id: nested
            files: { connection: local_storage, action: list, path: reports }
          - id: meta
            files: { connection: local_storage, action: meta, path: welcome.txt, local: out/meta.json }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try text(folder.path + "/out/top.json") == #"{"directories":["reports"],"files":["welcome.txt"]}"# + "\n")
    #expect(report.steps[0].outputs == ["out/top.json"])
    #expect(report.steps[0].notes == ["local_storage:. holds 1 folder (reports) and 1 file (welcome.txt)"])
    #expect(report.steps[1].notes == ["local_storage:reports holds 0 folders and 1 file (daily.csv)"])
    let meta =
      try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder.path + "/out/meta.json"))) as? [String: Any]
    let stat = meta?["stat"] as? [String: Any]
    #expect(stat?["st_size"] as? Int == 52)
    #expect(report.steps[2].notes.first?.hasPrefix("local_storage:welcome.txt: 52 bytes, mode 0644, modified ") == true)
  }

  @Test func getWritesTheServersBytesAndPutStreamsALargeFileFromDisk() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    var big = [UInt8](repeating: 0, count: 3 << 20)
    for i in big.indices { big[i] = UInt8(truncatingIfNeeded: i &* 31 &+ i >> 11) }
    try Data(big).write(to: URL(fileURLWithPath: folder.path + "/big.bin"))
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "get-put", emulator: emulator) + """
        steps:
          - id: get-png
            files: { connection: nfs4, action: get, path: images/pixel.png, local: got/ }
          - id: put-big
            files: { connection: nfs4, action: put, path: uploads/, local: big.bin }
          - id: get-big
            files: { connection: nfs4, action: get, path: uploads/big.bin, local: back/big.bin }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try bytes(folder.path + "/got/pixel.png") == bytes(seed + "/nfs4/images/pixel.png"))
    #expect(report.steps[0].outputs == ["got/pixel.png"])
    let root = try emulator.filesRoot()
    #expect(try bytes(root + "/nfs4/uploads/big.bin") == big)
    #expect(try bytes(folder.path + "/back/big.bin") == big)
    #expect(report.steps[1].bytes == Int64(big.count))
    #expect(report.steps[1].notes == ["uploaded 3145728 bytes to nfs4:uploads/big.bin"])
    let put = try requests(emulator, "/api/v1/file/nfs4/").first { $0["method"] as? String == "PUT" }
    #expect(put?["body_bytes"] as? Int == big.count)
    #expect((put?["headers"] as? [String: String])?["Content-Disposition"] == #"inline; filename="big.bin""#)
  }

  @Test func aBrokenGetResumesFromTheBytesItAlreadyHas() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/file/nfs4/", "times": 1, "close_after": 30}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "resume", emulator: emulator) + """
        steps:
          - id: get
            files: { connection: nfs4, action: get, path: file.txt, local: file.txt }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try bytes(folder.path + "/file.txt") == bytes(seed + "/nfs4/file.txt"))
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["body_truncated", "ok"])
    let gets = try requests(emulator, "/api/v1/file/nfs4/")
    #expect(gets.count == 2)
    let headers = gets.last?["headers"] as? [String: String]
    // 30 bytes of gzip decoded into the part; X-Range counts the part's (uncompressed) bytes.
    let held = try #require(report.steps[0].attempts.first { $0.call == nil }?.bytes)
    #expect(held > 0)
    #expect(headers?["X-Range"] == "bytes=\(held)-")
    #expect(gets.last?["offset"] as? Int == Int(held))
    #expect(headers?["If-Match"]?.hasPrefix("\"") == true)
  }

  @Test func aGetThatFailedResumesInTheNextRun() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/file/nfs4/", "times": 1, "close_after": 30}"#])
    let folder = TemporaryDirectory()
    let job =
      JobText.header(job: "resume-later", emulator: emulator, retry: "{ count: 0 }") + """
        steps:
          - id: get
            files: { connection: nfs4, action: get, path: file.txt, local: file.txt }
        """
    let first = try runJob(folder, job).1
    #expect(first.exitCode == 69)  // a broken transfer: unavailable
    #expect(first.steps[0].errorCode == "body_truncated")
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/file.txt"))
    let second = try runJob(folder, job).1
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    #expect(second.resumes == first.runID)
    let held = try #require(first.steps[0].attempts.first { $0.call == nil }?.bytes)
    #expect(held > 0)
    #expect(second.steps[0].notes.contains("file.txt: resumed a partial download at byte \(held)"))
    #expect(try bytes(folder.path + "/file.txt") == bytes(seed + "/nfs4/file.txt"))
    let headers = try requests(emulator, "/api/v1/file/nfs4/").last?["headers"] as? [String: String]
    #expect(headers?["X-Range"] == "bytes=\(held)-")
  }

  /// Runs a job whose one step gets the server folder `nfs4:docs/` into `copy/`.
  func getDocsFolder(_ emulator: Emulator) throws -> (TemporaryDirectory, RunReport) {
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "folder", emulator: emulator) + """
        steps:
          - id: docs
            files: { connection: nfs4, action: get, path: docs/, local: copy }
        """)
    return (folder, report)
  }

  @Test func aFolderGetFetchesEveryFileItsListingNames() throws {
    let (folder, report) = try getDocsFolder(try Emulator())
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try bytes(folder.path + "/copy/readme.txt") == bytes(seed + "/nfs4/docs/readme.txt"))
    #expect(report.steps[0].outputs == ["copy/readme.txt"])
    #expect(report.steps[0].notes == ["fetched 1 file from nfs4:docs/; 1 folder not fetched (a folder download is not recursive)"])
  }

  @Test func aNameListedTwiceIsFetchedOnce() throws {
    let emulator = try Emulator()
    try emulator.admin("POST", "files/inject", json: #"{"connection": "nfs4", "directory": "docs", "files": ["readme.txt"]}"#)
    let (folder, report) = try getDocsFolder(emulator)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try bytes(folder.path + "/copy/readme.txt") == bytes(seed + "/nfs4/docs/readme.txt"))
    #expect(report.steps[0].outputs == ["copy/readme.txt"])
    #expect(
      report.steps[0].notes == [
        "the listing of nfs4:docs/ named 1 file(s) more than once; each was fetched once",
        "fetched 1 file from nfs4:docs/; 1 folder not fetched (a folder download is not recursive)",
      ])
    #expect(report.steps[0].bytes == Int64(try bytes(seed + "/nfs4/docs/readme.txt").count))
  }

  @Test func deletingAMissingFileFailsUnlessMissingOKSaysOtherwise() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let strict = try runJob(
      folder,
      JobText.header(job: "strict", emulator: emulator) + """
        steps:
          - id: delete
            files: { connection: nfs4, action: delete, path: nope.txt }
        """, file: "strict.yaml"
    ).1
    #expect(strict.exitCode == 1)
    #expect(strict.steps[0].errorCode == "file_missing")
    #expect(
      strict.steps[0].errorMessage
        == "cannot delete nfs4:nope.txt: the server has no such file (HTTP 404 Not Found from \(emulator.url)api/v1/file/nfs4/?file=nope.txt: Not Found (data source: no file 'nope.txt' on nfs4)); set missing_ok: true if a missing file is fine"
    )
    let lenient = try runJob(
      folder,
      JobText.header(job: "lenient", emulator: emulator) + """
        steps:
          - id: delete
            files: { connection: nfs4, action: delete, path: nope.txt, missing_ok: true }
        """, file: "lenient.yaml"
    ).1
    #expect(lenient.exitCode == 0)
    #expect(lenient.steps[0].notes == ["nfs4:nope.txt was already absent (HTTP 404); missing_ok: true"])
  }

  /// A server path ending in `.` or `..` names a folder, as one ending in `/` does: a `get`
  /// fetches the files it lists into `local` (never one file named after `local`), and a
  /// `put` sends the local file into it under its own name.
  @Test func aServerPathEndingInDotOrDotDotNamesAFolder() throws {
    let readme = try bytes(seed + "/nfs4/docs/readme.txt")
    for path in ["docs/.", "docs/archive/..", "docs//", "docs/./"] {
      let emulator = try Emulator()
      let folder = TemporaryDirectory()
      let (_, report) = try runJob(
        folder,
        JobText.header(job: "dots", emulator: emulator) + """
          steps:
            - id: docs
              files: { connection: nfs4, action: get, path: "\(path)", local: in/ }
          """)
      #expect(report.exitCode == 0, "\(path): \(report.steps.compactMap(\.errorMessage))")
      #expect(try bytes(folder.path + "/in/readme.txt") == readme, "\(path)")
      #expect(report.steps[0].outputs == ["in/readme.txt"], "\(path)")
      #expect(
        report.steps[0].notes == ["fetched 1 file from nfs4:\(path); 1 folder not fetched (a folder download is not recursive)"],
        "\(path)")
    }
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    try folder.write("up.txt", "up\n")
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "root", emulator: emulator) + """
        steps:
          - id: root
            files: { connection: nfs4, action: get, path: ., local: in/ }
          - id: put-into-docs
            files: { connection: nfs4, action: put, path: docs/., local: up.txt }
          - id: put-into-root
            files: { connection: nfs4, action: put, path: docs/.., local: up.txt }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(report.steps[0].outputs == ["in/file.txt", "in/notes.txt"])
    #expect(try bytes(folder.path + "/in/file.txt") == bytes(seed + "/nfs4/file.txt"))
    #expect(report.steps[1].notes == ["uploaded 3 bytes to nfs4:docs/up.txt"])
    #expect(report.steps[2].notes == ["uploaded 3 bytes to nfs4:up.txt"])
    let root = try emulator.filesRoot()
    #expect(try bytes(root + "/nfs4/docs/up.txt") == Array("up\n".utf8))
    #expect(try bytes(root + "/nfs4/up.txt") == Array("up\n".utf8))
  }
}
