/// An SQL identifier (table or column name) as SQLite compares identifiers: byte by byte in
/// UTF-8, with only the ASCII letters `A`–`Z` folded to lower case (`sqlite3StrICmp`).
///
/// Use it to key names in dictionaries and sets, never `String` itself: Swift compares
/// strings by Unicode canonical equivalence, so `"é"` (U+00E9) and `"e\u{301}"` (`e` with
/// a combining acute accent) are equal as Swift strings but are two different columns in
/// SQLite. Likewise `Name` and `name` are one column in SQLite: equal keys here.
///
/// ```swift
/// IdentifierKey("Name") == IdentifierKey("name")        // true
/// IdentifierKey("\u{e9}") == IdentifierKey("e\u{301}")  // false
/// ```
public struct IdentifierKey: Hashable, Sendable {
  /// The name's UTF-8 bytes with ASCII upper-case letters lowered.
  public let folded: [UInt8]

  public init(_ name: String) {
    folded = name.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
  }

  /// Whether `a` and `b` are the same bytes in UTF-8 (no case folding, no Unicode
  /// normalization): the test for "the same name written twice".
  public static func sameBytes(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
  }
}
