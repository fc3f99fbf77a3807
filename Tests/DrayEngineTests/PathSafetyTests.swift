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
      auth: { username: u, password: p-secret-1 }
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

  /// `line:column: message` of every problem the manifest `text` (saved as `name`) has.
  static func problems(_ text: String, name: String = "p8.yaml") throws -> [String] {
    let folder = TemporaryDirectory()
    let path = try folder.write(name, text)
    do {
      _ = try ManifestLoader(environment: [:]).load(path: path)
      return []
    } catch {
      return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
  }

  /// Expects the problems of `text` to be exactly `expected`.
  static func expectProblems(_ text: String, _ expected: [String], sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
    let found = try problems(text)
    #expect(found == expected, "\(found.joined(separator: "\n"))", sourceLocation: sourceLocation)
  }

  static let header = """
    version: 1
    platform: { host: "http://127.0.0.1:9/", environment: E, project: P }
    auth: { username: u, password: p-secret-1 }

    """

  @Test func noStepOutputMayBeAFileDrayKeepsForTheJob() throws {
    let found = try Self.problems(
      Self.header + """
        job: kept
        database: { path: d.sqlite }
        report: { path: reports/latest.json, formats: [json, junit, prometheus] }
        steps:
          - { id: database, query: { sql: SELECT 1 AS n, output: d.sqlite } }
          - { id: wal, query: { sql: SELECT 1 AS n, output: ./d.sqlite-wal } }
          - { id: manifest, query: { sql: SELECT 1 AS n, output: p8.yaml } }
          - { id: lock, query: { sql: SELECT 1 AS n, output: .dray/p.lock } }
          - { id: report, table: { resource: FRUITS, output: reports/latest.junit.xml } }
          - { id: textfile, request: { resource: FRUITS, output: reports/kept.prom } }
          - { id: download, request: { resource: FRUITS, output: .dray/downloads/kept/a.answer } }
          - { id: named, files: { connection: nfs4, action: get, path: docs/p8.yaml, local: ./ } }
          - { id: mirror, files: { connection: nfs4, action: get, path: docs/, local: .dray/mirror } }
          - { id: page, http: { base_url: "http://127.0.0.1:9/", output: d.sqlite-journal } }
          - { id: fine, query: { sql: SELECT 1 AS n, output: out/d.sqlite } }
        """)
    let suffix = "; a step may not write the files dray keeps for the job"
    #expect(
      found == [
        "8:58: 'steps.database.query.output': 'd.sqlite' is the job's database (database.path)" + suffix,
        "9:53: 'steps.wal.query.output': './d.sqlite-wal' is a file of the job's database (database.path)" + suffix,
        "10:58: 'steps.manifest.query.output': 'p8.yaml' is the job's manifest" + suffix,
        "11:54: 'steps.lock.query.output': '.dray/p.lock' is inside the state folder '.dray' (state.path), which holds the job's lock and journal"
          + suffix,
        "12:54: 'steps.report.table.output': 'reports/latest.junit.xml' is the run's JUnit report (report.formats)" + suffix,
        "13:58: 'steps.textfile.request.output': 'reports/kept.prom' is the job's Prometheus textfile (report.formats)" + suffix,
        "14:58: 'steps.download.request.output': '.dray/downloads/kept/a.answer' is inside the download folder '.dray/downloads' (download.path)"
          + suffix,
        "15:85: 'steps.named.files.local': './p8.yaml' is the job's manifest" + suffix,
        "16:79: 'steps.mirror.files.local': '.dray/mirror' is inside the state folder '.dray' (state.path), which holds the job's lock and journal"
          + suffix,
        "17:66: 'steps.page.http.output': 'd.sqlite-journal' is a file of the job's database (database.path)" + suffix,
      ], "\(found.joined(separator: "\n"))")
  }

  @Test func anOutputNamesAFileNotAFolder() throws {
    let found = try Self.problems(
      Self.header + """
        job: folders
        database: { path: d.sqlite }
        steps:
          - { id: slash, query: { sql: SELECT 1 AS n, output: "out/" } }
          - { id: dot, query: { sql: SELECT 1 AS n, output: out/.. } }
          - { id: listing, files: { connection: nfs4, action: list, local: listings/ } }
          - { id: get, files: { connection: nfs4, action: get, path: file.txt, local: in/ } }
        """)
    #expect(
      found == [
        "7:55: 'steps.slash.query.output': 'out/' ends in '/', so it names a folder; name the file to write, such as 'out/rows.json'",
        "8:53: 'steps.dot.query.output': 'out/..' names the job folder itself; name the file to write, such as 'out/rows.json'",
        "9:68: 'steps.listing.files.local': 'listings/' ends in '/', so it names a folder; name the file to write, such as 'listings/rows.json'",
      ], "\(found.joined(separator: "\n"))")
  }

  @Test func theDownloadAndStateFoldersHoldNeitherTheManifestNorTheDatabase() throws {
    let advice = "; dray keeps only its own files there: give it a folder that holds neither the manifest nor the database, such as "
    // The job folder itself, with a job named like the database's folder.
    try Self.expectProblems(
      Self.header + "job: data\ndatabase: { path: data/d.sqlite }\ndownload: { path: . }\nsteps: [{ sql: SELECT 1 }]\n",
      ["6:19: 'download.path': '.' holds the job's manifest" + advice + ".dray/downloads"])
    // The folder above the job folder, where <download.path>/victim is a sibling job's folder.
    try Self.expectProblems(
      Self.header + "job: victim\ndownload: { path: .. }\nstate: { path: ./ }\nsteps: [{ request: { resource: R } }]\n",
      [
        "5:19: 'download.path': '..' holds the job's manifest" + advice + ".dray/downloads",
        "6:16: 'state.path': './' holds the job's manifest" + advice + ".dray",
      ])
    try Self.expectProblems(
      Self.header + "job: j\ndatabase: { path: data/d.sqlite }\nstate: { path: data }\nsteps: [{ sql: SELECT 1 }]\n",
      ["6:16: 'state.path': 'data' holds the job's database (database.path)" + advice + ".dray"])
    // Outputs in the download folder are refused at the output.
    try Self.expectProblems(
      Self.header + "job: fruits\ndownload: { path: out }\nsteps: [{ table: { resource: FRUITS, output: out/fruits/fruits.csv } }]\n",
      [
        "6:46: 'steps.table-1.table.output': 'out/fruits/fruits.csv' is inside the download folder 'out' (download.path); a step may not write the files dray keeps for the job"
      ])
    try Self.expectProblems(
      Self.header + "job: j\ndatabase: { path: ./p8.yaml }\nsteps: [{ sql: SELECT 1 }]\n",
      ["5:19: 'database.path': './p8.yaml' is the job's manifest; name the SQLite file to fill"])
    // Anywhere else is fine, outside the job folder too.
    try Self.expectProblems(
      Self.header + "job: j\ndownload: { path: /var/tmp/dray }\nstate: { path: ../state }\nsteps: [{ request: { resource: R } }]\n", [])
  }

  @Test func noReportMayOverwriteAFileDrayKeeps() throws {
    let suffix = "; a report may not overwrite the files dray keeps for the job"
    try Self.expectProblems(
      Self.header + "job: j\ndatabase: { path: d.sqlite }\nreport: { path: d.sqlite }\nsteps: [{ sql: SELECT 1 }]\n",
      ["6:17: 'report.path': 'd.sqlite' is the job's database (database.path)" + suffix])
    try Self.expectProblems(
      Self.header + "job: j\nreport: { path: p8.yaml }\nsteps: [{ request: { resource: R } }]\n",
      ["5:17: 'report.path': 'p8.yaml' is the job's manifest" + suffix])
    try Self.expectProblems(
      Self.header + "job: j\nreport: { path: \".dray/{job}.lock\" }\nsteps: [{ request: { resource: R } }]\n",
      ["5:17: 'report.path': '.dray/{job}.lock' is the job's lock file (state.path)" + suffix])
    try Self.expectProblems(
      Self.header + "job: j\nreport: { path: \"d.json\", formats: [junit] }\ndatabase: { path: d.junit.xml }\nsteps: [{ sql: SELECT 1 }]\n",
      ["5:17: 'report.path': the junit report 'd.junit.xml' is the job's database (database.path)" + suffix])
    try Self.expectProblems(
      Self.header + "job: j\ndownload: { path: .dray/reports }\nsteps: [{ request: { resource: R } }]\n",
      [
        "5:19: 'report.path': '.dray/reports/{job}-{run_id}.json' is inside the download folder '.dray/reports' (download.path)" + suffix
      ])
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

  @Test func aFileServerCannotNameTheDatabaseOrTheManifestAndNothingIsDownloaded() throws {
    let emulator = try Emulator()
    let docs = try emulator.filesRoot() + "/nfs4/docs"
    for name in ["d.sqlite", "job.yaml"] {
      try "the server's \(name)\n".write(toFile: docs + "/" + name, atomically: true, encoding: .utf8)
    }
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "mirror", emulator: emulator, database: "d.sqlite") + """
        steps:
          - id: keep
            sql: CREATE TABLE keep(x); INSERT INTO keep VALUES (1);
          - id: mirror
            files: { connection: nfs4, action: get, path: docs/, local: ./ }
        """)
    let manifest = try text(folder.path + "/job.yaml")
    #expect(report.exitCode == 1)
    #expect(report.steps[1].errorCode == "path_refused")
    #expect(
      report.steps[1].errorMessage
        == "refused the name 'd.sqlite' that the server listed in nfs4:docs/: local './d.sqlite' is the job's database (database.path); a step may not write the files dray keeps for the job; nothing was downloaded"
    )
    #expect(try SQLiteFile.rows(folder.path + "/d.sqlite", "SELECT x FROM keep") == [["1"]])
    #expect(try text(folder.path + "/job.yaml") == manifest)
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/readme.txt"))
    #expect(try requests(emulator, "/api/v1/file/").isEmpty)
  }

  @Test func aSymbolicLinkCannotLeadAnOutputOntoAFileDrayKeeps() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/here", withDestinationPath: ".")
    let suffix = "; a step may not write the files dray keeps for the job"
    let cases: [(String, String)] = [
      (
        "query: { sql: SELECT 1 AS n, output: here/d.sqlite }",
        "refused output 'here/d.sqlite': it is the job's database (database.path)" + suffix
      ),
      (
        "query: { sql: SELECT 1 AS n, output: here/.dray/links.lock }",
        "refused output 'here/.dray/links.lock': 'here/.dray' is the state folder '.dray' (state.path), which holds the job's lock and journal"
          + suffix
      ),
      (
        "table: { resource: FRUITS, output: here/.dray/new/fruits.json }",
        "refused output 'here/.dray/new/fruits.json': 'here/.dray' is the state folder '.dray' (state.path), which holds the job's lock and journal"
          + suffix
      ),
      (
        "files: { connection: nfs4, action: get, path: file.txt, local: here/ }",
        "refused local 'here/file.txt': it is the job's manifest" + suffix
      ),
    ]
    for (index, (step, message)) in cases.enumerated() {
      let name = index == 3 ? "file.txt" : "links.yaml"
      let (_, report) = try runJob(
        folder, JobText.header(job: "links", emulator: emulator, database: "d.sqlite") + "steps:\n  - id: step\n    \(step)\n", file: name)
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "path_refused")
      #expect(report.steps[0].errorMessage == message)
    }
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/.dray/new"))
    #expect(try text(folder.path + "/file.txt").hasPrefix("version: 1"))
    #expect(try requests(emulator, "/api/v1/rpc/").isEmpty)
    #expect(try requests(emulator, "/api/v1/file/").isEmpty)
  }

  @Test func aLockFileThatIsASymbolicLinkIsRefusedAndItsTargetKept() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let victim = try folder.write("victim.txt", "keep\n")
    try FileManager.default.createDirectory(atPath: folder.path + "/.dray", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: folder.path + "/.dray/linked.lock", withDestinationPath: victim)
    let (_, report) = try runJob(
      folder, JobText.header(job: "linked", emulator: emulator) + "steps:\n  - request: { resource: FRUITS }\n")
    #expect(report.exitCode == 1)
    #expect(
      report.errorMessage
        == "the lock file \(folder.path)/.dray/linked.lock is a symbolic link to \(victim); dray does not follow links where it keeps its own files: remove the link and run again"
    )
    #expect(try text(victim) == "keep\n")
    #expect(try requests(emulator, "/api/v1/rpc/").isEmpty)
  }

  @Test func aPartialDownloadThatIsASymbolicLinkIsRefusedAndItsTargetKept() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let victim = try folder.write("victim.txt", String(repeating: "x", count: 100))
    let path = try folder.write(
      "job.yaml",
      JobText.header(job: "parted", emulator: emulator)
        + "steps:\n  - id: fruits\n    table: { resource: FRUITS, output: out/fruits.json }\n")
    let manifest = try ManifestLoader(environment: [:]).load(path: path)
    let part = folder.path + "/.dray/downloads/parted/fruits-\(manifest.steps[0].fingerprint(in: manifest).prefix(8)).answer.part"
    for (name, sidecar) in [("part", false), ("sidecar", true)] {
      try? FileManager.default.removeItem(atPath: folder.path + "/.dray/downloads")
      try FileManager.default.createDirectory(atPath: folder.path + "/.dray/downloads/parted", withIntermediateDirectories: true)
      let link = sidecar ? part + ".json" : part
      try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
      let report = Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
      #expect(report.exitCode == 1, "\(name)")
      #expect(report.steps[0].errorCode == "file_error", "\(name)")
      #expect(
        report.steps[0].errorMessage
          == "cannot use file \(link): it is a symbolic link to \(victim); dray does not follow links where it keeps its own files: remove the link and run again",
        "\(name)")
      #expect(try text(victim) == String(repeating: "x", count: 100), "\(name)")
    }
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
