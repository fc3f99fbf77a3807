import DrayTestSupport
import Foundation
import Testing

/// Answers a broken or hostile server could send for a table load, through real `dray run`s
/// against the emulator (its `body_base64` fault), on SQLite and PostgreSQL: each is refused
/// with what it is and where, the table keeps its previous rows, and nothing the answer holds
/// reaches a message or the report unbounded.
@Suite struct HostileAnswerTests {
  /// D-minor: the platform's token answer with a `token` of the wrong type says which type
  /// (never the value, which is the secret), not that there is none.
  @Test func aPlatformTokenOfTheWrongTypeIsNamedByItsType() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-hostile-token")
    let manifest = try folder.write(
      "job.yaml",
      JobText.header(job: "token-type", emulator: emulator, database: "db.sqlite", retry: "{ count: 0, interval: 10ms }")
        + "steps:\n  - id: fruits\n    table_stream: { resource: FRUITS }\n")
    for (body, words) in [
      (#"{"token": 987654321012}"#, "the token answer's 'token' is a number; the platform sends it as a string"),
      (#"{"token": ["a"]}"#, "the token answer's 'token' is a list"), (#"{"token": ""}"#, "the token answer's 'token' is an empty string"),
      (#"{"other": 1}"#, "the token answer has no 'token'"),
    ] {
      let rule: [[String: Any]] = [["path": "/api/v1/auth/", "body": body]]
      try emulator.admin("POST", "faults", json: String(decoding: try JSONSerialization.data(withJSONObject: rule), as: UTF8.self))
      let result = try Command.dray(["run", manifest], directory: folder.path)
      #expect(result.status != 0)
      #expect(result.output.contains(words), "\(body): \(result.output)")
      #expect(!result.output.contains("987654321012"), "\(result.output)")
    }
  }

  /// A job loading FRUITS (`table_stream`) into a fresh target, after a clean first run: its
  /// table holds the emulator's 5 rows.
  struct Job {
    let emulator: Emulator
    let folder = TemporaryDirectory("dray-hostile")
    let target: TargetDatabase
    let manifest: String

    init(_ kind: TargetDatabase.Kind) throws {
      emulator = try Emulator()
      target = try TargetDatabase(kind, folder: folder.path)
      manifest = try folder.write(
        "job.yaml",
        JobText.header(job: "hostile", emulator: emulator, retry: "{ count: 0, interval: 10ms }") + target.manifestBlock
          + "steps:\n  - id: fruits\n    table_stream: { resource: FRUITS }\n")
      let first = try Command.dray(["run", manifest], directory: folder.path)
      #expect(first.status == 0, "\(first.output)")
    }

    /// Runs the job once with FRUITS answered by `body`.
    func run(answering body: [UInt8]) throws -> (result: Command.Result, step: [String: Any]) {
      let rule: [[String: Any]] = [["path": "/api/v1/rpc/FRUITS/", "times": 1, "body_base64": Data(body).base64EncodedString()]]
      let rules = String(decoding: try JSONSerialization.data(withJSONObject: rule), as: UTF8.self)
      try emulator.admin("POST", "faults", json: rules)
      let result = try Command.dray(["run", manifest], directory: folder.path)
      let line = try #require(result.stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
      let path = String(line.dropFirst("report: ".count))
      let data = try #require(FileManager.default.contents(atPath: path.hasPrefix("/") ? path : folder.path + "/" + path))
      let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
      let steps = try #require(report["steps"] as? [[String: Any]])
      return (result, try #require(steps.first { $0["id"] as? String == "fruits" }))
    }

    /// The step's error message, or nil when it succeeded.
    static func message(_ step: [String: Any]) -> String? { (step["error"] as? [String: Any])?["message"] as? String }

    /// The names in FRUITS' table, in row order: the first run's until a load replaces them.
    func names() throws -> [String?] { try target.rows(#"SELECT name FROM "FRUITS__output_table" ORDER BY hhive_id"#).map(\.[0]) }
  }

  static let previousNames: [String?] = ["apple", "pear", "plum", "quince", "cherry"]
  static let answer = Array(#"[{"name":"output_table","data":[[1,1,"fig",0.5,1]]}]"#.utf8)
  static let refusedThen = "; the answer was discarded, so the next run downloads it again"

  /// What a body that is not JSON text is, named by the bytes it starts with, never as
  /// replacement characters or invisible text.
  static let notJSONText: [(name: String, body: [UInt8], detail: String)] = [
    (
      "UTF-8 byte order mark", [0xEF, 0xBB, 0xBF] + answer,
      "the bytes EF BB BF are not a JSON value: a UTF-8 byte order mark, which JSON text does not start with (RFC 8259 §8.1)"
    ),
    (
      "UTF-16 with its byte order mark",
      [0xFF, 0xFE] + Array(String(decoding: answer, as: UTF8.self).utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] },
      "the bytes FF FE are not a JSON value: a UTF-16 byte order mark; JSON between systems is UTF-8 (RFC 8259 §8.1)"
    ),
    (
      "UTF-16 without one", Array(String(decoding: answer, as: UTF8.self).utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] },
      "the byte 00 is not a JSON value: a NUL byte; text with NUL bytes between its characters is UTF-16 or UTF-32, and JSON between systems is UTF-8 (RFC 8259 §8.1)"
    ),
    (
      "undeclared gzip", [0x1F, 0x8B, 0x08, 0x00, 0x1E, 0x47, 0x0F, 0x6B, 0x02, 0xFF, 0x8A, 0x56],
      "the bytes 1F 8B 08 00 1E 47 0F 6B … are not a JSON value: gzip-compressed data the server did not declare (Content-Encoding)"
    ),
    (
      "a PNG image", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D],
      "the bytes 89 50 4E 47 are not a JSON value: a PNG image"
    ),
    (
      "an invisible character", Array("\u{200B}".utf8) + answer,
      "the bytes E2 80 8B are not a JSON value"
    ),
  ]

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aBodyThatIsNotJSONTextIsNamedByItsBytesAndTheTableIsKept(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    for (name, body, detail) in Self.notJSONText {
      let (result, step) = try job.run(answering: body)
      #expect(result.status == 1, "\(name)")
      #expect(Job.message(step) == "resource FRUITS: the answer is not valid JSON (\(detail), at byte 0)\(Self.refusedThen)", "\(name)")
      #expect(!result.stdout.contains("\u{FFFD}") && !result.stderr.contains("\u{FFFD}"), "\(name): \(result.output)")
      #expect(try job.names() == Self.previousNames, "\(name)")
    }
  }

  /// A server that sends thousands of table objects the scheme does not list: the load reads
  /// past them in time linear in their number, and the report names the first ten and
  /// counts the rest, in one more note.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func thousandsOfUnlistedTablesAreCountedNotEachNoted(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    let unlisted = (1...3000).map { #"{"name":"extra_\#($0)","data":[[1]]}"# }.joined(separator: ",")
    let (result, step) = try job.run(answering: Array("[\(unlisted),".utf8) + Self.answer.dropFirst())
    #expect(result.status == 0, "\(result.output)")
    let notes = step["notes"] as? [String] ?? []
    #expect(
      notes.prefix(10)
        == (1...10).map {
          "the answer holds table 'extra_\($0)', which the stored scheme does not list; its rows were skipped (run a schemes step to pick it up)"
        }[...])
    #expect(
      notes.dropFirst(10) == ["the answer holds 2990 more table objects the stored scheme does not list; their rows were skipped too"])
    #expect(try job.names() == ["fig"])
  }

  /// Values quoted from the answer in a refusal are cut to 64 characters, whatever their
  /// size: a row id of a million digits, a table's name of a million letters.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aHugeValueIsQuotedShortInTheRefusal(kind: TargetDatabase.Kind) throws {
    let job = try Job(kind)
    let digits = String(repeating: "9", count: 1_000_000)
    let (idResult, idStep) = try job.run(answering: Array(#"[{"name":"output_table","data":[[\#(digits),1,"fig",0.5,1]]}]"#.utf8))
    #expect(idResult.status == 1)
    let idMessage = try #require(Job.message(idStep))
    #expect(idMessage.hasPrefix("resource FRUITS, table output_table, row 1, column 1: "), "\(idMessage.prefix(300))")
    #expect(idMessage.contains(String(repeating: "9", count: 63) + "…"), "\(idMessage.prefix(300))")
    #expect(idMessage.utf8.count < 500 && idResult.output.utf8.count < 5000, "\(idMessage.prefix(300))")
    #expect(try job.names() == Self.previousNames)

    let letters = String(repeating: "t", count: 1_000_000)
    let (result, step) = try job.run(answering: Array(#"[{"name":"output_table","data":[]},{"name":"\#(letters)","data":[[1]]}]"#.utf8))
    #expect(result.status == 0, "\(result.output.prefix(2000))")
    let notes = step["notes"] as? [String] ?? []
    #expect(
      notes == [
        "the answer holds table '\(String(repeating: "t", count: 63))…', which the stored scheme does not list; its rows were skipped (run a schemes step to pick it up)"
      ])
    #expect(result.output.utf8.count < 5000)
  }
}
