import DrayModel
import Testing

@testable import DrayPostgres

/// `PostgresURL`: libpq's URI shape (PostgreSQL 15 documentation §34.1.1.2), checked with
/// messages that say what to write, and printed only with the password masked.
@Suite struct PostgresURLTests {
  @Test func readsEveryPartPercentDecoded() throws {
    let url = try PostgresURL(
      "postgresql://load%20er:s%40c%3Aret@db.example.com:5433/ware%2Fhouse?sslmode=verify-full&connect_timeout=5&application_name=night%C3%A9"
    )
    #expect(url.user == "load er")
    #expect(url.password == "s@c:ret")
    #expect(url.host == "db.example.com")
    #expect(url.port == 5433)
    #expect(url.database == "ware/house")
    #expect(
      url.parameters == [
        .init(name: "sslmode", value: "verify-full"), .init(name: "connect_timeout", value: "5"),
        .init(name: "application_name", value: "nighté"),
      ])
    #expect(
      url.redacted
        == "postgresql://load%20er:***@db.example.com:5433/ware%2Fhouse?sslmode=verify-full&connect_timeout=5&application_name=night%C3%A9"
    )
    #expect("\(url)" == url.redacted)
  }

  @Test func leavesOutWhatIsNotGiven() throws {
    let url = try PostgresURL("postgres://localhost")
    #expect(url.user == nil && url.password == nil && url.port == nil && url.database == nil)
    #expect(url.host == "localhost")
    #expect(url.redacted == "postgresql://localhost")
    #expect(try PostgresURL("postgresql://").keywordValues.isEmpty)
  }

  @Test func readsIPv6Addresses() throws {
    let url = try PostgresURL("postgresql://u@[::1]:5432/db")
    #expect(url.host == "::1")
    #expect(url.port == 5432)
    #expect(url.redacted == "postgresql://u@[::1]:5432/db")
    #expect(try PostgresURL("postgresql://[2001:db8::5]/db").host == "2001:db8::5")
  }

  @Test func readsASocketFolderFromTheQuery() throws {
    let url = try PostgresURL("postgresql:///warehouse?host=/var/run/postgresql&port=5433")
    #expect(url.host == "/var/run/postgresql")
    #expect(url.port == 5433)
    #expect(url.redacted == "postgresql://:5433/warehouse?host=/var/run/postgresql")
    #expect(url.keywordValues.map(\.keyword) == ["host", "port", "dbname"])
  }

  @Test func masksAPasswordGivenAsAParameter() throws {
    let url = try PostgresURL("postgresql://u@h/db?password=hunter22&sslmode=require")
    #expect(url.password == "hunter22")
    #expect(url.redacted == "postgresql://u:***@h/db?sslmode=require")
    #expect(!url.redacted.contains("hunter22"))
  }

  @Test(arguments: [
    (
      "mysql://u@h/db",
      "'mysql://' is not a PostgreSQL URL; write postgresql://user@host:port/database, such as postgresql://loader@db.example.com:5432/warehouse"
    ),
    (
      "db.example.com/warehouse",
      "a PostgreSQL URL starts with postgresql:// or postgres://, such as postgresql://loader@db.example.com:5432/warehouse"
    ),
    ("postgresql://u:p%zzw@h/db", "the password has a '%' that is not followed by two hex digits; write a literal % as %25"),
    ("postgresql://u@h/d%4", "the database name has '%4', which is not a percent-escape (% and two hex digits); write a literal % as %25"),
    ("postgresql://u@h/d%ff", "the database name is not UTF-8 once percent-decoded; percent-encode its UTF-8 bytes"),
    ("postgresql://u@h/d%00", "the database name holds a NUL character (%00), which PostgreSQL cannot take; remove it"),
    ("postgresql://u@h:54x/db", "the port '54x' is not a number from 1 to 65535"),
    ("postgresql://u@h:70000/db", "the port '70000' is not a number from 1 to 65535"),
    ("postgresql://u@[::1/db", "the IPv6 address '[::1' has no closing ']'; write it as [::1] or [::1]:5432"),
    ("postgresql://u@[::1]x/db", "'x' after the IPv6 address '[::1]' is not a port; write [::1]:5432"),
    ("postgresql://u@[host]/db", "'[host]' is not an IPv6 address; write one in brackets, such as [::1] or [2001:db8::5]"),
    (
      "postgresql://a,b/db",
      "a list of hosts is not supported; name one host (a load balancer or DNS name in front of several servers works)"
    ),
    ("postgresql://u:p#w@h/db", "a PostgreSQL URL has no '#' part; percent-encode a '#' in a password or name as %23"),
    ("postgresql://h/db?sslmode", "the query parameter 'sslmode' has no value; write sslmode=value"),
    (
      "postgresql://h/db?sslmod=require",
      "unknown query parameter 'sslmod' (did you mean 'sslmode'?); the parameters are libpq's connection keywords: https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-PARAMKEYWORDS"
    ),
    ("postgresql://h/db?sslmode=fast", "sslmode 'fast' is not one of disable, allow, prefer, require, verify-ca, verify-full"),
    ("postgresql://h/db?connect_timeout=ten", "connect_timeout 'ten' must be a whole number, 0 or more (seconds)"),
    ("postgresql://h/db?sslmode=require&sslmode=disable", "the query parameter 'sslmode' is given twice; give it once"),
    ("postgresql://h/db?host=other", "the host is given twice, in the URL and as ?host=; give it once"),
    (
      "postgresql://h/db?client_encoding=LATIN1",
      "client_encoding 'LATIN1' is not supported: dray sends and reads UTF-8; remove the parameter"
    ),
    ("postgresql://h/db?replication=true", "a replication connection cannot load tables; remove the 'replication' parameter"),
  ])
  func refusesAMalformedURL(text: String, message: String) {
    #expect(throws: PostgresURLError(message)) { try PostgresURL(text) }
  }

  @Test func neverQuotesThePasswordInAnError() {
    let error = #expect(throws: PostgresURLError.self) { try PostgresURL("postgresql://u:pa55%zzqx7@h/db") }
    #expect(error?.message.contains("pa55") == false)
    #expect(error?.message.contains("qx7") == false)
  }

  /// Our list of keywords is libpq's, so that no valid parameter is refused.
  @Test func keywordsAreTheLinkedLibpqs() {
    #expect(Set(PostgresURL.keywords) == Set(LibPQ.keywords))
  }

  /// A URL that does not parse is shown with both places a password can be written masked.
  @Test func aMalformedURLIsShownWithItsPasswordMasked() {
    #expect(PostgresURL.masked("postgresql://loader:s3cr3t-pw@db:54x/w") == "postgresql://loader:***@db:54x/w")
    #expect(
      PostgresURL.masked("postgresql://loader@db:54x/w?sslmode=require&password=s3cr3t-pw")
        == "postgresql://loader@db:54x/w?sslmode=require&password=***")
    #expect(PostgresURL.masked("postgresql://db:54x/w") == "postgresql://db:54x/w")
  }
}
