import DrayModel
import Testing

/// `Placeholders`: the names in a text, braces, and how values land in URL paths and file
/// names.
@Suite struct PlaceholderTextTests {
  @Test func namesAndLiteralBraces() throws {
    #expect(try Placeholders.names(in: "/repos/{owner}/{repo}/{owner}") == ["owner", "repo", "owner"])
    #expect(try Placeholders.names(in: "{{literal}} {_x1}") == ["_x1"])
    let partition = Partition([("term", "pears")])
    #expect(try Placeholders.fill("{{\"q\": \"{term}\"}}", partition) == "{\"q\": \"pears\"}")
    for (text, offset) in [("a {", 2), ("{}", 0), ("x}", 1), ("{1a}", 0), ("{a b}", 0), ("ok {{ {bad-name}", 6)] {
      #expect(throws: Placeholders.Problem.self, "\(text)") { try Placeholders.names(in: text) }
      do {
        _ = try Placeholders.names(in: text)
      } catch {
        #expect(error.offset == offset, "\(text)")
      }
    }
  }

  @Test func fileNamesKeepValuesInOneName() {
    #expect(Placeholders.fileName("2024-01-01T00:00:00+02:00") == "2024-01-01T00%3A00%3A00+02%3A00")
    #expect(Placeholders.fileName("a/b\\c") == "a%2Fb%5Cc")
    #expect(Placeholders.fileName("..") == "%2E%2E")
    #expect(Placeholders.fileName(".") == "%2E")
    #expect(Placeholders.fileName("...x") == "...x")
    #expect(Placeholders.fileName("50% {off}") == "50%25 %7Boff%7D")
    #expect(Placeholders.fileName("Zürich ok-_.") == "Zürich ok-_.")
    #expect(Placeholders.fileName("tab\there") == "tab%09here")
  }

  @Test func outputsTakeFileNamesAndKeepThePageNumber() throws {
    let step = HTTPStep(baseURL: "https://h", path: "/d/{day}", output: "out/{day}/{page}.json")
    let filled = try step.filled(with: Partition([("day", "2024-01-01T00:00:00Z")]))
    #expect(filled.output == "out/2024-01-01T00%3A00%3A00Z/{page}.json")
    #expect(filled.path == "/d/2024-01-01T00%3A00%3A00Z")
    let escaping = try step.filled(with: Partition([("day", "../..")]))
    #expect(escaping.output == "out/..%2F../{page}.json")
  }
}
