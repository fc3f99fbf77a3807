import DrayTestSupport
import Foundation
import Testing

/// What `dray run` prints for people: timestamped plain lines off a terminal, JSON lines,
/// quiet and verbose, and live progress with colour on a terminal (a pseudo-terminal from
/// `script(1)`).
@Suite struct ConsoleOutputTests {
  struct Job {
    let folder = TemporaryDirectory("dray-console")
    let emulator: Emulator
    var manifest: String { folder.path + "/job.yaml" }

    /// - Parameter compression: gzip answers come chunked, without a total for progress.
    init(compression: Bool = true) throws {
      emulator = try Emulator()
      try folder.write(
        "job.yaml",
        JobText.header(job: "console", emulator: emulator, database: "data/db.sqlite", compression: compression) + """
          steps:
            - id: schemes
              schemes: { resources: [FRUITS, COUNTRIES] }
            - id: countries
              table_stream: { resource: COUNTRIES }

          """)
    }

    func run(_ options: [String] = []) throws -> Command.Result {
      try Command.dray(["run", manifest] + options)
    }
  }

  /// `text` with times such as `0.21s` replaced by `N.NNs`, run ids by `RUN`, the job folder by `JOB`.
  static func plain(_ text: String, _ job: Job) throws -> String {
    var out = text.replacing(job.folder.path, with: "JOB")
    out = out.replacing(try Regex(#"[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{6}"#), with: "RUN")
    return out.replacing(try Regex(#"[0-9]+\.[0-9]{2}s"#), with: "N.NNs")
  }

  @Test func offATerminalEveryLogLineIsTimestampedAndPlain() throws {
    let job = try Job()
    let result = try job.run()
    #expect(result.status == 0, "\(result.output)")
    #expect(!result.output.contains("\r") && !result.output.contains("\u{1B}"))
    let stamp = try Regex(#"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z "#)
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(lines.allSatisfy { $0.prefixMatch(of: stamp) != nil }, "\(result.stderr)")
    let messages = try lines.map { try Self.plain(String($0.dropFirst(25)), job) }
    #expect(
      messages == [
        "run RUN of job console",
        "database: created the folder JOB/data, which did not exist (database.path: data/db.sqlite)",
        "step schemes: schemes FRUITS, COUNTRIES",
        "step schemes: ok in N.NNs",
        "step countries: table_stream COUNTRIES",
        "step countries: ok in N.NNs (249 rows, 16.7 KiB, 5.8 KiB on the wire)",
        "report: JOB/.dray/reports/console-RUN.json",
      ])
    #expect(
      try Self.plain(result.stdout, job) == """
        job console: succeeded in N.NNs (run RUN)
          schemes    schemes       succeeded  2 tables
          countries  table_stream  succeeded  249 rows; 16.7 KiB
        total: 249 rows; 16.7 KiB
        report: JOB/.dray/reports/console-RUN.json

        """)
  }

  @Test func jsonLogLinesAreOneObjectEach() throws {
    let job = try Job()
    let result = try job.run(["--log-format", "json", "--verbose"])
    #expect(result.status == 0, "\(result.output)")
    let objects = try result.stderr.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    #expect(objects.allSatisfy { Set($0.keys) == ["time", "level", "step", "message"] })
    #expect(objects.first?["step"] is NSNull)
    #expect(objects.first?["level"] as? String == "info")
    let countries = objects.filter { $0["step"] as? String == "countries" }
    #expect(
      try countries.map { "\($0["level"] ?? "") " + (try Self.plain($0["message"] as? String ?? "", job)) }.prefix(3) == [
        "info table_stream COUNTRIES", "debug attempt 1: ok, HTTP 200 in N.NNs",
        "info ok in N.NNs (249 rows, 16.7 KiB, 5.8 KiB on the wire)",
      ])
    let runID = try #require(Self.runID(result.stdout))
    let last = try #require(countries.last?["message"] as? String)
    #expect(last.hasPrefix("checkpoint before: none; after: succeeded in run \(runID), fingerprint "))
  }

  static func runID(_ summary: String) -> String? {
    summary.firstMatch(of: #/\(run ([0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{6})\)/#).map { String($0.1) }
  }

  @Test func quietPrintsNothingForAGoodRunAndTheProblemForABadOne() throws {
    let job = try Job()
    let good = try job.run(["--quiet"])
    #expect(good.status == 0)
    #expect(good.stdout == "" && good.stderr == "")
    try job.emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/COUNTRIES/", "status": 404, "description": "gone"}]"#)
    let bad = try job.run(["--quiet"])
    #expect(bad.status == 1)
    let url = job.emulator.url + "api/v1/rpc/COUNTRIES/"
    #expect(
      try Self.plain(bad.stderr, job).hasSuffix(
        " error: step countries: table_stream failed after N.NNs: HTTP 404 Not Found from \(url): gone\n"))
    #expect(bad.stdout.hasPrefix("job console: failed in "))
  }

  @Test func quietAndVerboseOrAnUnknownLogFormatAreUsageErrors() throws {
    let job = try Job()
    let both = try job.run(["--quiet", "--verbose"])
    #expect(both.status == 2)
    #expect(both.stderr == "dray: --quiet and --verbose do not go together\nRun 'dray help' for usage.\n")
    let xml = try job.run(["--log-format", "xml"])
    #expect(xml.status == 2)
    #expect(xml.stderr == "dray: --log-format xml: unknown format; formats: text, json\nRun 'dray help' for usage.\n")
  }

  /// Runs `dray run` on a pseudo-terminal and returns everything it wrote there.
  func onATerminal(_ job: Job, environment: [String: String]) throws -> Command.Result {
    let command = "'\(Repository.drayBinary)' run '\(job.manifest)'"
    return try Command.run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], environment: environment)
  }

  @Test func onATerminalProgressIsRedrawnInPlaceAndStatusesAreColoured() throws {
    let job = try Job(compression: false)
    // COUNTRIES (17067 bytes) trickles at 6000 bytes/s: about 3 s of progress.
    try job.emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 6000}]"#)
    let result = try onATerminal(job, environment: ["TERM": "xterm-256color", "NO_COLOR": ""])
    #expect(result.status == 0, "\(result.output)")
    let screen = result.stdout
    // No timestamps on a terminal; progress lines redrawn with carriage return and erase-line.
    #expect(screen.contains("step countries: table_stream COUNTRIES\r\n"))
    #expect(screen.contains("\r\u{1B}[K  countries  table_stream  "))
    let progress = try Regex(#"  countries  table_stream  [0-9.]+ KiB of 16\.7 KiB  [0-9]+%  [0-9.]+ KiB/s  [0-9.]+s left"#)
    #expect(screen.contains(progress), "\(screen.debugDescription)")
    #expect(screen.contains("\r\u{1B}[Kstep countries: ok in "))
    #expect(screen.contains("  countries  table_stream  \u{1B}[32msucceeded\u{1B}[0m  249 rows; 16.7 KiB"))

    try job.emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 6000}]"#)
    let plain = try onATerminal(job, environment: ["TERM": "xterm-256color", "NO_COLOR": "1"])
    #expect(plain.status == 0, "\(plain.output)")
    #expect(plain.stdout.contains("\r\u{1B}[K  countries  table_stream  "))
    #expect(!plain.stdout.contains("\u{1B}[3"))
    #expect(plain.stdout.contains("  countries  table_stream  succeeded  249 rows; 16.7 KiB"))
  }

  // MARK: Server text

  /// A body that tries to pass for log lines and one that sends terminal control codes.
  static let forged = "oops\n2026-11-30T12:00:00.000Z step r: ok in 0.01s (999 rows)\njob fj: succeeded\n"
  /// Terminal codes, and bidi formatting characters that make `gnp.exe` show as
  /// `exe.png` or reorder a message (Trojan Source, CVE-2021-42574).
  static let controls =
    "\u{1B}[2J\u{1B}[31mred\u{07} alert\r\n\tdone \u{202E}gnp.exe\u{202C} \u{2066}x\u{2069}\u{2067}\u{2068}\u{202A}\u{202B}\u{202D}\u{200E}\u{200F}\u{061C}"

  /// Characters below U+0020 but `\n`, DEL, the C1 controls (U+0080 to U+009F) and the
  /// Unicode bidi formatting characters.
  static func controlCharacters(_ text: String) -> [UInt32] {
    let bidi: Set<UInt32> = [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
    return text.unicodeScalars.map(\.value).filter { ($0 < 0x20 && $0 != 0x0A) || (0x7F...0x9F).contains($0) || bidi.contains($0) }
  }

  @Test func serverTextCannotForgeLogLinesOrSendControlCodes() throws {
    let server = try RestServer()
    let rules: [[String: Any]] = [
      ["path": "/forge", "status": 500, "body": Self.forged], ["path": "/controls", "status": 409, "body": Self.controls],
    ]
    try server.setRules(String(decoding: try JSONSerialization.data(withJSONObject: rules), as: UTF8.self))
    let job = try Job()
    let description = ["path": "/api/v1/rpc/COUNTRIES/", "status": 404, "description": Self.controls] as [String: Any]
    try job.emulator.admin(
      "POST", "faults", json: String(decoding: try JSONSerialization.data(withJSONObject: [description]), as: UTF8.self))
    try job.folder.write(
      "rest.yaml",
      """
      version: 1
      job: rest
      retry: { count: 0 }
      steps:
        - id: r
          parallel:
            steps:
              - id: forge
                http: { base_url: "\(server.url)", path: forge }
              - id: controls
                http: { base_url: "\(server.url)", path: controls }

      """)
    let rest = try Command.dray(["run", job.folder.path + "/rest.yaml"])
    #expect(rest.status == 1)
    let platform = try job.run()
    #expect(platform.status == 1)
    for result in [rest, platform] {
      #expect(Self.controlCharacters(result.stdout) == [], "\(result.stdout.debugDescription)")
      #expect(Self.controlCharacters(result.stderr) == [], "\(result.stderr.debugDescription)")
      // Every line of standard error is one of dray's, stamped with the time of writing.
      let stamp = try Regex(#"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (run |database: |step |error: |report: )"#)
      #expect(result.stderr.split(separator: "\n").allSatisfy { $0.prefixMatch(of: stamp) != nil }, "\(result.stderr)")
      #expect(!result.output.split(separator: "\n").contains { $0.hasPrefix("job fj") || $0.hasPrefix("2026-11-30T12:00:00.000Z") })
    }
    let forged =
      "HTTP 500 Internal Server Error from \(server.url)forge: oops ⏎ 2026-11-30T12:00:00.000Z step r: ok in 0.01s (999 rows) ⏎ job fj: succeeded"
    #expect(rest.stdout.contains("    forge     http      failed     \(forged); gave up after 1 attempt (retry.count: 0)\n"))
    let shown =
      #"\u{1B}[2J\u{1B}[31mred\u{7} alert ⏎ done \u{202E}gnp.exe\u{202C} \u{2066}x\u{2069}\u{2067}\u{2068}\u{202A}\u{202B}\u{202D}\u{200E}\u{200F}\u{61C}"#
    #expect(rest.stdout.contains("    controls  http      failed     HTTP 409 Conflict from \(server.url)controls: \(shown)"))
    #expect(rest.stderr.contains("error: step forge: http failed after "))
    let countries = "HTTP 404 Not Found from \(job.emulator.url)api/v1/rpc/COUNTRIES/: \(shown)"
    #expect(platform.stdout.contains("  countries  table_stream  failed     \(countries)\n"), "\(platform.stdout)")
    let report = try #require(platform.stdout.split(separator: "\n").last.map { String($0.dropFirst("report: ".count)) })
    #expect(try String(contentsOfFile: report, encoding: .utf8).contains(countries.replacing("\\", with: "\\\\")))

    // On a terminal, with colour, the server's codes are still shown, never sent.
    let screen = try onATerminal(job, environment: ["TERM": "xterm-256color", "NO_COLOR": ""])
    #expect(screen.status == 1)
    #expect(
      screen.stdout.contains("  countries  table_stream  \u{1B}[31mfailed\u{1B}[0m     \(countries)"), "\(screen.stdout.debugDescription)")
    #expect(!screen.stdout.contains("\u{1B}[2J") && !screen.stdout.contains("\u{07}") && !screen.stdout.contains("\u{202E}"))
  }
}
