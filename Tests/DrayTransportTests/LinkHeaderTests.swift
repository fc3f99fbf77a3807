import DrayModel
import DrayTransport
import Testing

@Suite struct LinkHeaderTests {
  @Test func findsTheNextTargetAmongSeveralLinksAndFields() {
    var headers = HTTPHeaders()
    headers.add("Link", #"<https://api.example.com/items?page=1>; rel="first", <https://api.example.com/items?page=9>; rel=last"#)
    headers.add("link", #"</items?page=3&per_page=10>; title="next, please; now"; REL="prev NEXT""#)
    let links = LinkHeader(headers)
    #expect(
      links.links.map(\.target) == [
        "https://api.example.com/items?page=1", "https://api.example.com/items?page=9", "/items?page=3&per_page=10",
      ])
    #expect(links.links.map(\.relations) == [["first"], ["last"], ["prev", "next"]])
    #expect(links.target("next") == "/items?page=3&per_page=10")
    #expect(links.target("Last") == "https://api.example.com/items?page=9")
    #expect(links.target("up") == nil)
  }

  @Test func onlyTheFirstRelCountsAndBrokenFieldsGiveNothing() {
    #expect(LinkHeader(HTTPHeaders([HTTPHeader("Link", #"<a>; rel=prev; rel=next"#)])).target("next") == nil)
    #expect(LinkHeader(HTTPHeaders([HTTPHeader("Link", "no brackets; rel=next")])).links.isEmpty)
    #expect(LinkHeader(HTTPHeaders([HTTPHeader("Link", "<unterminated; rel=next")])).links.isEmpty)
  }
}
