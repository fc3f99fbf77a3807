internal import CLibPQ

/// Facts about the libpq dray is linked with.
enum LibPQ {
  /// The connection keywords libpq knows (`PQconndefaults`, PostgreSQL 15 documentation
  /// §34.1.2), compared with `PostgresURL.keywords` by a test.
  static var keywords: [String] {
    guard let options = PQconndefaults() else { return [] }
    defer { PQconninfoFree(options) }
    var names: [String] = []
    var option = options
    while let keyword = option.pointee.keyword {
      names.append(String(cString: keyword))
      option += 1
    }
    return names
  }
}
