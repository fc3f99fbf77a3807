// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "dray",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "dray", targets: ["dray"])
  ],
  targets: [
    // MARK: C libraries from Debian, each behind one system-library target

    /// libyaml: the YAML parser under the manifest loader.
    .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
    /// SQLite: the embedded target database and the run journal.
    .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    /// libcurl: every HTTP request.
    .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    /// yajl: the streaming JSON parser under table loads.
    .systemLibrary(name: "CYAJL", pkgConfig: "yajl", providers: [.apt(["libyajl-dev"])]),
    /// OpenSSL's libcrypto: SHA-256 for table names and step fingerprints.
    .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    /// libxml2: XML answers of the `http` step, read with its streaming xmlTextReader.
    .systemLibrary(name: "CXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),

    // MARK: Model: plain Sendable values shared by every layer

    /// The resolved job: manifest values, retry policy, durations, secrets.
    .target(name: "DrayModel", dependencies: ["CCrypto"]),
    /// JSON documents parsed into `JSONValue` with yajl's tree parser.
    .target(name: "DrayJSON", dependencies: ["DrayModel", "CYAJL"]),

    // MARK: Manifest loading

    /// YAML node tree with positions, interpolation, validation into `DrayModel`.
    .target(name: "DrayManifest", dependencies: ["DrayModel", "DrayJSON", "CYAML"]),

    // MARK: Storage, transport, platform client

    /// SQLite connection, physical table names, streaming table loads.
    .target(name: "DrayStore", dependencies: ["DrayModel", "DrayJSON", "CSQLite", "CYAJL"]),
    /// Records of JSON and XML answers (JSON Pointer, element paths) into SQLite tables.
    .target(name: "DrayRecords", dependencies: ["DrayModel", "DrayJSON", "DrayStore", "CXML2"]),
    /// HTTP over libcurl: requests streamed to sinks, error classes, retries, resumable downloads.
    .target(name: "DrayTransport", dependencies: ["DrayModel", "DrayJSON", "CCurl"]),
    /// The mobile platform's API (platform-api.md): token, schemes, rpc, files.
    .target(name: "DrayPlatform", dependencies: ["DrayModel", "DrayJSON", "DrayTransport"]),

    // MARK: Report page

    /// The HTML page of a run and its job's history: a pure function of the decoded JSON report and the journal's runs.
    .target(name: "DrayReportPage", dependencies: ["DrayModel", "DrayJSON"]),

    // MARK: Engine

    /// Runs a job's steps in order with checkpoints, the lock, the journal and the report.
    .target(
      name: "DrayEngine",
      dependencies: [
        "DrayModel", "DrayJSON", "DrayManifest", "DrayStore", "DrayRecords", "DrayTransport", "DrayPlatform", "DrayReportPage",
      ]
    ),

    // MARK: Command line

    /// The `dray` commands, testable in-process.
    .target(name: "DrayCLI", dependencies: ["DrayModel", "DrayJSON", "DrayManifest", "DrayStore", "DrayEngine"]),
    /// The thin executable.
    .executableTarget(name: "dray", dependencies: ["DrayCLI"]),

    // MARK: Tests

    /// Fixtures, the emulator launcher, the binary runner.
    .target(name: "DrayTestSupport", dependencies: ["DrayModel", "DrayStore"], path: "Tests/DrayTestSupport"),
    .testTarget(name: "DrayManifestTests", dependencies: ["DrayManifest", "DrayTestSupport"], exclude: ["Fixtures"]),
    .testTarget(name: "DrayStoreTests", dependencies: ["DrayStore", "DrayTestSupport"]),
    .testTarget(name: "DrayRecordsTests", dependencies: ["DrayRecords", "DrayStore", "DrayTestSupport"]),
    .testTarget(name: "DrayTransportTests", dependencies: ["DrayTransport", "DrayPlatform", "DrayTestSupport"]),
    .testTarget(
      name: "DrayReportPageTests", dependencies: ["DrayReportPage", "DrayModel", "DrayJSON", "DrayTestSupport"], exclude: ["Fixtures"]),
    .testTarget(name: "DrayEngineTests", dependencies: ["DrayEngine", "DrayTestSupport"]),
    .testTarget(name: "DrayCLITests", dependencies: ["DrayCLI", "dray", "DrayTestSupport"]),
  ]
)

// Strict settings for every Swift target.
for target in package.targets where target.type != .system {
  target.swiftSettings =
    (target.swiftSettings ?? []) + [
      .swiftLanguageMode(.v6),
      .enableUpcomingFeature("ExistentialAny"),
      .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
