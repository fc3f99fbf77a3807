import DrayEngine
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// FRUITS as the emulator answers it: a cached resource, so each row leads with its row id.
let fruitsAnswer =
  #"[{"name":"output_table","data":[[1,1,"apple",0.52,1],[2,2,"pear",null,0],[3,3,"plum",1.25,1],[4,4,"quince",2.1,0],[5,5,"cherry",4.75,1]]}]"#

@Suite struct TableAndRequestStepTests {
  @Test func tableWritesTheAnswerAsJSONLinesOrCSVWithTheSchemesColumnNames() throws {
    let emulator = try Emulator(["--generate", "GENERATED:6"])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "tables", emulator: emulator) + """
        steps:
          - id: json
            table: { resource: FRUITS, output: out/fruits.json }
          - id: ndjson
            table: { resource: FRUITS, output: out/fruits.ndjson, format: ndjson }
          - id: csv
            table: { resource: test_resource, output: out/test.csv, format: csv }
          - id: generated
            table: { resource: GENERATED, output: out/generated.csv, format: csv }
          - id: region
            table: { resource: FRUITS, params: { name: plum }, output: out/plum.csv, format: csv }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try text(folder.path + "/out/fruits.json") == fruitsAnswer)
    #expect(report.steps[0].rows == ["FRUITS.output_table": 5])
    #expect(report.steps[0].outputs == ["out/fruits.json"])
    #expect(
      try text(folder.path + "/out/fruits.ndjson") == """
        {"hhive_id":1,"id":1,"name":"apple","price":0.52,"in_season":1}
        {"hhive_id":2,"id":2,"name":"pear","price":null,"in_season":0}
        {"hhive_id":3,"id":3,"name":"plum","price":1.25,"in_season":1}
        {"hhive_id":4,"id":4,"name":"quince","price":2.1,"in_season":0}
        {"hhive_id":5,"id":5,"name":"cherry","price":4.75,"in_season":1}

        """)
    #expect(try text(folder.path + "/out/test.csv") == "id,value\r\n1,one\r\n2,two\r\n3,three\r\n")
    let generated = try text(folder.path + "/out/generated.csv").components(separatedBy: "\r\n")
    #expect(generated.count == 8)
    #expect(generated[0] == "id,code,name,amount,quantity,active,created,note")
    #expect(generated[1].hasPrefix("1,C0000001,beta theta,"))
    #expect(generated[1].hasSuffix(#","note ""1"" with, comma""#))
    #expect(generated[5].hasSuffix(",2005-06-06,"))  // row 5's note is null: an empty field
    #expect(try text(folder.path + "/out/plum.csv") == "hhive_id,id,name,price,in_season\r\n3,3,plum,1.25,1\r\n")
  }

  @Test func aResourceWithoutThatTableNamesTheChoices() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "missing", emulator: emulator) + """
        steps:
          - id: nope
            table: { resource: FRUIT, output: out/f.csv, format: csv }
        """)
    #expect(report.exitCode == 1)
    #expect(
      report.steps[0].errorMessage
        == "resource 'FRUIT' is not in the server's schema for this user; did you mean 'FRUITS'? It offers: COUNTRIES, CURRENCIES, FRUITS, FRUITS_EDIT, FRUITS_WRITE, LANGUAGES, SUBDIVISIONS, test_resource"
    )
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/out/f.csv"))
  }

  @Test func requestSavesTheAnswerAsIsAndAWriteRunsOnceThoughItsAnswerBroke() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_EDIT/", "times": 1, "close_after": 60}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "requests", emulator: emulator) + """
        steps:
          - id: add-kiwi
            request:
              resource: FRUITS_EDIT
              params: { insert: [[6, kiwi, 0.9, 1]], delete: [[2]] }
              output: out/edit.json
          - id: fruits
            request: { resource: FRUITS, output: out/fruits.json }
          - id: status
            request: { resource: test_resource }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(
      try text(folder.path + "/out/edit.json")
        == #"[{"name":"output_table","data":[[1,"apple",0.52,1],[3,"plum",1.25,1],[4,"quince",2.1,0],[5,"cherry",4.75,1],[6,"kiwi",0.9,1]]}]"#
    )
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["body_truncated", "ok"])
    let edits = try requests(emulator, "/api/v1/rpc/FRUITS_EDIT/").map { $0["headers"] as? [String: String] ?? [:] }
    #expect(edits.count == 2)
    #expect(edits[0]["X-Transaction-ID"] != nil && edits[0]["X-Transaction-ID"] == edits[1]["X-Transaction-ID"])
    // The answer came in gzip: 60 compressed bytes decoded into the part, whose size
    // X-Range counts (platform-api.md §3).
    let held = try #require(report.steps[0].attempts.first { $0.call == nil }?.bytes)
    #expect(held > 0)
    #expect(edits[1]["X-Range"] == "bytes=\(held)-")
    // Row ids (the leading hhive_id) are stable across versions: pear's id 2 is gone, kiwi gets 6.
    #expect(
      try text(folder.path + "/out/fruits.json")
        == #"[{"name":"output_table","data":[[1,1,"apple",0.52,1],[3,3,"plum",1.25,1],[4,4,"quince",2.1,0],[5,5,"cherry",4.75,1],[6,6,"kiwi",0.9,1]]}]"#
    )
    #expect(report.steps[2].bytes == 66)
    #expect(report.steps[2].outputs.isEmpty)
  }

  // MARK: An answer that should be JSON

  /// The `table` and `request` steps, each saving FRUITS' answer to `out/answer.json`.
  static let savingSteps = [
    "table: { resource: FRUITS, output: out/answer.json }", "request: { resource: FRUITS, output: out/answer.json }",
  ]

  /// `request` once saved an HTML error page, or `NaN`, as its answer and succeeded
  /// without a word, where `table` refused the same answer naming its Content-Type. One
  /// rule for both: the body decides (one JSON document, RFC 8259, read strictly), the
  /// Content-Type is named when it says otherwise, and a refused answer is not saved.
  @Test(arguments: savingSteps)
  func anAnswerThatIsNotJSONFailsBothStepsNamingItsContentType(_ step: String) throws {
    let answers: [(fault: String, reason: String, sentAs: String?)] = [
      (
        #"{"path": "/api/v1/rpc/FRUITS/", "content_type": "text/html", "body": "<html><body>502 Bad Gateway</body></html>"}"#,
        "the answer is not valid JSON ('<html><body>502' is not a JSON value, at byte 0)", "Content-Type: text/html, Content-Encoding: gzip"
      ),
      (
        #"{"path": "/api/v1/rpc/FRUITS/", "body": "NaN"}"#, "NaN is not a JSON number; the answer is refused (JSON has no NaN or Infinity)",
        nil
      ),
    ]
    for answer in answers {
      let emulator = try Emulator(["--fault", answer.fault])
      let folder = TemporaryDirectory()
      let (_, report) = try runJob(
        folder, JobText.header(job: "answers", emulator: emulator) + "steps:\n  - id: fruits\n    " + step + "\n")
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "answer_unreadable")
      let what = step.hasPrefix("table") ? "a table answer" : "a JSON document"
      #expect(
        report.steps[0].errorMessage
          == "the answer of FRUITS is not \(what): \(answer.reason)\(answer.sentAs.map { " (the server sent it as \($0))" } ?? ""); the answer was discarded, so the next run downloads it again"
      )
      #expect(!FileManager.default.fileExists(atPath: folder.path + "/out/answer.json"))
    }
  }

  /// A JSON answer under another Content-Type is read as JSON by both steps, and the step's
  /// note names what the server called it.
  @Test(arguments: savingSteps)
  func aJSONAnswerUnderAnotherContentTypeIsSavedWithANote(_ step: String) throws {
    let emulator = try Emulator([
      "--fault",
      #"{"path": "/api/v1/rpc/FRUITS/", "content_type": "text/plain", "body": "\#(fruitsAnswer.replacing("\"", with: "\\\""))"}"#,
    ])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(folder, JobText.header(job: "answers", emulator: emulator) + "steps:\n  - id: fruits\n    " + step + "\n")
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try text(folder.path + "/out/answer.json") == fruitsAnswer)
    #expect(
      report.steps[0].notes.contains(
        "the server sent the answer as Content-Type: text/plain, Content-Encoding: gzip; its body is a JSON document and was read as one"))
  }
}
