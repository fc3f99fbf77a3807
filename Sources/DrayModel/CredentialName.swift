internal import Foundation

/// The one rule for names that hold a credential: query parameters, form fields and header
/// fields (`HTTPHeader.isSecretName`) of an `http` step, the fields of a JSON body (its own and `auth.login`'s) at any depth, and the
/// query parameters of `report.openlineage.url` and `report.otlp.endpoint`.
///
/// A value under such a name is a secret: masked in every output (`Redactor`), left out of
/// the step's fingerprint and of a login's `key`, and a body holding one is never sent on
/// to another origin by a 307 or 308. docs/auth.md ("Which names are secrets") lists the rule.
///
/// The name is cut into words at `_`, `-`, `.`, spaces and a lower-case letter followed by a
/// capital (`X-Amz-Signature` → x, amz, signature; `pageToken` → page, token), and is a
/// credential when one of its words:
///
/// - holds `secret`, `token`, `pwd`, `passw`, `passphrase` or `passcode` (`client_secret_v2`,
///   `api_token`, `private_token`, `accesstoken`, `passwd`, `password`);
/// - is `pass`, `pw`, `sig`, `signature`, `authorization`, `apikey` or `accesskey`
///   (`user_pass`, `sig`, `X-Amz-Signature`);
/// - is `key`, alone or after `access`, `api`, `app`, `client`, `consumer`, `developer`,
///   `license`, `master`, `private`, `secret`, `signing` or `subscription` (`access_key`,
///   `x-api-key`, `Ocp-Apim-Subscription-Key`): a `sort_key` or `partition_key` names data.
///
/// Words are matched whole, so `passenger`, `bypass`, `author` and `monkey` are not
/// credentials: a value under a credential's name is masked wherever it appears, and a
/// `passenger_count: 3` would mask every lone `3` of every message. Nor are `auth` and
/// `credentials`, which name the object that holds a user and a password in many login
/// bodies (`auth: { username: ana, password: ... }`): the password in it is one by its own
/// name, the user is not.
public enum CredentialName {
  /// Parts of a word that make it a credential's (`passwd`, `client_secret`, `api_token`).
  static let parts = ["secret", "token", "pwd", "passw", "passphrase", "passcode"]
  /// Whole words that do.
  static let words: Set<String> = [
    "pass", "pw", "sig", "signature", "authorization", "apikey", "accesskey",
  ]
  /// The words before `key` that make it a credential's (`access_key`, `x-api-key`).
  static let keyQualifiers: Set<String> = [
    "access", "api", "app", "client", "consumer", "developer", "license", "master", "private", "secret", "signing",
    "subscription",
  ]

  /// Whether a value named `name` is a credential (see the type's documentation).
  public static func isCredential(_ name: String) -> Bool {
    let words = Self.words(of: name)
    for (index, word) in words.enumerated() {
      if Self.words.contains(word) || parts.contains(where: { word.contains($0) }) { return true }
      if word == "key" && (words.count == 1 || (index > 0 && keyQualifiers.contains(words[index - 1]))) { return true }
    }
    return false
  }

  /// `name` in lower-case words: cut at `_`, `-`, `.`, spaces and where a lower-case letter
  /// or digit is followed by a capital.
  static func words(of name: String) -> [String] {
    var words: [String] = []
    var current = ""
    var previousLower = false
    for character in name {
      if character == "_" || character == "-" || character == "." || character == " " {
        if !current.isEmpty { words.append(current) }
        current = ""
        previousLower = false
        continue
      }
      if character.isUppercase && previousLower && !current.isEmpty {
        words.append(current)
        current = ""
      }
      current += character.lowercased()
      previousLower = character.isLowercase || character.isNumber
    }
    if !current.isEmpty { words.append(current) }
    return words
  }

  /// The values of the query parameters of `url` named as credentials, as written and
  /// percent-decoded (RFC 3986 §2.1; `+` as a space, as forms write it): what an export
  /// URL, which takes no `auth`, carries as its key (`?api_key=...`), to be masked.
  public static func queryValues(in url: String) -> [String] {
    guard let question = url.firstIndex(of: "?") else { return [] }
    let query = url[url.index(after: question)...].prefix { $0 != "#" }
    var values: [String] = []
    for pair in query.split(separator: "&") {
      guard let equals = pair.firstIndex(of: "=") else { continue }
      let name = pair[..<equals].replacing("+", with: " ")
      guard isCredential(name.removingPercentEncoding ?? String(name)) else { continue }
      let raw = String(pair[pair.index(after: equals)...])
      values.append(raw)
      if let decoded = raw.replacing("+", with: " ").removingPercentEncoding, decoded != raw { values.append(decoded) }
    }
    return values
  }
}
