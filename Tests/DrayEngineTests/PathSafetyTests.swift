import DrayEngine
import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

@Suite struct PathSafetyTests {
  @Test func theTextRuleKeepsPathsInsideTheJobFolder() throws {
    #expect(try JobPath.normalize("out/./a//b.json") == "out/a/b.json")
    #expect(try JobPath.normalize("out/../a.json") == "a.json")
    #expect(try JobPath.normalize("./") == ".")
    #expect(throws: JobPath.Problem.escapes("../a.json")) { try JobPath.normalize("../a.json") }
    #expect(throws: JobPath.Problem.escapes("out/../../a.json")) { try JobPath.normalize("out/../../a.json") }
    #expect(throws: JobPath.Problem.absolute("/etc/passwd")) { try JobPath.normalize("/etc/passwd") }
    #expect(throws: JobPath.Problem.empty) { try JobPath.normalize("") }
    #expect(JobPath.isPlainName("file.txt"))
    for name in ["", ".", "..", "../../etc/passwd", "/etc/passwd", "a/b", "a\u{0}b"] {
      #expect(!JobPath.isPlainName(name), "\(name)")
    }
  }

  @Test func theManifestCannotNameAFileOutsideTheJobFolder() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: escapes
      platform: { host: "http://127.0.0.1:9/", environment: E, project: P }
      auth: { username: u, password: p }
      database: { path: db.sqlite }
      steps:
        - id: get
          files: { connection: nfs4, action: get, path: file.txt, local: ../outside.txt }
        - id: table
          table: { resource: FRUITS, output: /tmp/fruits.json }
        - id: request
          request: { resource: FRUITS, output: out/../../fruits.json }
        - id: query
          query: { sql: SELECT 1, output: "" }
      """)
    do {
      _ = try ManifestLoader(environment: [:]).load(path: path)
      Issue.record("the manifest loaded")
    } catch {
      #expect(
        error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" } == [
          "8:68: 'steps.get.files.local': '../outside.txt' leads outside the job folder (through '..'); a step reads and writes files only inside the job folder",
          "10:40: 'steps.table.table.output': '/tmp/fruits.json' is an absolute path; give a path relative to the job folder; a step reads and writes files only inside the job folder",
          "12:42: 'steps.request.request.output': 'out/../../fruits.json' leads outside the job folder (through '..'); a step reads and writes files only inside the job folder",
          "14:37: 'steps.query.query.output' must not be empty",
        ])
    }
  }

  @Test func aSymbolicLinkLeadingOutIsRefusedBeforeAnyCallAndNothingIsWrittenOutside() throws {
    let emulator = try Emulator()
    let base = TemporaryDirectory()
    let job = base.path + "/job"
    let outside = base.path + "/outside"
    try FileManager.default.createDirectory(atPath: job, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
    try "keep\n".write(toFile: outside + "/target.txt", atomically: true, encoding: .utf8)
    try "secret\n".write(toFile: outside + "/secret.txt", atomically: true, encoding: .utf8)
    try FileManager.default.createSymbolicLink(atPath: job + "/link", withDestinationPath: outside)
    try FileManager.default.createSymbolicLink(atPath: job + "/passwd.txt", withDestinationPath: outside + "/target.txt")
    let root = realPath(job)
    let suffix = "; steps read and write files only inside the job folder \(root)"
    let cases: [(String, String)] = [
      (
        "files: { connection: nfs4, action: get, path: file.txt, local: link/sub/file.txt }",
        "refused local 'link/sub/file.txt': 'link' is a symbolic link to \(outside), outside the job folder" + suffix
      ),
      (
        "files: { connection: nfs4, action: get, path: file.txt, local: passwd.txt }",
        "refused local 'passwd.txt': it is a symbolic link to \(outside)/target.txt, outside the job folder" + suffix
      ),
      (
        "files: { connection: nfs4, action: put, path: stolen.txt, local: link/secret.txt }",
        "refused local 'link/secret.txt': it leads through a symbolic link to \(realPath(outside))/secret.txt, outside the job folder"
          + suffix
      ),
      (
        "files: { connection: nfs4, action: list, path: ., local: link/listing.json }",
        "refused local 'link/listing.json': 'link' is a symbolic link to \(outside), outside the job folder" + suffix
      ),
      (
        "table: { resource: FRUITS, output: link/fruits.json }",
        "refused output 'link/fruits.json': 'link' is a symbolic link to \(outside), outside the job folder" + suffix
      ),
    ]
    for (index, (step, message)) in cases.enumerated() {
      let (_, report) = try runJob(
        at: job + "/case\(index).yaml",
        JobText.header(job: "case\(index)", emulator: emulator) + "steps:\n  - id: step\n    \(step)\n")
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "path_refused")
      #expect(report.steps[0].errorMessage == message)
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside).sorted() == ["secret.txt", "target.txt"])
    #expect(try text(outside + "/target.txt") == "keep\n")
    #expect(try requests(emulator, "/api/v1/file/").isEmpty)
    #expect(try requests(emulator, "/api/v1/directory/").isEmpty)
    #expect(try requests(emulator, "/api/v1/rpc/").isEmpty)
    #expect(!FileManager.default.fileExists(atPath: try emulator.filesRoot() + "/nfs4/stolen.txt"))
  }

  @Test func aNameTheServerListsCannotLeadOutOfTheLocalFolder() throws {
    let emulator = try Emulator()
    try emulator.admin(
      "POST", "files/inject", json: #"{"connection": "nfs4", "directory": "docs", "files": ["../../escape.txt", "/etc/passwd"]}"#)
    let base = TemporaryDirectory()
    let job = base.path + "/a/job"
    let (_, report) = try runJob(
      at: job + "/job.yaml",
      JobText.header(job: "server-names", emulator: emulator) + """
        steps:
          - id: mirror
            files: { connection: nfs4, action: get, path: docs/, local: mirror/ }
        """)
    #expect(report.exitCode == 1)
    #expect(report.steps[0].errorCode == "path_refused")
    #expect(
      report.steps[0].errorMessage
        == "refused the name '../../escape.txt' that the server listed in nfs4:docs/: a listed name must be one plain path component; nothing was downloaded"
    )
    #expect(!FileManager.default.fileExists(atPath: base.path + "/escape.txt"))
    #expect(!FileManager.default.fileExists(atPath: job + "/mirror"))
    #expect(try requests(emulator, "/api/v1/file/").isEmpty)
  }

  @Test func aSuccessfulRunRemovesOnlyTheDownloadFilesItWrote() throws {
    let emulator = try Emulator()
    let base = TemporaryDirectory()
    let job = base.path + "/job"
    // The download folder lies outside the job folder, and its folder for job 'victim'
    // holds a file of someone else's.
    let theirs = base.path + "/scratch/victim"
    try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
    try "mine\n".write(toFile: theirs + "/notes.txt", atomically: true, encoding: .utf8)
    let (_, report) = try runJob(
      at: job + "/job.yaml",
      JobText.header(job: "victim", emulator: emulator) + """
        download: { path: ../scratch }
        steps:
          - id: fruits
            table: { resource: FRUITS, output: out/fruits.csv, format: csv }
          - id: edit
            request: { resource: FRUITS, output: out/edit.json }
        """)
    #expect(report.exitCode == 0, "\(report.errorMessage ?? "") \(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try FileManager.default.contentsOfDirectory(atPath: theirs) == ["notes.txt"])
    #expect(try text(theirs + "/notes.txt") == "mine\n")
    #expect(try text(job + "/out/fruits.csv").hasPrefix("hhive_id,id,name,"))

    // Without a stranger's file, the job's download folder goes too, and nothing else.
    try FileManager.default.removeItem(atPath: theirs + "/notes.txt")
    let (_, again) = try runJob(at: job + "/job.yaml", try text(job + "/job.yaml") + "\n")
    #expect(again.exitCode == 0)
    #expect(!FileManager.default.fileExists(atPath: theirs))
    #expect(FileManager.default.fileExists(atPath: base.path + "/scratch"))
  }

  @Test func theEmulatorRefusesPathsThatLeaveAConnection() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "server-side", emulator: emulator) + """
        steps:
          - id: climb
            files: { connection: nfs4, action: get, path: ../local_storage/welcome.txt, local: welcome.txt }
        """)
    #expect(report.exitCode == 1)
    #expect(
      report.steps[0].errorMessage
        == "HTTP 400 Bad Request from \(emulator.url)api/v1/file/nfs4/?file=..%2Flocal_storage%2Fwelcome.txt: Bad Request (data source: '../local_storage/welcome.txt' leads outside the connection)"
    )
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/welcome.txt"))
  }
}
