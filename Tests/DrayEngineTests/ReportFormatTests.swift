import DrayModel
import DrayTestSupport
import DrayTransport
import Foundation
import Testing

@testable import DrayEngine

/// The redactor, the units people read, and the JUnit and Prometheus texts of a report made
/// by hand.
@Suite struct ReportFormatTests {
  @Test func aURLPasswordIsMaskedEvenWhenItIsNoKnownSecret() {
    let redactor = Redactor()
    #expect(redactor.redact("from http://proxy:hunter22@10.0.0.1:8080/api/v1/") == "from http://proxy:***@10.0.0.1:8080/api/v1/")
    #expect(redactor.redact("https://a:b@h/ and ftp://c:d@e") == "https://a:***@h/ and ftp://c:***@e")
    #expect(redactor.redact("http://user@host/x:y@z") == "http://user@host/x:y@z")
    #expect(redactor.redact(#""http://u:p@h""#) == #""http://u:***@h""#)
    #expect(redactor.redact("no url: a:b@c") == "no url: a:b@c")
  }

  @Test func aSecretIsMaskedInEveryFormItTakesOnTheWire() {
    let redactor = Redactor(["pa ss/\"w\""])
    #expect(redactor.redact("password=pa%20ss%2F%22w%22&x=1") == "password=***&x=1")
    #expect(redactor.redact(#"{"p":"pa ss/\"w\""}"#) == #"{"p":"***"}"#)
    #expect(redactor.redact("pa ss/\"w\"") == "***")
  }

  @Test func aSecretIsMaskedInTheFormsServersEchoItIn() {
    let redactor = Redactor(["Päss/wörd 1", "Tök"])
    let echoed = [
      // Python's json.dumps: non-ASCII as \uXXXX; other encoders write the hex in capitals.
      #"{"password": "P\u00e4ss/w\u00f6rd 1"}"#, #"{"password":"P\u00E4ss/w\u00F6rd 1"}"#,
      // PHP's json_encode: `/` escaped too.
      #"{"password":"P\u00e4ss\/w\u00f6rd 1"}"#, #"{"password":"Päss\/wörd 1"}"#,
      // Form bodies and URLs: a space as `+` (quote_plus), lower-case escapes, `/` kept.
      "password=P%C3%A4ss%2Fw%C3%B6rd+1", "password=P%c3%a4ss%2fw%c3%b6rd%201", "password=P%C3%A4ss/w%C3%B6rd%201",
      // The UTF-8 bytes read as Latin-1 by the server, echoed as is or in JSON.
      "password=PÃ¤ss/wÃ¶rd 1", #"{"password": "P\u00c3\u00a4ss/w\u00c3\u00b6rd 1"}"#,
      "<b>TÃ¶k</b>",
    ]
    #expect(
      echoed.map(redactor.redact) == [
        #"{"password": "***"}"#, #"{"password":"***"}"#, #"{"password":"***"}"#, #"{"password":"***"}"#, "password=***",
        "password=***", "password=***", "password=***", #"{"password": "***"}"#, "<b>***</b>",
      ])
    // Secrets are few and short: their forms stay few. An ASCII secret without special
    // characters is itself, in capitals, its base64 (whole, and its bits at each
    // alignment), its base32 (whole unpadded, and its bits at each alignment; capitals and
    // lower case) and its hex.
    let forms = Redactor(["plain-ascii-token"]).secrets
    #expect(forms.count == 20)
    let base32 = [
      "OBWGC2LOFVQXGY3JNEWXI33LMVXA", "OBWGC2LOFVQXGY3JNEWXI33LMVX", "A3DBNFXC2YLTMNUWSLLUN5VWK3", "QNRQWS3RNMFZWG2LJFV2G623FN",
      "YGYYLJNYWWC43DNFUS25DPNNSW", "4DMMFUW4LLBONRWS2JNORXWWZLO",
    ]
    #expect(
      Set(forms)
        == Set(
          [
            "706c61696e2d61736369692d746f6b656e", "706C61696E2D61736369692D746F6B656E",
            "cGxhaW4tYXNjaWktdG9rZW4=", "cGxhaW4tYXNjaWktdG9rZW", "BsYWluLWFzY2lpLXRva2Vu", "wbGFpbi1hc2NpaS10b2tlb", "plain-ascii-token",
            "PLAIN-ASCII-TOKEN",
          ] + base32 + base32.map { $0.lowercased() }))
    #expect(redactor.secrets.count < 120)
  }

  @Test func aSecretIsMaskedInHTMLReferencesBase64AndEveryJSONEscape() throws {
    let secret = "Pä\"ss\\w/ö<r>d'🔑"
    let redactor = Redactor([secret])
    let echoed = [
      // JSON: `"` and `\` escaped, non-ASCII as UTF-16 escapes (a surrogate pair for 🔑),
      // either hex case, `/` escaped or not.
      #"P\u00e4\"ss\\w/\u00f6<r>d'\ud83d\udd11"#, #"P\u00E4\"ss\\w\/\u00F6<r>d'\uD83D\uDD11"#,
      // HTML and XML: named, decimal and hexadecimal references.
      "P&auml;&quot;ss\\w/&ouml;&lt;r&gt;d&#39;🔑", "Pä&quot;ss\\w/ö&lt;r&gt;d&#x27;🔑", "Pä&quot;ss\\w/ö&lt;r&gt;d&apos;🔑",
      "P&#228;&#34;ss\\w/&#246;&#60;r&#62;d&#39;&#128273;", "P&#xe4;&#x22;ss\\w/&#xf6;&#x3c;r&#x3e;d&#x27;&#x1f511;",
      "P&#xE4;&#x22;ss\\w/&#xF6;&#x3C;r&#x3E;d&#x27;&#x1F511;", "P&#228;&quot;ss\\w/&#246;&lt;r&gt;d&#39;&#128273;",
      // Percent-encoding, either case, and base64 of the UTF-8 bytes, standard and URL-safe.
      "P%C3%A4%22ss%5Cw%2F%C3%B6%3Cr%3Ed%27%F0%9F%94%91", "P%c3%a4%22ss%5cw%2f%c3%b6%3cr%3ed%27%f0%9f%94%91",
      Data(secret.utf8).base64EncodedString(),
      Data(secret.utf8).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_"),
    ]
    for text in echoed {
      #expect(redactor.redact("said: " + text + ".") == "said: ***.", "\(text)")
    }
    // Inside longer base64 text at each of its three alignments, as in `Authorization:
    // Basic base64(user:password)` (RFC 7617): every character that encodes only the
    // secret's bits is masked.
    for prefix in ["", "a", "ab", "demo:", "someone:"] {
      let encoded = Data((prefix + secret + ":tail").utf8).base64EncodedString()
      let masked = redactor.redact("Basic " + encoded)
      #expect(masked.contains("***"), "\(prefix)")
      #expect(masked.count <= "Basic ".count + encoded.count - 20, "\(prefix): \(masked)")
    }
  }

  /// D-secret-1: the query value as it went on the wire (percent-encoded, escapes in either
  /// case, a space as `%20` or `+`) is a form of the secret under base64 too: a server that
  /// echoes its request line base64-encoded, alone or inside a longer blob.
  @Test func aSecretPercentEncodedInsideBase64IsMasked() {
    let secret = "tok/en+Sec ret&=9Z"
    let redactor = Redactor([secret, "pä55:w0rd/Xy"])
    let lines = [
      #"{"path": "/t4/a?token=tok%2Fen%2BSec%20ret%26%3D9Z&plain=x", "method": "GET"}"#,
      #"{"path": "/t4/a?token=tok%2fen%2bSec%20ret%26%3d9Z&plain=x"}"#, "q=tok%2Fen%2BSec+ret%26%3D9Z&x=1",
      "GET /t4/a?p=p%C3%A455%3Aw0rd%2FXy HTTP/1.1",
    ]
    for line in lines {
      for encoded in [Data(line.utf8).base64EncodedString(), Data(("x" + line).utf8).base64EncodedString()] {
        let masked = redactor.redact("B64:" + encoded + " end")
        #expect(masked.contains("***") && masked.hasSuffix(" end"), "\(line)")
        // What is left decodes to no part of the secret.
        let left = masked.replacing("***", with: " ").split(separator: " ").map(String.init)
        for part in left {
          let decoded = Data(base64Encoded: part + String(repeating: "=", count: (4 - part.count % 4) % 4)).map {
            String(decoding: $0, as: UTF8.self)
          }
          #expect(!(decoded ?? "").contains("9Z") && !(decoded ?? "").contains("w0rd"), "\(line): \(masked)")
        }
      }
    }
  }

  /// D-secret-3: the hex of a secret's UTF-8 bytes, lower case or capitals, as a debug dump
  /// writes it, is masked; a short secret's is not (its digits stand as words in numbers).
  @Test func aSecretInHexIsMasked() {
    let secret = "Xy9!pa ss/wörd+ToKen=="
    let redactor = Redactor([secret, "7"])
    let hex = Data(secret.utf8).map { String(format: "%02x", $0) }.joined()
    #expect(redactor.redact("hex=\(hex) HEX=\(hex.uppercased()).") == "hex=*** HEX=***.")
    #expect(redactor.redact("dump 00\(hex)ff") == "dump 00***ff")
    #expect(redactor.redact("attempt 37 of 10") == "attempt 37 of 10")
  }

  /// D-secret-3: base32 (RFC 4648 §6, padded or not, capitals or lower case, alone or inside
  /// longer base32 at each alignment), quoted-printable (RFC 2045: `=C3=B6`, `=3D`, a space
  /// as is, `=20` or RFC 2047's `_`) and the case-folded value (as is or percent-encoded, the
  /// escapes' hex digits lower case too) of a secret are masked.
  @Test func aSecretInBase32QuotedPrintableOrCaseFoldedIsMasked() {
    let secret = "Xy9!pa ss/wörd+ToKen=="
    let redactor = Redactor([secret, "7"])
    let base32 = "LB4TSILQMEQHG4ZPO7B3M4TEFNKG6S3FNY6T2==="
    #expect(SecretForms.base32(Array(secret.utf8)) == base32)
    for text in [base32, String(base32.prefix { $0 != "=" }), base32.lowercased()] {
      #expect(redactor.redact("b32=\(text) end") == "b32=***\(text.hasSuffix("=") ? "===" : "") end", "\(text)")
    }
    // Inside longer base32, at each of the five byte alignments: what is left decodes to no
    // part of the secret.
    for prefix in ["", "a", "ab", "abc", "abcd", "abcdefg"] {
      let encoded = SecretForms.base32(Array((prefix + secret + "tail").utf8))
      let masked = redactor.redact("blob \(encoded) end")
      #expect(masked.contains("***") && masked.hasSuffix(" end"), "\(prefix): \(masked)")
      for part in masked.split(separator: " ").flatMap({ $0.split(separator: "*") }) where part.count >= 8 {
        #expect(!base32.contains(part), "\(prefix): \(masked)")
      }
    }
    for qp in ["Xy9!pa ss/w=C3=B6rd+ToKen=3D=3D", "Xy9!pa=20ss/w=C3=B6rd+ToKen=3D=3D", "Xy9!pa_ss/w=C3=B6rd+ToKen=3D=3D"] {
      #expect(redactor.redact("qp=\(qp).") == "qp=***.", "\(qp)")
    }
    for folded in [
      "xy9%21pa+ss%2fw%c3%b6rd%2btoken%3d%3d", "xy9!pa ss/wörd+token==", "XY9!PA SS/WÖRD+TOKEN==",
      "Xy9%21pa%20ss%2fw%c3%b6rd%2bToKen%3d%3d",
    ] {
      #expect(redactor.redact("[\(folded)]") == "[***]", "\(folded)")
    }
    // A short secret: whole base32 and quoted-printable only, as a word; no case folding.
    let short = Redactor(["pä=ss"])
    #expect(SecretForms.base32(Array("pä=ss".utf8)) == "ODB2IPLTOM======")
    #expect(short.redact("b32 ODB2IPLTOM====== qp p=C3=A4=3Dss PÄ=SS xODB2GPJTON2A") == "b32 ***====== qp *** PÄ=SS xODB2GPJTON2A")
  }

  /// A secret under `Redactor.shortLength` characters (the platform's sample passwords
  /// `test123`, `123123`, or a user name listed under `secrets:`) is masked where it stands as
  /// a whole word, once escapes are undone, and left inside words.
  @Test func aShortSecretIsMaskedWhereItStandsAloneAndNowhereInsideAWord() {
    let redactor = Redactor(["test123", "abc"])
    let signIn = "environment=DocumentationExampleEnv&project=DocumentationExampleProj&username=test&password=test123&device_id=dray-cli"
    #expect(
      redactor.redact("HTTP 401: you sent: " + signIn)
        == "HTTP 401: you sent: environment=DocumentationExampleEnv&project=DocumentationExampleProj&username=test&password=***&device_id=dray-cli"
    )
    let masked = [
      #"{"username": "test", "password": "abc"}"#: #"{"username": "test", "password": "***"}"#,
      "password=abc": "password=***", "you sent abc; retry": "you sent ***; retry", "password: abc": "password: ***",
      // Escaped, the word is the decoded one: `%20` and `&#32;` are spaces, `\u0061` an `a`.
      "you%20sent%20abc": "you%20sent%20***", "x=%61%62%63&y=1": "x=***&y=1", #"[\"abc\"]"#: #"[\"***\"]"#,
      "&#97;&#98;&#99;": "***", #"p=\u0061bc"#: "p=***", "said &#x74;est123.": "said ***.",
      "dGVzdDEyMw==": "***",
    ]
    for (text, expected) in masked { #expect(redactor.redact(text) == expected, "\(text)") }
    // Inside a word, or with a letter, digit or `_` beside it once decoded: kept.
    for text in ["contest latest-fruits attest test1234 xtest123 test123_x abcdef xabc abc_1 2abc", "%41abc", "ab&#99;d"] {
      #expect(redactor.redact(text) == text)
    }
    // A secret of 8 characters or more is masked inside words too.
    #expect(Redactor(["demo-password"]).redact("xdemo-passwordy") == "x***y")
  }

  /// A short value listed under `secrets:` (the user `test`) follows the same rule: masked
  /// where it is a word of its own, names holding it kept; one of a single character too.
  @Test func aShortListedValueIsMaskedAsAWholeWord() {
    var redactor = Redactor(["test", "test123", "7"])
    redactor.keep(["contest", "test-schemes", "latest-fruits"])
    #expect(
      redactor.redact("job contest: step test-schemes, latest-fruits; user test; username=test&password=test123; attest")
        == "job contest: step test-schemes, latest-fruits; user ***; username=***&password=***; attest")
    #expect(redactor.redact("attempt 7 of 10, 17 rows, HTTP 407") == "attempt *** of 10, 17 rows, HTTP 407")
    #expect(Redactor([""]).secrets == [])
  }

  /// Encodings a server may apply once or twice, mixed, with non-ASCII characters: every
  /// form `SecretForms.every` lists (HTML references for every character, JSON escaped
  /// twice, `encodeURI`, percent-encoded twice, ...) is masked whole, but base64 inside
  /// longer base64, whose outer characters also carry other bits.
  @Test func aSecretIsMaskedInEveryEncodingAppliedOnceOrTwice() {
    let secret = "Pä\"ss\\w/ö<r>d'🔑 &+x"
    let redactor = Redactor([secret])
    let examples = [
      "&#80;&#228;&#34;&#115;&#115;&#92;&#119;&#47;&#246;&#60;&#114;&#62;&#100;&#39;&#128273;&#32;&#38;&#43;&#120;",
      "&#x50;&#xe4;&#x0022;&#X73;&#x73;&#x5C;&#x77;&#x2f;&#x00F6;&#x3c;&#x72;&#x3e;&#x64;&#x27;&#x1F511;&#x20;&#x26;&#x2b;&#x78;",
      #"P\\u00e4\\\"ss\\\\w/\\u00f6<r>d'\\ud83d\\udd11 &+x"#,
      "P%C3%A4%22ss%5Cw/%C3%B6%3Cr%3Ed'%F0%9F%94%91%20&+x",
      "P%25C3%25A4%2522ss%255Cw%252F%25C3%25B6%253Cr%253Ed%2527%25F0%259F%2594%2591%2520%2526%252Bx",
      "Pä&amp;quot;ss\\w/ö&amp;lt;r&amp;gt;d&amp;#x27;🔑 &amp;amp;+x",
    ]
    for text in examples { #expect(redactor.redact("said: " + text + ".") == "said: ***.", "\(text)") }
    // A JSON string percent-encoded: its quotes are no part of the secret.
    #expect(
      redactor.redact("said: %22P%5Cu00e4%5C%22ss%5C%5Cw%2F%5Cu00f6%3Cr%3Ed%27%5Cud83d%5Cudd11%20%26%2Bx%22.") == "said: %22***%22.")
    // Base64 cut out of longer base64 is masked where it stands in that text (tested above).
    let base64 = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
    let forms = SecretForms.every(secret).filter { !(($0.removingPercentEncoding ?? $0).allSatisfy(base64.contains)) }
    #expect(forms.count > 100)
    for form in forms { #expect(redactor.redact("said: " + form + ".") == "said: ***.", "\(form)") }
  }

  @Test func namesDrayWritesAreKeptAndOverlappingSecretsAreMaskedTogether() {
    var redactor = Redactor(["test-secret", "secret-value-9"])
    redactor.keep(["contest-secret-job", "reports/contest-secret-job-1.json"])
    #expect(
      redactor.redact("job contest-secret-job wrote reports/contest-secret-job-1.json; server said test-secret")
        == "job contest-secret-job wrote reports/contest-secret-job-1.json; server said ***")
    // Two secrets that overlap leave no part of either.
    #expect(redactor.redact("x test-secret-value-9 y") == "x *** y")
  }

  @Test func aReportMasksTheFreeTextServersEchoedBeforeEncodingItAndKeepsItsNames() throws {
    let password = "p\u{e4}ssw\u{f6}rd-\"\\-9"
    var redactor = Redactor([password])
    redactor.keep(["latest-p\u{e4}ssw\u{f6}rd-\"\\-9"])
    var step = StepReport(id: "latest-fruits", kind: "http", status: .failed)
    // The server echoed it JSON-escaped in a text body: dray's JSON escapes that text again.
    let echo = #"HTTP 400: {"password": "p\u00e4ssw\u00f6rd-\"\\-9"}"#
    step.errorMessage = echo
    step.attempts = [Attempt(number: 1, startOffset: 0, duration: 0.1, outcome: .failed(code: "http_400"), status: 400, message: echo)]
    step.notes = ["sent p%C3%A4ssw%C3%B6rd-%22%5C-9"]
    step.statements = [(sql: "SELECT 'pässwörd-\"\\-9'", changes: 0)]
    var report = Self.report()
    report.job = "contest"
    report.steps = [step]
    report.errorMessage = "base64 " + Data(password.utf8).base64EncodedString()
    let safe = report.redacted(by: redactor)
    let json = safe.json()
    #expect(safe.steps[0].errorMessage == #"HTTP 400: {"password": "***"}"#)
    #expect(safe.steps[0].attempts[0].message == #"HTTP 400: {"password": "***"}"#)
    #expect(safe.steps[0].notes == ["sent ***"])
    #expect(safe.steps[0].statements[0].sql == "SELECT '***'")
    #expect(safe.errorMessage == "base64 ***")
    #expect(!json.contains("u00e4ssw"))
    #expect(json.contains(#""job":"contest""#) || json.contains(#""job": "contest""#))
    #expect(JUnitReport(report: safe).xml.contains("name=\"latest-fruits\""))
  }

  @Test func aLongLineKeepsEveryByteButTheSecrets() {
    var redactor = Redactor()
    for i in 0..<8 { redactor.add("Säcret/\(i) wörd+\(i)") }
    // 68 forms each (docs/report.md, "Secrets": the cost figures are for these 8).
    #expect(redactor.secrets.count <= 8 * 68)
    // A 64 KiB error body, the most dray keeps of one, with a secret at its end.
    let line = "HTTP 500 from http://127.0.0.1/api/v1/rpc/X/: " + String(repeating: "S nothing to see here; ", count: 2900)
    #expect(redactor.redact(line) == line)
    #expect(redactor.redact(line + "Säcret/7 wörd+7") == line + "***")
  }

  @Test func secretsLearntOnAnyThreadMaskEveryLineWrittenAfter() {
    let shared = SharedRedactor(Redactor(["first-secret"]))
    DispatchQueue.concurrentPerform(iterations: 64) { i in
      shared.add("token-\(i)-abcdef")
      #expect(shared.redact("Bearer token-\(i)-abcdef and first-secret") == "Bearer *** and ***")
    }
    #expect((0..<64).allSatisfy { shared.redact("token-\($0)-abcdef") == "***" })
  }

  @Test func sizesDurationsAndCountsReadAsPeopleWriteThem() {
    #expect(HumanUnits.bytes(0) == "0 bytes")
    #expect(HumanUnits.bytes(1023) == "1023 bytes")
    #expect(HumanUnits.bytes(17067) == "16.7 KiB")
    #expect(HumanUnits.bytes(3 << 20) == "3.0 MiB")
    #expect(HumanUnits.bytes(5 << 30 + 1 << 29) == "5.5 GiB")
    #expect(HumanUnits.duration(0.4219) == "0.42s")
    #expect(HumanUnits.duration(12.4) == "12s")
    #expect(HumanUnits.duration(185) == "3m05s")
    #expect(HumanUnits.duration(7260) == "2h01m")
    #expect(HumanUnits.count(1_234_567) == "1,234,567")
    #expect(HumanUnits.count(-12) == "-12")
  }

  @Test func aProgressLineSaysBytesPercentRateAndTimeLeft() {
    let start = ContinuousClock.now
    var entry = ProgressBoard.Entry(step: "countries", kind: "table_stream", startedAt: start)
    entry.download(bytes: 0, total: 4 << 20, at: start)
    entry.download(bytes: 1 << 20, total: 4 << 20, at: start + .seconds(2))
    #expect(entry.detail(now: start + .seconds(2)) == "1.0 MiB of 4.0 MiB  25%  512.0 KiB/s  6.00s left")
    var board = ProgressBoard()
    board.entries = [entry]
    #expect(board.draw(now: start + .seconds(2), width: 40) == "  countries  table_stream  1.0 MiB of 4")
    #expect(board.erase() == "\r\u{1B}[K")
    #expect(board.erase() == "")
  }

  static func report() -> RunReport {
    let start = Date(timeIntervalSince1970: 1_796_040_000)
    var loaded = StepReport(id: "countries", kind: "table_stream", status: .succeeded)
    loaded.duration = 1.5
    loaded.rows = ["COUNTRIES__output_table": 249]
    loaded.bytes = 17067
    loaded.attempts = [
      Attempt(
        number: 1, startOffset: 0, duration: 0.01, outcome: .failed(code: "http_503"), status: 503, message: "HTTP 503 <busy> & \"x\"",
        wait: 1),
      Attempt(number: 2, startOffset: 1.01, duration: 0.2, outcome: .ok, status: 200),
    ]
    var failed = StepReport(id: "fix-up", kind: "sql", status: .failed)
    failed.duration = 0.004
    failed.errorCode = "sqlite_error"
    failed.errorMessage = "no such table: x"
    var later = StepReport(id: "check", kind: "query", status: .notRun)
    later.skipReason = "an earlier step failed"
    return RunReport(
      job: "iso \"ref\"", runID: "20261130T120000Z-abcdef", manifestPath: "jobs/iso.yaml",
      manifestFingerprint: String(repeating: "0", count: 64),
      host: "etl-1", startedAt: start, endedAt: start.addingTimeInterval(2.25), status: .failed, exitCode: 1,
      steps: [loaded, failed, later])
  }

  @Test func thePrometheusTextfileHoldsEveryMetricWithTheJobLabel() {
    var report = Self.report()
    report.steps[0].contract = ContractReport(quarantine: "q", loaded: 9, setAside: 2, trimmed: 1, byKind: ["type": 3])
    var member = StepReport(id: "m[p=1]", kind: "http", status: .succeeded)
    member.contract = ContractReport(quarantine: "q", loaded: 1, setAside: 4, trimmed: 0, byKind: ["type": 4])
    report.steps[1].members = [member]
    let text = PrometheusReport(report: report, previousSuccess: 1_795_953_600.5).text
    #expect(
      text == """
        # HELP dray_job_last_success_timestamp_seconds Unix time when the job last succeeded.
        # TYPE dray_job_last_success_timestamp_seconds gauge
        dray_job_last_success_timestamp_seconds{dray_job="iso \\"ref\\""} 1795953600.500
        # HELP dray_job_last_run_timestamp_seconds Unix time when the job's latest run ended.
        # TYPE dray_job_last_run_timestamp_seconds gauge
        dray_job_last_run_timestamp_seconds{dray_job="iso \\"ref\\""} 1796040002.250
        # HELP dray_job_duration_seconds Duration of the job's latest run.
        # TYPE dray_job_duration_seconds gauge
        dray_job_duration_seconds{dray_job="iso \\"ref\\""} 2.250
        # HELP dray_job_status 1 for the status of the job's latest run, 0 for the other statuses.
        # TYPE dray_job_status gauge
        dray_job_status{dray_job="iso \\"ref\\"",status="succeeded"} 0
        dray_job_status{dray_job="iso \\"ref\\"",status="failed"} 1
        dray_job_status{dray_job="iso \\"ref\\"",status="interrupted"} 0
        # HELP dray_job_exit_code Exit code of the job's latest run.
        # TYPE dray_job_exit_code gauge
        dray_job_exit_code{dray_job="iso \\"ref\\""} 1
        # HELP dray_job_rows Rows written by the job's latest run, summed over its steps.
        # TYPE dray_job_rows gauge
        dray_job_rows{dray_job="iso \\"ref\\""} 249
        # HELP dray_job_bytes Body bytes received and sent by the job's latest run.
        # TYPE dray_job_bytes gauge
        dray_job_bytes{dray_job="iso \\"ref\\""} 17067
        # HELP dray_job_retries Attempts that were retries in the job's latest run.
        # TYPE dray_job_retries gauge
        dray_job_retries{dray_job="iso \\"ref\\""} 1
        # HELP dray_job_steps Steps of the job's latest run with each status.
        # TYPE dray_job_steps gauge
        dray_job_steps{dray_job="iso \\"ref\\"",status="succeeded"} 1
        dray_job_steps{dray_job="iso \\"ref\\"",status="failed"} 1
        dray_job_steps{dray_job="iso \\"ref\\"",status="skipped"} 0
        dray_job_steps{dray_job="iso \\"ref\\"",status="interrupted"} 0
        dray_job_steps{dray_job="iso \\"ref\\"",status="not_run"} 1
        # HELP dray_job_records_quarantined Records the job's latest run set aside or trimmed by a load's contract.
        # TYPE dray_job_records_quarantined gauge
        dray_job_records_quarantined{dray_job="iso \\"ref\\"",action="set_aside"} 6
        dray_job_records_quarantined{dray_job="iso \\"ref\\"",action="trimmed"} 1

        """)
  }

  @Test func theJUnitDocumentHasACaseForEveryStepAndEscapesWhatItQuotes() {
    let xml = JUnitReport(report: Self.report().redacted(by: Redactor(["busy"]))).xml
    #expect(
      xml == """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="dray" tests="3" failures="1" errors="0" skipped="1" time="2.250">
          <testsuite name="iso &quot;ref&quot;" id="0" package="dray" hostname="etl-1" tests="3" failures="1" errors="0" skipped="1" time="2.250" timestamp="2026-11-30T12:00:00">
            <properties>
              <property name="run_id" value="20261130T120000Z-abcdef"/>
              <property name="status" value="failed"/>
              <property name="exit_code" value="1"/>
              <property name="manifest" value="jobs/iso.yaml"/>
              <property name="manifest_fingerprint" value="\(String(repeating: "0", count: 64))"/>
              <property name="dray_version" value="\(DrayVersion.current)"/>
            </properties>
            <testcase classname="iso &quot;ref&quot;" name="countries" time="1.500">
              <system-out>table_stream, 249 rows, 17067 bytes, 1 retry
        attempt 1: http_503: HTTP 503 &lt;***&gt; &amp; "x"; waited 1.000s</system-out>
            </testcase>
            <testcase classname="iso &quot;ref&quot;" name="fix-up" time="0.004">
              <failure type="sqlite_error" message="no such table: x">sql</failure>
            </testcase>
            <testcase classname="iso &quot;ref&quot;" name="check" time="0.000">
              <skipped message="an earlier step failed"/>
            </testcase>
          </testsuite>
        </testsuites>

        """)
  }
}

/// Run ids sort by start time, runs started within one second included, and stay unique.
@Suite struct RunIDTests {
  @Test func runIDsSortByStartTimeToTheMillisecond() throws {
    let start = Date(timeIntervalSince1970: 1_796_040_000)  // 2026-11-30T12:00:00Z
    let ids = [0, 0.001, 0.25, 0.999, 1, 61.5].map { Runner.newRunID(start.addingTimeInterval($0)) }
    #expect(ids.sorted() == ids)
    #expect(ids[2].hasPrefix("20261130T120000.250Z-"))
    #expect(ids.allSatisfy { $0.wholeMatch(of: #/[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{6}/#) != nil })
    #expect(Runner.newRunID(start) != Runner.newRunID(start))
  }
}
