import DrayTransport
import Testing

/// The matching rule of a replay (docs/recordings.md): a recorded text's `{{secret:N}}`
/// placeholders stand for any text, and so does an unresolved credential in the text sent.
@Suite struct PlaceholderMatchTests {
  @Test func aTextWithoutPlaceholdersMatchesOnlyItself() {
    #expect(PlaceholderMatch.matches("GET /orders?page=2", "GET /orders?page=2"))
    #expect(!PlaceholderMatch.matches("GET /orders?page=2", "GET /orders?page=3"))
    #expect(!PlaceholderMatch.matches("a", "ab"))
  }

  @Test func aPlaceholderStandsForAnyTextAtItsPlace() {
    let recorded = "user=demo&password={{secret:1}}&device=x"
    #expect(PlaceholderMatch.matches(recorded, "user=demo&password=hunter2&device=x"))
    #expect(PlaceholderMatch.matches(recorded, "user=demo&password=&device=x"))
    #expect(!PlaceholderMatch.matches(recorded, "user=other&password=hunter2&device=x"))
    #expect(!PlaceholderMatch.matches(recorded, "user=demo&password=hunter2&device=y"))
    #expect(PlaceholderMatch.matches("{{secret:1}}:{{secret:2}}", "a:b"))
    #expect(!PlaceholderMatch.matches("{{secret:1}}:{{secret:2}}", "ab"))
    // The literal end may not overlap the literal start.
    #expect(!PlaceholderMatch.matches("ab{{secret:1}}ba", "aba"))
  }

  @Test func literalsCutAtPlaceholdersOnly() {
    #expect(PlaceholderMatch.literals("x{{secret:12}}y{{secret:}}z") == ["x", "y{{secret:}}z"])
    #expect(PlaceholderMatch.placeholder(3) == "{{secret:3}}")
  }

  @Test func anUnresolvedCredentialInTheSentTextStandsForAnyText() {
    let recorded = PlaceholderMatch.literals("username=demo&password={{secret:1}}&device_id=dray-cli")
    #expect(PlaceholderMatch.matchesUnresolved(recorded, "username=%28not%20set%29&password=%28not%20set%29&device_id=dray-cli"))
    #expect(PlaceholderMatch.matchesUnresolved(recorded, "username=(not set)&password=x&device_id=dray-cli"))
    #expect(!PlaceholderMatch.matchesUnresolved(recorded, "username=%28not%20set%29&password=x&device_id=other"))
    #expect(!PlaceholderMatch.matchesUnresolved(PlaceholderMatch.literals("q=1"), "q=2"))
  }
}
