import DrayManifest
import DrayTestSupport
import Foundation
import Testing

/// The corpus of invalid manifests: `Fixtures/invalid/NNN-name.yaml`, each with a sibling
/// `NNN-name.expected` holding every diagnostic it must produce, word for word, as
/// `file:line:column: error: message` lines (file names relative to the folder).
@Suite struct InvalidManifestCorpusTests {
  static let folder = Repository.root + "/Tests/DrayManifestTests/Fixtures/invalid"

  /// The environment every fixture is loaded with.
  static let environment = [
    "FMP_USER": "demo",
    "FMP_PASSWORD": "p#ss: $x 'q\" w",
    "SECRET_TOKEN": "tok-12345-secret",
    "NOT_A_NUMBER": "abc",
  ]

  static let fixtures: [String] = {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return names.filter { $0.hasSuffix(".yaml") }.sorted()
  }()

  static func diagnostics(_ name: String) -> [String]? {
    do {
      _ = try ManifestLoader(environment: environment).load(path: folder + "/" + name)
      return nil
    } catch {
      return error.diagnostics.map { $0.description.replacing(folder + "/", with: "") }
    }
  }

  @Test(arguments: fixtures)
  func reportsExactlyTheExpectedProblems(_ name: String) throws {
    let expectedFile = Self.folder + "/" + name.dropLast(".yaml".count) + ".expected"
    let expected = try String(contentsOfFile: expectedFile, encoding: .utf8).split(separator: "\n").map(String.init)
    #expect(!expected.isEmpty, "\(expectedFile) is empty")
    guard let found = Self.diagnostics(name) else {
      Issue.record("\(name) loaded without an error")
      return
    }
    #expect(found == expected, "\(name) reports:\n\(found.joined(separator: "\n"))")
  }

  @Test func theCorpusHoldsAtLeastSixtyManifestsEachWithItsExpectation() throws {
    #expect(Self.fixtures.count >= 60)
    let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder)
    let expectations = names.filter { $0.hasSuffix(".expected") }.map { String($0.dropLast(".expected".count)) }.sorted()
    #expect(expectations == Self.fixtures.map { String($0.dropLast(".yaml".count)) })
    // Numbered, so that a new case takes the next number.
    let numbers = Self.fixtures.compactMap { Int($0.prefix(3)) }
    #expect(numbers == Array(1...Self.fixtures.count))
  }

  @Test func noDiagnosticQuotesASecret() {
    for name in Self.fixtures {
      let text = Self.diagnostics(name)?.joined(separator: "\n") ?? ""
      // TopSecretValue: the part before the NUL of secrets/nul.txt (134-nul-in-interpolated-file).
      for secret in ["p#ss: $x 'q\" w", "tok-12345-secret", "TopSecretValue"] {
        #expect(!text.contains(secret), "\(name) quotes a secret")
      }
    }
  }

  @Test func theRenderedErrorQuotesTheLineWithACaretUnderTheColumn() throws {
    do {
      _ = try ManifestLoader(environment: Self.environment).load(path: Self.folder + "/004-yaml-tab-indentation.yaml")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description.replacing(Self.folder + "/", with: "") == """
          004-yaml-tab-indentation.yaml:5:1: error: a tab is used for indentation; YAML indents with spaces only
          \tenvironment: Env
          ^
          """)
    }
    // CRLF line ends are not quoted back; the caret stands under the value.
    do {
      _ = try ManifestLoader(environment: Self.environment).load(path: Self.folder + "/028-yaml-crlf-positions.yaml")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description.replacing(Self.folder + "/", with: "") == """
          028-yaml-crlf-positions.yaml:18:46: error: 'steps.load.table_stream.delta' must be true or false, found a string ('maybe')
              table_stream: { resource: FRUITS, delta: maybe }
                                                       ^
          """)
    }
  }

  @Test func credentialsInTheHostAreMaskedInTheQuotedLine() {
    do {
      _ = try ManifestLoader(environment: Self.environment).load(path: Self.folder + "/130-platform-host-with-credentials.yaml")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description.replacing(Self.folder + "/", with: "") == """
          130-platform-host-with-credentials.yaml:4:9: error: 'platform.host' must not hold a user name or password; give them in 'auth'
            host: https://***@fmp.example.com/
                  ^
          """)
    }
  }

  /// Short passwords are accepted (the platform's example apps sign in as `test` /
  /// `test123`); written into the manifest, they are masked in the quoted line as whole
  /// words, and the user name and the words around them stay.
  @Test func aShortPasswordWrittenIntoTheManifestIsNotQuotedBack() throws {
    for password in ["test123", "abc"] {
      let text = """
        version: 1
        job: contest
        platform: { host: "http://h/", environment: e, project: p }
        auth: { username: test, password: \(password), pasword: x }
        steps:
          - request: { resource: R }
        """
      do {
        _ = try ManifestLoader(environment: [:]).load(text: text, path: "job.yaml", directory: "/jobs")
        Issue.record("expected an error")
      } catch {
        // The caret stands under `pasword` in the line as shown.
        #expect(
          error.description == """
            job.yaml:4:\(37 + password.count): error: unknown key 'pasword' in auth; did you mean 'password'?
            auth: { username: test, password: ***, pasword: x }
                                                   ^
            """)
      }
    }
    do {
      _ = try ManifestLoader(environment: Self.environment).load(path: Self.folder + "/152-database-url-short-password-bad-parameter.yaml")
      Issue.record("expected an error")
    } catch {
      #expect(error.description.contains(#"url: "postgresql://loader@db.internal/warehouse?sslmode=maybe&password=***""#), "\(error)")
    }
  }

  @Test func aSecretWrittenIntoTheManifestIsNotQuotedBack() throws {
    let text = """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: someone, password: "Literal-Pw-4411", pasword: x }
      steps:
        - request: { resource: R }
      """
    do {
      _ = try ManifestLoader(environment: [:]).load(text: text, path: "job.yaml", directory: "/jobs")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description == """
          job.yaml:4:57: error: unknown key 'pasword' in auth; did you mean 'password'?
          auth: { username: someone, password: "***", pasword: x }
                                                      ^
          """)
    }
  }
}
