import DrayJSON
import DrayModel
import DrayTestSupport
import Testing

/// Table answers (platform-api.md §3) read row by row.
@Suite struct AnswerReaderTests {
  /// What `read` called, in order: `table NAME` and each row's values as JSON.
  func read(_ answer: String) throws -> [String] {
    let folder = TemporaryDirectory()
    var calls: [String] = []
    try AnswerReader(path: try folder.write("answer.json", answer)).read(
      table: { calls.append("table \($0)") },
      row: { calls.append(JSONValue.array($0).json) })
    return calls
  }

  func failure(_ answer: String) -> String? {
    do {
      _ = try read(answer)
      return nil
    } catch let error as AnswerReadError {
      return error.message
    } catch {
      return "\(type(of: error)): \(error)"
    }
  }

  @Test func tablesAndTheirRowsArriveInOrder() throws {
    #expect(
      try read(#"[{"name": "a", "version": 6, "data": [[1, "x", null], [2, [3, {"k": 4.5}], true]]}, {"name": "b", "data": []}]"#)
        == ["table a", #"[1,"x",null]"#, #"[2,[3,{"k":4.5}],true]"#, "table b"])
  }

  /// JSON objects are unordered: rows met before their table's name arrive on a second
  /// pass, after the other tables' rows.
  @Test func rowsBeforeTheirTablesNameArriveOnASecondPass() throws {
    #expect(
      try read(#"[{"data": [[1], [2]], "name": "a"}, {"name": "b", "data": [[3]]}]"#) == ["table b", "[3]", "table a", "[1]", "[2]"])
  }

  /// A delta's lists arrive when asked for, each item of `delete_ids` as a list of one value.
  @Test func aDeltasListsArriveWhenAskedFor() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "answer.json", #"[{"insert_rows": [[1, "x"]], "delete_ids": [4, 5], "name": "a"}, {"name": "b", "delete_ids": [6]}]"#)
    var calls: [String] = []
    try AnswerReader(path: path).read(
      sections: [.insertRows, .deleteIDs], table: { calls.append("\($1.rawValue) \($0)") }, row: { calls.append(JSONValue.array($0).json) })
    #expect(calls == ["delete_ids b", "[6]", "insert_rows a", #"[1,"x"]"#, "delete_ids a", "[4]", "[5]"])
    let error = #expect(throws: AnswerReadError.self) {
      try AnswerReader(path: try folder.write("ids.json", #"[{"name": "b", "delete_ids": [[6]]}]"#)).read(
        sections: [.deleteIDs], table: { _, _ in }, row: { _ in })
    }
    #expect(error?.message == "table 'b': delete_ids holds row ids (integers), found a list")
  }

  /// "at byte N" counts from 0 (docs/steps.md, "An answer that should be JSON"): the `<` of
  /// `{"x": 1} <html>` is byte 9, that of `<html>` byte 0.
  @Test func bytesInMessagesCountFromZero() throws {
    let folder = TemporaryDirectory()
    let trailing = JSONEvents.documentProblem(path: try folder.write("trailing.json", #"{"x": 1} <html>"#))
    #expect(trailing?.hasSuffix(", at byte 9)") == true, "\(trailing ?? "")")
    let page = JSONEvents.documentProblem(path: try folder.write("page.json", "<html>"))
    #expect(page == "the answer is not valid JSON ('<html>' is not a JSON value, at byte 0)")
  }

  @Test func whatIsNotATableAnswerIsNamed() {
    #expect(failure("") == "the answer is empty; expected a JSON list of tables")
    #expect(
      failure("[{\"name\": \"a\", \"data\": [[1]")
        == "table 'a', row 2: the answer ends before its JSON is complete (27 bytes); the download was cut short")
    #expect(failure("[x]") == "the answer is not valid JSON ('x' is not a JSON value, at byte 1)")
    #expect(failure(#"{"name": "a"}"#) == "the answer must be a JSON list of tables, found an object")
    #expect(failure("3") == "the answer must be a JSON list of tables, found a number")
    #expect(failure(#"[{"name": "a"}, {"data": [[1]]}]"#) == "an element of the answer has no 'name'")
    #expect(failure(#"[{"name": "a", "delete_ids": [[1]]}]"#) == nil)
    #expect(failure(#"[{"name": "a", "data": [1]}]"#) == "table 'a', row 1: each row must be a JSON list of values, found a number")
    let deep = #"[{"name": "a", "data": [["# + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "]]}]"
    #expect(failure(deep)?.contains("nested deeper than 512 levels at byte") == true)
  }

  @Test func anErrorOfTheCallerPassesThroughUnchanged() {
    struct Enough: Error {}
    let folder = TemporaryDirectory()
    #expect(throws: Enough.self) {
      try AnswerReader(path: try folder.write("answer.json", #"[{"name": "a", "data": [[1], [2]]}]"#)).read(
        table: { _ in }, row: { _ in throw Enough() })
    }
    #expect(throws: AnswerReadError.self) { try AnswerReader(path: folder.path + "/missing.json").read(table: { _ in }, row: { _ in }) }
  }
}
