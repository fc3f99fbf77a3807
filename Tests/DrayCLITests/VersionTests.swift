import DrayModel
import DrayTestSupport
import Foundation
import Testing

@Suite struct VersionTests {
  /// `dray version` names each C library with the version of the copy it loaded, which on this
  /// machine is the Debian package's (pkg-config reads the same package's metadata).
  @Test func versionPrintsTheCommitAndTheLibrariesItRunsOn() throws {
    let result = try Command.dray(["version"])
    #expect(result.status == 0)
    #expect(result.stderr == "")
    var expected = ["dray \(DrayVersion.current)", "commit \(DrayVersion.commit ?? "unknown")"]
    let libraries = [
      ("libyaml", "yaml-0.1"), ("SQLite", "sqlite3"), ("libcurl", "libcurl"),
      ("OpenSSL", "libcrypto"), ("libxml2", "libxml-2.0"),
      ("libpq", "libpq"),
    ]
    for (name, package) in libraries {
      let version = try Command.run("/usr/bin/pkg-config", ["--modversion", package]).stdout
      expected.append("\(name) \(version.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
    #expect(result.stdout == expected.joined(separator: "\n") + "\n")
  }
}
