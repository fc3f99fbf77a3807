import DrayManifest
import DrayModel
import DrayTestSupport
import Testing

/// A plain scalar with leading zeros, which YAML reads as a number and JSON would send
/// without them (`02142` as 2142), is refused wherever a value becomes JSON: a platform
/// step's `params` (and the lists in them), an `http` step's JSON body,
/// `incremental.initial`, a condition's `equals` (issue 25). Quoted, it is the text as
/// written; another base (`0x1F`) is a number on purpose.
@Suite struct NumberTextTests {
  static let head = """
    \(ManifestText.platformJob)

    """

  @Test func aNumberWithLeadingZerosIsRefusedWhereverItBecomesJSON() {
    let text =
      Self.head
        + """
          - table_stream: { resource: SALES, params: { zip: 02142, parts: [01, 2] } }
          - http:
              base_url: "http://h/"
              body: { json: { id: 0008, rate: 01.50, mask: 0x1F } }
              load: { table: t, records: /data, expect: { code: { equals: 007 } } }
              incremental: { cursor: /n, param: n, initial: -00042 }
        """
    #expect(
      ManifestText.errors(text) == [
        "job.yaml:7:53: error: 'steps.table_stream-1.table_stream.params.zip': 02142 is a number with leading zeros, which would be sent as the number 2142; quote it to send the text \"02142\", or write 2142",
        "job.yaml:7:68: error: 'steps.table_stream-1.table_stream.params.parts[0]': 01 is a number with leading zeros, which would be sent as the number 1; quote it to send the text \"01\", or write 1",
        "job.yaml:10:27: error: 'steps.http-2.http.body.json.id': 0008 is a number with leading zeros, which would be sent as the number 8; quote it to send the text \"0008\", or write 8",
        "job.yaml:10:39: error: 'steps.http-2.http.body.json.rate': 01.50 is a number with leading zeros, which would be sent as the number 1.5; quote it to send the text \"01.50\", or write 1.5",
        "job.yaml:11:67: error: 'steps.http-2.http.load.expect.code.equals': 007 is a number with leading zeros, which would be sent as the number 7; quote it to send the text \"007\", or write 7",
        "job.yaml:12:53: error: 'steps.http-2.http.incremental.initial': -00042 is a number with leading zeros, which would be sent as the number -42; quote it to send the text \"-00042\", or write -42",
      ])
  }

  /// A plain scalar that is one whole reference is typed by its value, as if written out.
  @Test func aValueFromAVariableInAPlainScalarIsReadTheSameWay() {
    let text = Self.head + "  - table_stream:\n      resource: SALES\n      params:\n        zip: ${ZIP}\n"
    #expect(
      ManifestText.errors(text, environment: ["ZIP": "02142"]) == [
        "job.yaml:10:14: error: 'steps.table_stream-1.table_stream.params.zip': 02142 is a number with leading zeros, which would be sent as the number 2142; quote it to send the text \"02142\", or write 2142"
      ])
  }

  /// D-secret-4: a quoted scalar is a string (YAML 1.2 core schema: quoted is `!!str`)
  /// whatever its `${...}` resolves to: digits, `null`, `true`, `1e400`, leading zeros.
  @Test func aQuotedReferenceStaysAStringWhateverItsValue() throws {
    for value in ["12345678", "null", "true", "007007007", "1e400", "1e3", "~", "0x1F"] {
      let text =
        Self.head
          + """
            - id: c
              http:
                base_url: "http://h/"
                body: { json: { flag: "${V}", note: '${V}', n: "${V}-x" } }
                auth: { login: { url: "http://h/login", body: { json: { user: alice, password: "${V}" } }, token: /t } }
                load: { table: t, records: /data }
          """
      let manifest = try ManifestText.load(text, environment: ["V": value])
      let http = try #require(manifest.steps[0].kind.http)
      #expect(http.body == .json(.object([("flag", .string(value)), ("note", .string(value)), ("n", .string(value + "-x"))])))
      #expect(http.auth?.login?.body == .json(.object([("user", .string("alice")), ("password", .string(value))])))
    }
  }

  /// A plain `${...}` whose value is a secret (a secret field's, a listed variable's, a
  /// file's) is sent as the text it is; a refusal never prints a value derived from one.
  @Test func aSecretIsNeverTypedByItsDigitsNorPrinted() throws {
    let text =
      "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsecrets: [ACCT]\nsteps:\n"
        + """
          - id: c
            http:
              base_url: "http://h/"
              body:
                json:
                  account: ${ACCT}
                  limit: ${N}
                  password: ${PW}
              load: { table: t, records: /data }
        """
    let manifest = try ManifestText.load(text, environment: ["ACCT": "000123", "N": "50", "PW": "12345678"])
    let http = try #require(manifest.steps[0].kind.http)
    #expect(http.body == .json(.object([("account", .string("000123")), ("limit", .integer(50)), ("password", .string("12345678"))])))
    // Written out in a secret field, a number with leading zeros is refused without its digits.
    let literal =
      "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"
        + """
          - id: c
            http:
              base_url: "http://h/"
              body: { json: { password: 0070071 } }
              load: { table: t, records: /data }
        """
    let errors = ManifestText.errors(literal)
    #expect(
      errors == [
        "job.yaml:8:33: error: 'steps.c.http.body.json.password': the value is a number with leading zeros, which JSON cannot keep; quote it to send it as text"
      ])
    #expect(!errors.joined().contains("70071"))
  }

  @Test func quotedTextAndNumbersJSONWritesAlikeAreKept() throws {
    let text =
      Self.head
        + """
          - table_stream:
              resource: SALES
              params: { zip: "02142", id: '0008', tag: !!str 007, n: [0, -0, 0.5, -0.25, +7, 1e3, 10, 100.0] }
        """
    let manifest = try ManifestText.load(text)
    let step = try #require(manifest.steps[0].kind.tableStream)
    #expect(step.params.json == #"{"zip":"02142","id":"0008","tag":"007","n":[0,0,0.5,-0.25,7,1e3,10,100.0]}"#)
  }
}
