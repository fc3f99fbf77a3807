import DrayModel
import Testing

/// The one rule for names that hold a credential (`CredentialName`), used by query
/// parameters, form fields, JSON bodies, logins and export URLs alike (D-secret-5).
@Suite struct CredentialNameTests {
  @Test func namesThatHoldACredential() {
    let credentials = [
      "password", "passwd", "passphrase", "user_pass", "pwd", "PWD", "user-pw", "secret", "client_secret", "client_secret_v2",
      "token", "access_token", "api_token", "auth_token", "private_token", "pageToken", "accesstoken", "key", "api_key", "apikey",
      "x-api-key", "access_key", "accessKey", "Ocp-Apim-Subscription-Key", "sig", "signature", "X-Amz-Signature", "authorization",
      "passcode",
    ]
    for name in credentials { #expect(CredentialName.isCredential(name), "\(name)") }
    // Every name the old exact list held is one still.
    for name in QueryItem.secretNames { #expect(CredentialName.isCredential(name), "\(name)") }
  }

  /// Words are matched whole: a value named so is masked wherever it appears, so a data
  /// name mistaken for a credential would hide ordinary words of every message.
  @Test func dataNamesAreNot() {
    let data = [
      "user", "username", "passenger_count", "bypass", "compass", "author", "auth", "credentials", "monkey", "sort_key",
      "partition_key", "keyword", "signal", "design", "page", "region", "note",
    ]
    for name in data { #expect(!CredentialName.isCredential(name), "\(name)") }
  }
}
