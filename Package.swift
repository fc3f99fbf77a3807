// swift-tools-version:6.0
import PackageDescription

/// The commit `make release` bakes into `dray version` (scripts/release.sh sets DRAY_COMMIT);
/// a build without it says "commit unknown". Only CBuildInfo is compiled again when it changes.
let buildCommit = Context.environment["DRAY_COMMIT"] ?? ""

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
    /// OpenSSL's libcrypto: SHA-256 for table names and step fingerprints.
    .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    /// libxml2: XML answers of the `http` step, read with its streaming xmlTextReader.
    .systemLibrary(name: "CXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
    /// libpq: connections to a PostgreSQL target database.
    .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    /// The commit `make release` builds from (`buildCommit`), empty otherwise.
    .target(
      name: "CBuildInfo",
      cSettings: buildCommit.isEmpty ? [] : [.define("DRAY_COMMIT", to: "\"\(buildCommit)\"")]
    ),

    // MARK: Model: plain Sendable values shared by every layer

    /// The resolved job as plain values: manifest, steps, retry policy, JSON values, SQL templates,
    /// secrets and their redaction, SHA-256 for names and fingerprints, dray's version and commit.
    .target(name: "DrayModel", dependencies: ["CCrypto", "CBuildInfo"]),
    /// JSON read by dray's one reader (`JSONLexer`, RFC 8259 strictly): whole documents into
    /// `JSONValue`, table answers row by row (`TableAnswerScanner`, `AnswerReader`), the events the
    /// record readers follow (`JSONEvents`).
    .target(name: "DrayJSON", dependencies: ["DrayModel"]),

    // MARK: Manifest loading

    /// The manifest language: YAML node tree with positions, interpolation, its one declaration
    /// (`ManifestSchema`), validation into `DrayModel`.
    .target(name: "DrayManifest", dependencies: ["DrayModel", "DrayJSON", "CYAML"]),

    // MARK: Storage, transport, platform client

    /// The target seam: what the engine asks of a job's database (`JobDatabase`, `TargetStore`,
    /// `StoreTransaction`, `RunJournal`) and its vocabulary (values, load results, cursors,
    /// journal records, store errors, the naming rule, the bookkeeping tables).
    .target(name: "DrayTarget", dependencies: ["DrayModel", "DrayJSON"]),
    /// SQLite behind the seam: connection, streaming table loads, the run journal.
    .target(name: "DraySQLite", dependencies: ["DrayModel", "DrayJSON", "DrayTarget", "CSQLite"]),
    /// PostgreSQL over libpq: connections, COPY, the value and identifier rules, the run lock.
    .target(name: "DrayPostgres", dependencies: ["DrayModel", "DrayJSON", "CLibPQ"]),
    /// PostgreSQL behind the store seam: `PostgresStore` (schemes, COPY loads, SQL) and
    /// `PostgresJournal` (runs, checkpoints, the run lock and its fencing generation).
    .target(name: "DrayPostgresStore", dependencies: ["DrayModel", "DrayJSON", "DrayTarget", "DrayPostgres"]),
    /// The one place that opens a database: picks the store behind the seam from a manifest or
    /// a command line's DATABASE argument.
    .target(
      name: "DrayDatabases", dependencies: ["DrayModel", "DrayTarget", "DraySQLite", "DrayPostgres", "DrayPostgresStore"]),
    /// Records of JSON and XML answers (JSON Pointer, element paths) into SQLite tables.
    .target(name: "DrayRecords", dependencies: ["DrayModel", "DrayJSON", "CXML2"]),
    /// HTTP over libcurl: requests streamed to sinks, error classes, retries, resumable downloads.
    .target(name: "DrayTransport", dependencies: ["DrayModel", "DrayJSON", "CCurl"]),
    /// The mobile platform's API (platform-api.md): token, schemes, rpc, files.
    .target(name: "DrayPlatform", dependencies: ["DrayModel", "DrayJSON", "DrayTransport"]),

    // MARK: Report page

    /// The HTML page of a run and its job's history: a pure function of the decoded JSON report
    /// and the journal's runs.
    .target(name: "DrayReportPage", dependencies: ["DrayModel", "DrayJSON"]),

    // MARK: Engine

    /// Runs a job's steps in order with checkpoints, the lock, the journal and the report files.
    .target(
      name: "DrayEngine",
      dependencies: [
        "DrayModel", "DrayJSON", "DrayTarget", "DrayRecords", "DrayTransport", "DrayPlatform",
        "DrayReportPage",
      ]
    ),

    // MARK: Command line

    /// The `dray` commands, testable in-process.
    .target(
      name: "DrayCLI",
      dependencies: [
        "DrayModel", "DrayJSON", "DrayManifest", "DrayTarget", "DrayDatabases", "DrayRecords", "DrayTransport", "DrayEngine",
      ]
    ),
    /// The thin executable.
    .executableTarget(name: "dray", dependencies: ["DrayCLI"]),

    // MARK: Benchmarks

    /// COPY of generated rows through the PostgreSQL value rule (Benchmarks/postgres-copy.py).
    .executableTarget(
      name: "dray-bench-postgres", dependencies: ["DrayModel", "DrayJSON", "DrayPostgres"], path: "Benchmarks/PostgresCopy"),
    /// Whole JSON documents into `JSONValue` and a table answer through the scanner, timed
    /// (Benchmarks/json-parse.py).
    .executableTarget(name: "dray-bench-json", dependencies: ["DrayModel", "DrayJSON"], path: "Benchmarks/JSONParse"),
    /// `Redactor.redact(_:)` over 64 KiB excerpts, timed (docs/report.md, "Secrets").
    .executableTarget(name: "dray-bench-redact", dependencies: ["DrayModel"], path: "Benchmarks/Redact"),

    // MARK: Tests

    /// What tests share: the emulator and REST server launchers, the binary and child-process
    /// runners, manifests and jobs run from text, report and database checks, a clock moved by
    /// hand, temporary folders.
    .target(
      name: "DrayTestSupport",
      dependencies: ["DrayModel", "DrayManifest", "DrayTarget", "DrayDatabases", "DraySQLite", "DrayPostgres", "DrayEngine"],
      path: "Tests/DrayTestSupport"),
    .testTarget(name: "DrayJSONTests", dependencies: ["DrayModel", "DrayJSON", "DrayTestSupport"]),
    .testTarget(name: "DrayManifestTests", dependencies: ["DrayModel", "DrayManifest", "DrayTestSupport"], exclude: ["Fixtures"]),
    .testTarget(name: "DraySQLiteTests", dependencies: ["DrayModel", "DrayJSON", "DrayTarget", "DraySQLite", "DrayTestSupport"]),
    .testTarget(name: "DrayPostgresTests", dependencies: ["DrayModel", "DrayJSON", "DrayPostgres", "DrayTestSupport"]),
    .testTarget(name: "DrayRecordsTests", dependencies: ["DrayModel", "DrayRecords", "DrayTestSupport"]),
    .testTarget(name: "DrayTransportTests", dependencies: ["DrayModel", "DrayTransport", "DrayPlatform", "DrayTestSupport"]),
    .testTarget(
      name: "DrayReportPageTests", dependencies: ["DrayModel", "DrayJSON", "DrayReportPage", "DrayTestSupport"], exclude: ["Fixtures"]),
    .testTarget(
      name: "DrayEngineTests",
      dependencies: [
        "DrayModel", "DrayJSON", "DrayManifest", "DrayTarget", "DraySQLite", "DrayPostgres", "DrayPostgresStore", "DrayTransport",
        "DrayEngine",
        "DrayTestSupport",
      ]
    ),
    /// Runs the built `dray` binary (hence the dependency on the executable).
    .testTarget(name: "DrayCLITests", dependencies: ["dray", "DrayModel", "DrayTarget", "DraySQLite", "DrayPostgres", "DrayTestSupport"]),
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
