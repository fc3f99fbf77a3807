internal import DrayDatabases
internal import DrayEngine
internal import DrayManifest
internal import DrayModel
internal import DrayRecords
internal import DrayTransport

/// `dray version`: dray's version, the commit it was built from, and the C libraries it runs on.
///
/// ```
/// dray 0.1.0
/// commit a7e695a3c0de
/// libcurl 7.88.1
/// SQLite 3.40.1
/// ...
/// ```
///
/// The commit line says `commit unknown` for a build that did not bake one in (`swift build`
/// rather than `make release`). Each library line comes from the library's own version
/// function, so it names the copy loaded at run time.
enum VersionCommand {
  /// The C libraries, in the order of `Package.swift`'s system-library targets.
  static var libraries: [LibraryVersion] {
    [
      YAMLParser.libraryVersion, Databases.sqliteLibrary, HTTPClient.libraryVersion, SHA256.libraryVersion,
      XMLRecordReader.libraryVersion, Databases.postgresLibrary,
    ]
  }

  static func main(_ arguments: [String]) throws(UsageError) -> Int32 {
    guard try Arguments(arguments).positional.isEmpty else { throw UsageError("version takes no arguments: dray version") }
    var lines = ["dray \(DrayVersion.current)", "commit \(DrayVersion.commit ?? "unknown")"]
    lines += libraries.map { "\($0.name) \($0.version)" }
    print(lines.joined(separator: "\n"))
    return ExitCode.success
  }
}
