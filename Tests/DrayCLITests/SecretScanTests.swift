import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Known sentinel secrets, one of each kind a job has, run through jobs that succeed, fail to
/// sign in, meet server errors that echo them back, run verbosely and in JSON, and are
/// interrupted; then every output stream and every file the runs left is searched for them.
@Suite struct SecretScanTests {
  /// One sentinel per source of secrets. Their characters need escaping in a form body, a
  /// JSON string and a URL, so that every encoding is exercised.
  struct Sentinels {
    let tag = String(UUID().uuidString.prefix(8)).lowercased()
    /// `auth.username`, from an environment variable listed under `secrets:` (a user name
    /// is no secret otherwise).
    var user: String { "sentinel-user-\(tag)" }
    /// `auth.password`, from `${file:secrets/password.txt}`.
    var password: String { "Sentinel+Pw/\(tag)=\"x\"" }
    /// A variable listed under `secrets:`, sent as a header and written in SQL.
    var apiKey: String { "Sentinel-Key-\(tag)" }
    /// A variable listed under `secrets:`, the password in a platform URL (refused by
    /// validation, whose message must mask it).
    var proxyPassword: String { "SentinelProxy\(tag)" }

    var all: [(name: String, value: String)] {
      [("auth.username", user), ("auth.password", password), ("API_KEY", apiKey), ("PROXY_PASSWORD", proxyPassword)]
    }
  }

  /// A secret with non-ASCII letters, a character beyond U+FFFF (a UTF-16 surrogate pair),
  /// quotes, a backslash, a space and markup characters, echoed by the platform (sign-in and
  /// a table call) and by an `http` step's server in every encoding of
  /// `Emulator/faults.py`'s `ENCODINGS`, with the platform's short user name `test` in the
  /// job's names. No form of the secret reaches either stream of any run, or any file left
  /// in the job folder; the user name, no secret, leaves every name and path as it is, and
  /// the report is valid.
  @Test func aSecretEchoedInEveryEncodingIsMaskedAndNamesHoldingTheUserNameAreKept() throws {
    let tag = String(UUID().uuidString.prefix(6)).lowercased()
    let password = "Pä\"ss\\wö'rd/&🔑 <\(tag)>"
    let token = "Tök\"en\\/🔑-\(tag)"
    let outside = TemporaryDirectory("dray-secret-encodings-users")
    let users = try JSONSerialization.data(withJSONObject: ["users": [["username": "test", "password": password]]])
    let emulator = try Emulator(["--users", try outside.write("users.json", String(decoding: users, as: UTF8.self))])
    let rest = try RestServer()
    let encodings = [
      "json", "json_upper", "json_php", "json_utf8", "quote", "quote_lower", "quote_plus", "html", "html_named", "html_hex",
      "html_hex_upper", "base64", "base64_url", "html_all_decimal", "html_all_decimal_zeros", "html_all_hex", "html_all_hex_upper",
      "encode_uri", "json_twice", "json_utf8_twice", "quote_twice", "encode_uri_twice", "html_twice", "html_all_hex_twice",
      "quote_of_json", "json_of_quote_plus", "html_of_json", "hex", "hex_upper", "base32", "base32_unpadded", "quoted_printable",
      "quote_folded",
    ]
    let echo = (encodings.map { "\"each_\($0)\"" } + [#""basic""#, #""authorization""#]).joined(separator: ", ")
    try rest.setRules(#"[{"path": "/login", "status": 422, "body": "refused", "echo": [\#(echo)]}]"#)
    let echoForms = (encodings + ["basic"]).map { "\"\($0)\"" }.joined(separator: ", ")
    let folder = TemporaryDirectory("dray-secret-encodings")
    try folder.write("secrets/password.txt", password + "\n")
    try folder.write("secrets/token.txt", token)
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: contest
      secrets: ["${file:secrets/token.txt}"]
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: "${FMP_USER}", password: "${file:secrets/password.txt}" }
      database: { path: data/test.sqlite }
      retry: { count: 2, interval: 10ms, backoff: fixed }
      report: { path: "reports/{job}-{run_id}.json", formats: [json, junit, prometheus] }
      steps:
        - id: test-schemes
          schemes: { resources: [FRUITS] }
        - id: latest-fruits
          table_stream: { resource: FRUITS }
        - id: attest
          retry: { count: 0 }
          http:
            method: POST
            base_url: "\(rest.url)"
            path: login
            auth: { bearer: "${file:secrets/token.txt}" }
            body: { form: { user: "${FMP_USER}", password: "${file:secrets/password.txt}" } }

      """)
    var outputs: [(String, Command.Result)] = []
    func run(_ name: String, _ faults: String, _ options: [String]) throws -> Command.Result {
      try emulator.admin("POST", "faults", json: faults)
      let result = try Command.dray(["run", manifest, "--fresh"] + options, environment: ["FMP_USER": "test"])
      #expect(result.status == 1, "\(name): \(result.output)")
      outputs.append((name, result))
      return result
    }
    let echoing =
      #"[{"path": "/api/v1/auth/", "times": 1, "status": 503, "echo_forms": [\#(echoForms)]}, "#
      + #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "status": 500, "echo_forms": [\#(echoForms)]}]"#
    let text = try run("a verbose run", echoing, ["--verbose"])
    #expect(text.stderr.contains("you sent ***; you sent ***"), "\(text.stderr)")
    let json = try run("a verbose run logging JSON", echoing, ["--verbose", "--log-format", "json"])
    let refused = try run(
      "a run whose sign-in is refused", #"[{"path": "/api/v1/auth/", "status": 401, "echo_forms": [\#(echoForms)]}]"#, [])
    #expect(refused.stdout.contains("sign-in failed: HTTP 401 Unauthorized"), "\(refused.output)")
    #expect(try rest.requests().count == 2)

    // No form of a secret anywhere.
    var scan = SecretScan()
    for (name, value) in [("the password", password), ("the bearer token", token)] {
      for form in SecretForms.every(value) { scan.sentinels.append((name, form)) }
    }
    for request in try emulator.requests() {
      if let value = (request["headers"] as? [String: String])?["Authorization"], value.hasPrefix("Bearer ") {
        scan.sentinels.append(("a platform token", String(value.dropFirst(7))))
      }
    }
    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of \(name)")
      scan.look(in: Data(result.stderr.utf8), "the standard error of \(name)")
    }
    var reports: [String] = []
    let walker = FileManager.default.enumerator(atPath: folder.path)
    while let relative = walker?.nextObject() as? String {
      let path = folder.path + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
        !relative.hasPrefix("secrets/")
      else { continue }
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: path)), relative)
      if relative.hasPrefix("reports/") { reports.append(path) }
    }
    #expect(scan.hits == [])
    #expect(reports.filter { $0.hasSuffix(".json") }.count == 3)
    #expect(reports.contains { $0.hasSuffix(".junit.xml") } && reports.contains { $0.hasSuffix("contest.prom") })

    // Every name and path as it is: the user name `test` is no secret.
    for (name, result) in outputs {
      for garbled in ["con***", "la***", "***-schemes", "at***"] {
        #expect(!result.output.contains(garbled), "\(name): \(result.output)")
      }
    }
    #expect(text.stdout.contains("job contest: failed"))
    for id in ["test-schemes", "latest-fruits", "attest"] { #expect(text.stdout.contains("  \(id) ")) }
    #expect(json.stderr.contains(#""step":"latest-fruits""#))
    for (_, result) in outputs {
      let line = try #require(result.stdout.split(separator: "\n").last { $0.hasPrefix("report: ") })
      let path = String(line.dropFirst("report: ".count))
      #expect(FileManager.default.fileExists(atPath: path), "\(path)")
      let report = try ReportCheck.json(path)
      #expect(report["job"] as? String == "contest")
      #expect((report["steps"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["test-schemes", "latest-fruits", "attest"])
    }
    #expect(try ReportCheck.problems(reports) == "")
  }

  /// The platform's example apps sign in as `test` / `test123`, a password dray once refused
  /// as too short. An example-style job signing in as that user runs end to end against the
  /// emulator's own users, with a sign-in and a table call whose errors echo what they were
  /// sent; the password is masked where it is the secret (the sign-in form echoed back, in
  /// JSON, percent-encoded, as HTML references, twice), and names holding the user name
  /// (`contest`, `test-schemes`, `latest-fruits`) stay whole in the logs, the reports and the
  /// state. A password as short as `abc` is masked in the sign-in field and in a server's
  /// echo of the sign-in body too.
  @Test func theExampleAppsShortPasswordSignsInAndIsMaskedWhereItIsTheSecret() throws {
    let folder = TemporaryDirectory("dray-short-secrets")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: contest
      platform: { host: "${FMP_HOST}", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: out/database.sqlite }
      retry: { count: 3, interval: 10ms, backoff: fixed }
      report: { path: "reports/{job}-{run_id}.json", formats: [json, junit] }
      steps:
        - id: test-schemes
          schemes: { resources: [FRUITS] }
        - id: latest-fruits
          table_stream: { resource: FRUITS }
        - id: perform-select
          query:
            sql: SELECT * FROM {{ table "FRUITS" "output_table" }} ORDER BY id
            output: out/select.json

      """)
    let forms = #"["json", "quote", "html_all_decimal", "html_all_hex", "json_twice", "quote_twice", "encode_uri"]"#
    let echoing =
      #"[{"path": "/api/v1/auth/", "times": 1, "status": 503, "echo_body": true, "echo_forms": \#(forms)}, "#
      + #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "status": 500, "echo_authorization": true}]"#
    let emulator = try Emulator()
    var outputs: [(String, Command.Result)] = []
    for (name, options) in [("a verbose run", ["--verbose"]), ("a verbose run logging JSON", ["--verbose", "--log-format", "json"])] {
      try emulator.admin("POST", "faults", json: echoing)
      let result = try Command.dray(
        ["run", manifest, "--fresh"] + options, environment: ["FMP_HOST": emulator.url, "FMP_USER": "test", "FMP_PASSWORD": "test123"])
      #expect(result.status == 0, "\(name): \(result.output)")
      #expect(result.stdout.hasPrefix("job contest: succeeded in "), "\(result.stdout)")
      outputs.append((name, result))
    }
    let text = outputs[0].1
    #expect(
      text.stderr.contains(
        #"&username=test&password=***&device_id=dray-cli; you sent "***"; you sent ***; you sent ***; you sent ***; you sent "\"***\""; you sent ***; you sent ***"#
      ), "\(text.stderr)")
    for id in ["test-schemes", "latest-fruits", "perform-select"] { #expect(text.stdout.contains("  \(id) ")) }
    #expect(outputs[1].1.stderr.contains(#""step":"latest-fruits""#))
    let status = try Command.dray(["status", manifest], environment: ["FMP_HOST": emulator.url])
    #expect(status.status == 0, "\(status.output)")
    #expect(status.stdout.contains("latest-fruits"), "\(status.stdout)")
    outputs.append(("dray status", status))

    // A password as short as `abc`, refused at sign-in by a server that echoes the form.
    let strict = try Emulator(["--user", "test:abc"])
    try strict.admin(
      "POST", "faults", json: #"[{"path": "/api/v1/auth/", "status": 401, "echo_body": true, "echo_forms": ["json", "html_all_hex"]}]"#)
    let refused = try Command.dray(
      ["run", manifest, "--fresh"], environment: ["FMP_HOST": strict.url, "FMP_USER": "test", "FMP_PASSWORD": "abc"])
    #expect(refused.status == 1, "\(refused.output)")
    #expect(refused.stdout.contains("sign-in failed: HTTP 401 Unauthorized"), "\(refused.output)")
    #expect(refused.stdout.contains(#"&username=test&password=***&device_id=dray-cli; you sent "***"; you sent ***"#), "\(refused.output)")
    outputs.append(("a run whose sign-in is refused", refused))

    // No form of either password anywhere; every name whole.
    var scan = SecretScan()
    for form in SecretForms.every("test123") { scan.sentinels.append(("the password test123", form)) }
    for form in ["password=abc", #""abc""#, "&#x0061;&#x0062;&#x0063;", " abc;"] { scan.sentinels.append(("the password abc", form)) }
    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of \(name)")
      scan.look(in: Data(result.stderr.utf8), "the standard error of \(name)")
      for garbled in ["con***", "la***", "***-schemes", "***-fruits"] {
        #expect(!result.output.contains(garbled), "\(name): \(result.output)")
      }
    }
    var files: [String] = []
    let walker = FileManager.default.enumerator(atPath: folder.path)
    while let relative = walker?.nextObject() as? String {
      let path = folder.path + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
      let data = try Data(contentsOf: URL(fileURLWithPath: path))
      scan.look(in: data, relative)
      if !relative.hasPrefix("reports/") { #expect(data.range(of: Data("***".utf8)) == nil, "\(relative)") }
      files.append(relative)
    }
    #expect(scan.hits == [])
    #expect(files.contains("out/database.sqlite") && files.contains("out/select.json"), "\(files)")
    let reports = files.filter { $0.hasPrefix("reports/") && $0.hasSuffix(".json") }
    #expect(reports.count == 3)
    for report in reports {
      let decoded = try ReportCheck.json(folder.path + "/" + report)
      #expect(decoded["job"] as? String == "contest")
      #expect(
        (decoded["steps"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["test-schemes", "latest-fruits", "perform-select"])
    }
  }

  /// D-secret-3: a bearer token (and the same value in a form field) echoed by a server's 403
  /// (text/plain) in hexadecimal, base32 (padded and not), quoted-printable and lower-cased
  /// then percent-encoded with lower-case escapes is masked in standard output and error and
  /// in the JSON, JUnit and HTML reports; so are those forms of the header's Latin-1 reading
  /// (the server decodes headers so).
  @Test func aBearerTokenEchoedInBase32QuotedPrintableOrCaseFoldedIsMasked() throws {
    let secret = "Xy9!pa ss/wörd+ToKen=="
    let server = try RestServer()
    let forms = ["hex", "hex_upper", "base32", "base32_unpadded", "quoted_printable", "quote_folded", "quote_lower"]
    let echo = forms.map { "\"each_\($0)\"" }.joined(separator: ", ")
    try server.setRules(#"[{"path": "/enc", "status": 403, "body": "forbidden", "echo": [\#(echo)]}]"#)
    let folder = TemporaryDirectory("dray-secret-base32")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: enc
      database: { path: db.sqlite }
      retry: { count: 0 }
      report: { path: "reports/{job}-{run_id}.json", formats: [json, junit, html] }
      steps:
        - id: a
          http:
            base_url: "\(server.url)"
            method: POST
            path: enc
            auth: { bearer: "${S}" }
            body: { form: { p: "${S}" } }
            load: { table: a, records: /data }

      """)
    var outputs: [(String, Command.Result)] = []
    for (name, options) in [("text", ["--verbose"]), ("json", ["--verbose", "--log-format", "json"])] {
      let result = try Command.dray(["run", manifest, "--fresh"] + options, environment: ["S": secret])
      #expect(result.status == 1, "\(result.output)")
      // The echo reached dray, masked: one `***` per form, of the form field (read as UTF-8)
      // and of the header (which the server decodes as Latin-1).
      let masks = Array(repeating: "***", count: 2 * forms.count).joined(separator: "; ")
      // (base32's padding stays: `***===`)
      #expect(result.output.replacing("***===", with: "***").contains("forbidden; " + masks + "\n"), "\(result.output)")
      outputs.append((name, result))
    }
    var scan = SecretScan()
    for form in SecretForms.every(secret) { scan.sentinels.append(("the bearer token", form)) }
    for form in [
      "5879392170612073732f77c3b672642b546f4b656e3d3d", "LB4TSILQMEQHG4ZPO7B3M4TEFNKG6S3FNY6T2", "w=C3=B6rd", "ToKen=3D=3D",
      "xy9%21pa+ss%2fw%c3%b6rd%2btoken%3d%3d",
    ] {
      scan.sentinels.append(("the tester's form", form))
    }
    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of the \(name) run")
      scan.look(in: Data(result.stderr.utf8), "the standard error of the \(name) run")
    }
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/reports")
    #expect(reports.filter { $0.hasSuffix(".html") }.count == 2 && reports.filter { $0.hasSuffix(".junit.xml") }.count == 2, "\(reports)")
    for report in reports {
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: folder.path + "/reports/" + report)), report)
    }
    #expect(scan.hits == [])
  }

  /// D-minor: a redirect to a target that cannot be reached names the redirect, from and to,
  /// with a secret in the target's query masked.
  @Test func aRedirectToAnUnreachableTargetIsNamedWithItsSecretMasked() throws {
    let emulator = try Emulator()
    let secret = "Redirect-Secret-\(UUID().uuidString.prefix(8))"
    try emulator.admin(
      "POST", "faults",
      json: #"[{"path": "/api/v1/schema/", "redirect": "http://127.0.0.1:1/schema/?key=\#(secret)", "redirect_status": 302}]"#)
    let folder = TemporaryDirectory("dray-redirect-down")
    let manifest = try folder.write(
      "job.yaml",
      JobText.header(job: "redirected", emulator: emulator, database: "db.sqlite", retry: "{ count: 0, interval: 10ms }")
        + "secrets: [KEY]\nsteps:\n  - id: s\n    schemes: { resources: [FRUITS] }\n")
    let result = try Command.dray(["run", manifest], environment: ["KEY": secret])
    #expect(result.status != 0)
    #expect(
      result.output.contains(
        "after following the 302 redirect from \(emulator.url)api/v1/schema/ to http://127.0.0.1:1/schema/?key=***: cannot connect to 127.0.0.1:1"
      ), "\(result.output)")
    #expect(!result.output.contains(secret))
  }

  @Test func secretsEchoedInOtherWireFormsAreMasked() throws {
    let tag = String(UUID().uuidString.prefix(8)).lowercased()
    let password = "Päss/wörd 1-\(tag)"
    let token = "Tök/en-\(tag)"
    let server = try RestServer()
    let echo = #"["json_ascii", "json_php", "quote_plus", "quote_lower", "authorization", "authorization_json"]"#
    try server.setRules(
      #"[{"path": "/signup", "status": 422, "body": "invalid", "echo": \#(echo)}, {"path": "/login", "status": 500, "body": "down", "echo": \#(echo)}]"#
    )
    let folder = TemporaryDirectory("dray-secret-forms")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: echo-scan
      secrets: [PW, TOKEN]
      retry: { count: 1, interval: 10ms }
      steps:
        - id: login
          http:
            method: POST
            base_url: "\(server.url)"
            path: login
            auth: { bearer: "${TOKEN}" }
            body: { form: { user: ann, password: "${PW}" } }
            on_status: { 500: fail }
        - id: sign-up
          http:
            method: POST
            base_url: "\(server.url)"
            path: signup
            auth: { bearer: "${TOKEN}" }
            body: { json: { user: ann, password: "${PW}" } }

      """)
    let environment = ["PW": password, "TOKEN": token]
    var outputs: [(String, Command.Result)] = []
    for (name, options) in [("text", ["--verbose"]), ("json", ["--verbose", "--log-format", "json"])] {
      let result = try Command.dray(["run", manifest, "--fresh"] + options, environment: environment)
      #expect(result.status == 1, "\(result.output)")
      outputs.append((name, result))
      // `login` fails first; run `sign-up` alone too.
      let only = try Command.dray(["run", manifest, "--only", "sign-up"] + options, environment: environment)
      #expect(only.status == 1, "\(only.output)")
      outputs.append((name + " --only sign-up", only))
    }
    #expect(try server.requests().count == 4)
    let text = outputs[0].1.stdout + outputs[1].1.stdout
    #expect(text.contains(#"{"user": "ann", "password": "***"}"#))
    #expect(text.contains("user=ann&password=***"))
    #expect(text.contains("you sent Bearer ***"))
    #expect(text.contains(#"{"authorization": "Bearer ***"}"#))

    var scan = SecretScan()
    for (name, value) in [("PW", password), ("TOKEN", token)] {
      for form in SecretForms.wire(value) { scan.sentinels.append((name, form)) }
    }
    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of the \(name) run")
      scan.look(in: Data(result.stderr.utf8), "the standard error of the \(name) run")
    }
    for report in try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports") {
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: folder.path + "/.dray/reports/" + report)), report)
    }
    #expect(scan.hits == [])
  }

  /// A secret in an `http` step's `path` is sent with the characters a URL path cannot hold
  /// percent-encoded (and `/`, `+`, `&`, `?` kept); the URL appears in the log, the error,
  /// the summary and the report, masked in that form too.
  @Test func secretsInAnHTTPPathAreMasked() throws {
    let tag = String(UUID().uuidString.prefix(8)).lowercased()
    let secret = "s3cr3t value/with+stuff&é-\(tag)"
    let token = "abc def?x=1-\(tag)"
    let server = try RestServer()
    let folder = TemporaryDirectory("dray-secret-path")
    try folder.write("tok.txt", token)
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: path-scan
      secrets: [MYSEC]
      retry: { count: 1, interval: 10ms }
      steps:
        - id: get
          http:
            base_url: "\(server.url)"
            path: "nothere/${MYSEC}"
        - id: file
          http:
            base_url: "\(server.url)"
            path: "nothere/${file:tok.txt}/x"

      """)
    var outputs: [(String, Command.Result)] = []
    for (name, options) in [("text", ["--verbose"]), ("json", ["--verbose", "--log-format", "json"])] {
      for step in ["get", "file"] {
        let result = try Command.dray(["run", manifest, "--only", step] + options, environment: ["MYSEC": secret])
        #expect(result.status == 1, "\(result.output)")
        #expect(result.stdout.contains("/nothere/***"), "\(result.output)")
        outputs.append(("\(name) --only \(step)", result))
      }
    }
    // The server saw the path forms the scan looks for.
    let paths = try server.requests().map(\.path)
    var pathAllowed = CharacterSet(charactersIn: Unicode.Scalar(0x21)...Unicode.Scalar(0x7E))
    pathAllowed.remove(charactersIn: "\"<>\\^`{|}")
    var scan = SecretScan()
    for (name, value) in [("MYSEC", secret), ("tok.txt", token)] {
      let path = try #require(value.addingPercentEncoding(withAllowedCharacters: pathAllowed))
      #expect(paths.contains { $0.contains(path) }, "\(paths)")
      for form in SecretForms.wire(value) + [path, path.replacing(/%[0-9A-F]{2}/) { $0.output.lowercased() }] {
        scan.sentinels.append((name, form))
      }
    }
    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of the \(name) run")
      scan.look(in: Data(result.stderr.utf8), "the standard error of the \(name) run")
    }
    for report in try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports") {
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: folder.path + "/.dray/reports/" + report)), report)
    }
    #expect(scan.hits == [])
  }

  @Test func noSentinelSecretReachesAnyOutputOrFile() throws {
    let s = Sentinels()
    let outside = TemporaryDirectory("dray-secrets-users")
    let users = try outside.write(
      "users.json", #"{"users": [{"username": "\#(s.user)", "password": "\#(s.password.replacing("\"", with: "\\\""))"}]}"#)
    let emulator = try Emulator(["--users", users])
    let folder = TemporaryDirectory("dray-secrets")
    try folder.write("secrets/password.txt", s.password + "\n")
    let host = emulator.url
    func job(host: String) -> String {
      """
      version: 1
      job: secret-scan
      secrets: [API_KEY, PROXY_PASSWORD, FMP_USER]
      platform:
        host: "\(host)"
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        headers: { X-Sentinel-Key: "${API_KEY}" }
      auth: { username: "${FMP_USER}", password: "${file:secrets/password.txt}" }
      database: { path: data/db.sqlite }
      retry: { count: 2, interval: 50ms, backoff: fixed }
      steps:
        - id: schemes
          schemes: { resources: [FRUITS, LANGUAGES] }
        - id: fruits
          table_stream: { resource: FRUITS }
        - id: fruits-file
          table: { resource: FRUITS, output: out/fruits.json }
        - id: note
          sql: "-- checked with key ${API_KEY}\\nCREATE TABLE IF NOT EXISTS seen(n INTEGER);"
        - id: languages
          table_stream: { resource: LANGUAGES }
      report: { path: "reports/{job}-{run_id}.json", formats: [json, junit, prometheus, html] }

      """
    }
    let manifest = try folder.write("job.yaml", job(host: host))
    let environment = ["FMP_USER": s.user, "API_KEY": s.apiKey, "PROXY_PASSWORD": s.proxyPassword]
    var outputs: [(String, Command.Result)] = []
    func run(_ name: String, _ faults: String, _ options: [String], status: Int32) throws -> Command.Result {
      try emulator.admin("POST", "faults", json: faults)
      let result = try Command.dray(["run", manifest, "--fresh"] + options, environment: environment)
      #expect(result.status == status, "\(name): \(result.output)")
      outputs.append((name, result))
      return result
    }
    let echoAll = #""echo_authorization": true, "echo_headers": ["X-Sentinel-Key"], "echo_body": true"#

    // Succeeds after a sign-in and a table call whose errors echo what they were sent.
    let verbose = try run(
      "a verbose run that succeeds",
      #"[{"path": "/api/v1/auth/", "times": 1, "status": 503, \#(echoAll)}, {"path": "/api/v1/rpc/FRUITS/", "times": 1, "status": 500, \#(echoAll)}]"#,
      ["--verbose"], status: 0)
    #expect(verbose.stderr.contains("you sent Authorization: Bearer ***; you sent X-Sentinel-Key: ***"))
    #expect(verbose.stderr.contains("&username=***&password=***&device_id=dray-cli"))
    #expect(verbose.stderr.contains("rows changed by: -- checked with key ***"))
    let json = try run(
      "a run logging JSON",
      #"[{"path": "/api/v1/rpc/FRUITS/", "times": 1, "status": 500, \#(echoAll)}]"#, ["--verbose", "--log-format", "json"], status: 0)
    #expect(json.stderr.contains(#"you sent Authorization: Bearer ***"#))
    // Sign-in refused, the refusal echoing the form with the password.
    let refused = try run(
      "a run whose sign-in is refused", #"[{"path": "/api/v1/auth/", "status": 401, \#(echoAll)}]"#, [], status: 1)
    #expect(refused.stdout.contains("sign-in failed: HTTP 401 Unauthorized from http://127.0.0.1:"))
    #expect(refused.stdout.contains("&username=***&password=***"))
    // Every table call fails with an error that echoes the token and the header.
    let failing = try run(
      "a run whose table calls fail", #"[{"path": "/api/v1/rpc/", "status": 500, \#(echoAll)}]"#, ["--verbose"], status: 69)
    #expect(failing.stdout.contains("you sent Authorization: Bearer ***; you sent X-Sentinel-Key: ***"))
    // A URL carrying credentials is refused before anything runs, its password masked.
    let withCredentials = try folder.write(
      "url-job.yaml", job(host: host.replacing("http://", with: "http://proxy:${PROXY_PASSWORD}@")))
    let refusedURL = try Command.dray(["run", withCredentials], environment: environment)
    #expect(refusedURL.status == 2)
    #expect(refusedURL.stderr.contains("'platform.host' must not hold a user name or password; give them in 'auth'"))
    outputs.append(("a manifest with credentials in its URL", refusedURL))
    // Interrupted during a slow download, leaving a partial answer and its sidecar.
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/LANGUAGES/", "trickle": 40000}]"#)
    let downloads = folder.path + "/.dray/downloads/secret-scan"
    let dray = try BackgroundDray(
      ["run", manifest, "--fresh", "--verbose"], environment: environment, logPrefix: outside.path + "/interrupted")
    // The part, not its sidecar: the sidecar holds the transaction id before the request goes out.
    try dray.wait(for: "a partial download of LANGUAGES") {
      (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.contains {
        $0.hasPrefix("languages-") && $0.hasSuffix(".part")
      }
        == true
    }
    dray.send(SIGINT)
    let interrupted = try dray.finish()
    #expect(interrupted.status == 130, "\(interrupted.output)")
    outputs.append(("an interrupted run", interrupted))
    // The page of the failed run, drawn afterwards from its report and the journal.
    let page = try Command.dray(
      ["report", manifest, "--run", try #require(Self.runID(failing.stdout)), "-o", folder.path + "/page.html"], environment: environment)
    #expect(page.status == 0, "\(page.output)")
    outputs.append(("dray report", page))

    // The tokens the platform handed out are secrets too.
    var tokens = Set<String>()
    for request in try emulator.requests() {
      if let value = (request["headers"] as? [String: String])?["Authorization"], value.hasPrefix("Bearer ") {
        tokens.insert(String(value.dropFirst(7)))
      }
    }
    #expect(tokens.count >= 4)

    var scan = SecretScan()
    for sentinel in s.all {
      for form in SecretForms.wire(sentinel.value) { scan.sentinels.append((sentinel.name, form)) }
    }
    scan.sentinels.append(("the Basic credentials of the URL", Data("proxy:\(s.proxyPassword)".utf8).base64EncodedString()))
    for (index, token) in tokens.sorted().enumerated() { scan.sentinels.append(("token \(index + 1)", token)) }

    for (name, result) in outputs {
      scan.look(in: Data(result.stdout.utf8), "the standard output of \(name)")
      scan.look(in: Data(result.stderr.utf8), "the standard error of \(name)")
    }
    // Every file the runs left in the job folder: reports in every format, the target
    // database with the journal (and its WAL), the downloads folder, output files.
    var scanned: [String] = []
    let walker = FileManager.default.enumerator(atPath: folder.path)
    while let relative = walker?.nextObject() as? String {
      let path = folder.path + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
        !relative.hasPrefix("secrets/")
      else { continue }
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: path)), relative)
      scanned.append(relative)
    }
    #expect(scan.hits == [])
    // The scan saw what it had to see.
    let kinds = [".json", ".junit.xml", ".prom", ".html", ".sqlite", ".part", ".part.json"]
    for kind in kinds {
      #expect(scanned.contains { $0.hasSuffix(kind) }, "no \(kind) file among \(scanned)")
    }
    #expect(scanned.filter { $0.hasPrefix("reports/") && $0.hasSuffix(".json") }.count == 5)
    #expect(scanned.contains("data/db.sqlite"))
    #expect(scanned.contains("page.html"))
  }

  /// The run id in a summary's first line (`job x: failed in 0.31s (run RUN_ID)`).
  static func runID(_ summary: String) -> String? {
    summary.split(separator: "\n").first.flatMap { $0.split(separator: "(run ").last }.map { String($0.dropLast()) }
  }
}
