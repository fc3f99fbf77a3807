import DrayTestSupport
import Foundation
import Testing

@Suite struct ExitCodeTests {
  func job(_ folder: TemporaryDirectory, host: String, extra: String = "") throws -> String {
    try folder.write(
      "job.yaml",
      """
      version: 1
      job: cli-test
      platform:
        host: \(host)
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        timeouts: { connect: 2s }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: data/db.sqlite }
      retry: { count: 1, interval: 100ms }
      steps:
        - id: schemes
          schemes: {}
        - id: fruits
          table_stream: { resource: FRUITS }
      \(extra)
      """)
  }

  @Test func aGoodRunExitsZeroAndPrintsTheSummary() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let path = try job(folder, host: emulator.url)
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.hasPrefix("job cli-test: succeeded in "))
    #expect(result.stdout.contains("  fruits   table_stream  succeeded  5 rows"))
  }

  @Test func aRelativeCAFileIsReadFromTheJobFolderWhateverTheWorkingDirectory() throws {
    let folder = TemporaryDirectory()
    let (cert, key) = try TestCertificate.make(in: folder, subfolder: "certs")
    let emulator = try Emulator(["--tls-cert", cert, "--tls-key", key])
    let path = try folder.write(
      "tls.yaml",
      """
      version: 1
      job: tls-test
      platform:
        host: \(emulator.url)
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        tls: { ca_file: certs/cert.pem }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: data/db.sqlite }
      steps:
        - id: fruits
          table_stream: { resource: FRUITS }
      """)
    let result = try Command.dray(["run", path], environment: DemoUser.environment, directory: "/")
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stdout.contains("fruits  table_stream  succeeded  5 rows"))
  }

  /// `dray run job.yaml | head -1`: the reader goes away; the run still finishes, records
  /// its end and writes its report.
  @Test func aClosedOutputPipeDoesNotStopTheRun() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let path = try job(folder, host: emulator.url)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Repository.drayBinary)
    process.arguments = ["run", path]
    process.environment = ProcessInfo.processInfo.environment.merging(DemoUser.environment) { $1 }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    try output.fileHandleForReading.close()
    process.waitUntilExit()
    #expect(process.terminationReason == .exit)
    #expect(process.terminationStatus == 0)
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports")
    #expect(reports.count == 1)
    #expect(try folder.read(".dray/reports/\(reports[0])").contains(#""status":"succeeded""#))
  }

  @Test func helpIsAnAnswerNotAnError() throws {
    let help = try Command.dray(["run", "--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("dray run JOB.yaml [--fresh] [--from STEP] [--only STEP]"))
  }

  @Test func aWrongPasswordExitsOneNamesTheStepAndNeverPrintsThePassword() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let path = try job(folder, host: emulator.url)
    let secret = "Sentinel-Pw-93814"
    let result = try Command.dray(["run", path], environment: ["FMP_USER": "demo", "FMP_PASSWORD": secret])
    #expect(result.status == 1)
    #expect(result.stdout.contains("schemes  schemes       failed     sign-in failed: HTTP 401 Unauthorized"))
    #expect(!result.output.contains(secret))
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports")
    #expect(reports.count == 1)
    let report = try folder.read(".dray/reports/\(reports[0])")
    #expect(report.contains(#""id":"schemes","kind":"schemes","status":"failed""#))
    #expect(report.contains("Unauthorized"))
    #expect(!report.contains(secret))
  }

  @Test func anUnreachableHostFailsWithinTheTimeoutNamingTheHost() throws {
    let folder = TemporaryDirectory()
    // Port 9 (discard) on loopback: nothing listens, so the connection is refused.
    let path = try job(folder, host: "http://127.0.0.1:9/")
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 69)  // nothing listens: unavailable
    #expect(result.stdout.contains("cannot connect to 127.0.0.1:9: connection refused"))
    #expect(result.duration < 10)
  }

  /// A host or a proxy that does not resolve fails as a DNS failure naming what did not
  /// resolve, retried as the policy says: each retry is a real attempt (a DNS failure once
  /// spoiled libcurl's handle for every retry after it: "libcurl refused option 98").
  @Test func aHostOrProxyThatDoesNotResolveIsNamedAndRetried() throws {
    let folder = TemporaryDirectory()
    let path = try job(folder, host: "http://host.that-does-not-exist.invalid/")
    let host = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(host.status == 69)
    #expect(host.stdout.contains("cannot resolve host 'host.that-does-not-exist.invalid' (DNS failure)"), "\(host.output)")
    #expect(!host.output.contains("libcurl refused"), "\(host.output)")
    let attempts = try Report(host.stdout).step("schemes")["attempts"] as? [[String: Any]]
    #expect(attempts?.compactMap { $0["outcome"] as? String } == ["dns_failure", "dns_failure"], "\(host.stdout)")

    let emulator = try Emulator()
    let proxyFolder = TemporaryDirectory()
    let proxied = try job(proxyFolder, host: emulator.url)
    let proxy = try Command.dray(
      ["run", proxied], environment: DemoUser.environment.merging(["http_proxy": "http://proxy.that-does-not-exist.invalid:3128"]) { $1 })
    #expect(proxy.status == 69)
    #expect(
      proxy.stdout.contains(
        "cannot reach the proxy (Could not resolve proxy: proxy.that-does-not-exist.invalid); check http_proxy, https_proxy and all_proxy"),
      "\(proxy.output)")
    #expect(!proxy.stdout.contains("cannot resolve host '127.0.0.1'"), "\(proxy.output)")
  }

  @Test func anUnknownKeyExitsTwoWithItsPosition() throws {
    let folder = TemporaryDirectory()
    let path = try job(folder, host: "http://127.0.0.1:9/", extra: "reprot: { path: x }")
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 2)
    #expect(result.stderr.hasPrefix("\(path):16:1: error: unknown key 'reprot' at the top level; did you mean 'report'?"))
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/data"))
  }

  @Test func aYAMLSyntaxErrorExitsTwoWithItsPosition() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("bad.yaml", "version: 1\njob: x\nsteps:\n  - sql: [unclosed\n")
    let result = try Command.dray(["validate", path])
    #expect(result.status == 2)
    #expect(result.stderr.hasPrefix("\(path):5:1: error: expected ',' or ']' in the [ ] list opened at line 4, column 10"))
  }

  @Test func usageErrorsExitTwo() throws {
    #expect(try Command.dray([]).status == 2)
    #expect(try Command.dray(["frobnicate"]).status == 2)
    #expect(try Command.dray(["run"]).status == 2)
    let version = try Command.dray(["version"])
    #expect(version.status == 0)
    #expect(version.stdout.hasPrefix("dray "))
    let extra = try Command.dray(["version", "extra"])
    #expect(extra.status == 2)
    #expect(extra.stdout == "")
    #expect(extra.stderr == "dray: version takes no arguments: dray version\nRun 'dray help' for usage.\n")
    #expect(try Command.dray(["version", "--json"]).status == 2)
    let twice = try Command.dray(["plan", "job.yaml", "--only", "a", "--only=b"])
    #expect(twice.status == 2)
    #expect(twice.stderr == "dray: --only is given twice; give it once\nRun 'dray help' for usage.\n")
    // A typo of a command or an option is answered with the closest one.
    #expect(
      try Command.dray(["rnu", "job.yaml"]).stderr.hasPrefix(
        "dray: unknown command 'rnu'; did you mean 'run'? Commands: run, validate, plan, status, report, tables, query, schema, version\n"))
    #expect(
      try Command.dray(["run", "--fersh", "job.yaml"]).stderr.hasPrefix(
        "dray: unknown option '--fersh'; did you mean '--fresh'? Options: --fresh, --from, --join, --log-format, --only"))
    #expect(try Command.dray(["frobnicate"]).stderr.hasPrefix("dray: unknown command 'frobnicate'; commands: run, validate"))
  }
}
