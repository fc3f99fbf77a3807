/// The secret values of a job, and the one place that masks them.
///
/// Every value from `auth`, from `${file:...}`, and from variables named in the manifest's
/// `secrets` list is registered here; every line printed, every report, journal row and
/// error message passes through `redact(_:)` before it leaves the process.
public struct Redactor: Sendable {
  /// What a secret is replaced with.
  public static let mask = "***"

  /// Secret values, longest first so that a secret containing another is masked whole.
  public private(set) var secrets: [String] = []

  public init(_ secrets: some Sequence<String> = []) {
    for s in secrets { add(s) }
  }

  /// Registers `secret` and the forms it takes on the wire (percent-encoded in a form body
  /// or URL, and JSON-escaped). Values shorter than 3 characters are not registered: masking
  /// every `a` in every log line would destroy the logs without protecting anything.
  public mutating func add(_ secret: String) {
    guard secret.count >= 3 else { return }
    var forms = [secret, Redactor.percentEncoded(secret)]
    let escaped = JSONValue.quoted(secret).dropFirst().dropLast()
    forms.append(String(escaped))
    for form in forms where !secrets.contains(form) {
      secrets.append(form)
    }
    secrets.sort { $0.count > $1.count }
  }

  /// `text` with every registered secret replaced by `***`.
  public func redact(_ text: String) -> String {
    guard !secrets.isEmpty else { return text }
    var out = text
    for secret in secrets where out.contains(secret) {
      out = out.replacing(secret, with: Redactor.mask)
    }
    return out
  }

  /// Percent-encoding as `application/x-www-form-urlencoded` writes it (RFC 3986 unreserved
  /// characters kept, everything else `%XX`).
  public static func percentEncoded(_ s: String) -> String {
    var out = ""
    for byte in s.utf8 {
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "_"), UInt8(ascii: "~"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return out
  }
}
