import DrayModel
import DrayTestSupport
import Testing

@testable import DrayPostgres

/// `PostgresIdentifier`: quoting, and the rule that keeps names over 63 bytes apart instead
/// of letting PostgreSQL cut them.
@Suite struct PostgresIdentifierTests {
  @Test func quotingDoublesEmbeddedQuotes() {
    #expect(PostgresIdentifier.quoted(#"a"b"#) == #""a""b""#)
    #expect(PostgresIdentifier.quoted("Mixed Case") == #""Mixed Case""#)
  }

  @Test func aNameOf63BytesStaysAsItIs() {
    let name = String(repeating: "n", count: 63)
    #expect(PostgresIdentifier.fitted(name) == name)
  }

  @Test func aLongerNameIsCutAndGetsAHashOfTheWholeName() {
    let name = String(repeating: "n", count: 64)
    let fitted = PostgresIdentifier.fitted(name)
    #expect(fitted == String(repeating: "n", count: 53) + "__" + SHA256.hex(name).prefix(8))
    #expect(fitted.utf8.count == 63)
  }

  @Test func aMultiByteNameIsCutOnACharacterBoundary() {
    // "a" then 3-byte characters: 53 bytes would end inside a character, so the cut is at 52.
    let name = "a" + String(repeating: "€", count: 30)
    let fitted = PostgresIdentifier.fitted(name)
    #expect(fitted == "a" + String(repeating: "€", count: 17) + "__" + SHA256.hex(name).prefix(8))
    #expect(fitted.utf8.count == 62)
    let cyrillic = String(repeating: "ж", count: 40)
    #expect(PostgresIdentifier.fitted(cyrillic) == String(repeating: "ж", count: 26) + "__" + SHA256.hex(cyrillic).prefix(8))
  }

  @Test func twoLongNamesWithTheSameStartStayApartOnTheServer() throws {
    let server = try PostgresServer.shared()
    let connection = try server.connect(database: server.createDatabase())
    let common = String(repeating: "ä", count: 40)
    let names = [common + "_first", common + "_second"]
    #expect(PostgresIdentifier.fitted(names[0]) != PostgresIdentifier.fitted(names[1]))
    for (i, name) in names.enumerated() {
      try connection.execute("CREATE TABLE \(PostgresIdentifier.sql(name)) (n bigint)")
      try connection.execute("INSERT INTO \(PostgresIdentifier.sql(name)) VALUES ($1)", [.integer(Int64(i))])
    }
    for (i, name) in names.enumerated() {
      #expect(try connection.execute("SELECT n FROM \(PostgresIdentifier.sql(name))").rows == [[.integer(Int64(i))]])
    }
    let stored = try connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").rows
    #expect(Set(stored.compactMap { $0[0].text }) == Set(names.map(PostgresIdentifier.fitted)))
  }
}
