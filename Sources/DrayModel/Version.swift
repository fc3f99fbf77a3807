internal import CBuildInfo

/// dray's version, as `dray version` and the `User-Agent` give it.
public enum DrayVersion {
  public static let current = "0.1.0"

  /// The git commit this binary was built from (`git describe --always --dirty`, baked in by
  /// `make release`), or nil for a build that did not say (`swift build`, a tree without .git).
  public static var commit: String? {
    let commit = String(cString: dray_build_commit())
    return commit.isEmpty ? nil : commit
  }
}

/// A C library dray calls, and the version of the copy loaded at run time (from the
/// library's own version function, so it names the shared library the process runs on,
/// not the headers dray was built against).
public struct LibraryVersion: Sendable, Equatable {
  /// The library's usual name: "libcurl", "SQLite".
  public var name: String
  /// Its version as the library reports it: "7.88.1".
  public var version: String

  public init(name: String, version: String) {
    self.name = name
    self.version = version
  }

  /// A version given as one number, `major × 10000 + minor × 100 + micro` (libxml2's
  /// `xmlParserVersion`), as "major.minor.micro".
  public init(name: String, packed: Int) {
    self.init(name: name, version: "\(packed / 10000).\(packed / 100 % 100).\(packed % 100)")
  }
}
