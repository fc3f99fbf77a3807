import DrayTransport
import Testing

@Suite struct OriginTests {
  @Test func theDefaultPortIsFilledInWhetherWrittenOrNot() {
    #expect(Origin("https://a.test/x")?.description == "https://a.test:443")
    #expect(Origin("https://a.test:443/x")?.description == "https://a.test:443")
    #expect(Origin("http://a.test")?.description == "http://a.test:80")
    #expect(Origin("http://a.test:80/")?.description == "http://a.test:80")
    #expect(Origin("https://a.test/") == Origin("https://a.test:443/"))
    #expect(Origin("http://a.test/") == Origin("http://a.test:80/"))
  }

  @Test func anotherPortOrSchemeIsAnotherOrigin() {
    #expect(Origin("http://a.test:8080/x")?.description == "http://a.test:8080")
    #expect(Origin("http://a.test:8080/") != Origin("http://a.test/"))
    #expect(Origin("https://a.test:80/") != Origin("http://a.test/"))
    #expect(Origin("http://a.test:443/") != Origin("https://a.test/"))
    #expect(Origin("http://a.test/") != Origin("https://a.test/"))
    #expect(Origin("http://a.test/") != Origin("http://b.test/"))
  }

  @Test func schemeAndHostAreInLowerCase() {
    #expect(Origin("HTTP://A.test/x")?.description == "http://a.test:80")
    #expect(Origin("HTTPS://API.Example.COM:8443/Path")?.description == "https://api.example.com:8443")
    #expect(Origin("https://API.example.com/") == Origin("https://api.example.com/other"))
  }

  @Test func userinfoPathQueryAndFragmentAreNoPartOfIt() {
    let origin = Origin("https://user:pass@a.test:8443/p/q?token=x#f")
    #expect(origin?.description == "https://a.test:8443")
    #expect(origin == Origin("https://a.test:8443"))
    #expect(Origin("http://user@a.test/") == Origin("http://a.test/"))
  }

  @Test func anIPv6HostKeepsItsBracketsInTheTextOnly() {
    let origin = Origin("http://[::1]:8080/x")
    #expect(origin?.host == "::1")
    #expect(origin?.port == 8080)
    #expect(origin?.description == "http://[::1]:8080")
    #expect(Origin("https://[2001:DB8::1]/")?.description == "https://[2001:db8::1]:443")
    #expect(Origin("http://[::1]/") == Origin("http://[::1]:80/"))
  }

  @Test func aURLWithoutSchemeHostOrKnownPortHasNone() {
    #expect(Origin("/relative/path") == nil)
    #expect(Origin("a.test/x") == nil)
    #expect(Origin("http:///x") == nil)
    #expect(Origin("mailto:someone@a.test") == nil)
    #expect(Origin("ftp://a.test/f") == nil)
    #expect(Origin("ftp://a.test:21/f")?.description == "ftp://a.test:21")
  }
}
