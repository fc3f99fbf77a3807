internal import Synchronization

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

  /// `text` with every registered secret replaced by `***`, and the password of every URL
  /// that carries one (`https://user:password@host/`, RFC 3986 §3.2.1) masked too, whether
  /// or not it was registered.
  public func redact(_ text: String) -> String {
    var out = text
    for secret in secrets where out.contains(secret) {
      out = out.replacing(secret, with: Redactor.mask)
    }
    return Redactor.maskingURLPasswords(out)
  }

  /// `text` with the password part of each URL's user information replaced by `***`:
  /// `http://user:pw@host/` becomes `http://user:***@host/`.
  public static func maskingURLPasswords(_ text: String) -> String {
    guard text.contains("://") else { return text }
    var out = ""
    var rest = Substring(text)
    while let scheme = rest.firstRange(of: "://") {
      out += rest[..<scheme.upperBound]
      rest = rest[scheme.upperBound...]
      // The authority ends at the path, query or fragment, or where the URL itself ends.
      let end = rest.firstIndex { "/?#".contains($0) || $0.isWhitespace || "\"'<>`".contains($0) } ?? rest.endIndex
      let authority = rest[..<end]
      if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":"),
        authority[authority.index(after: colon)..<at] != Substring(mask)
      {
        out += authority[...colon] + mask
        rest = rest[at...]
      }
    }
    return out + rest
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

/// The job's `Redactor`, shared by every output of a run and able to learn secrets while the
/// run goes on.
///
/// Some secrets only exist at run time (the bearer token the platform hands out at sign-in);
/// the console, the report files and error messages all read this one object, so a secret
/// added from any thread masks every line written after it.
public final class SharedRedactor: Sendable {
  private let redactor: Mutex<Redactor>

  public init(_ redactor: Redactor = Redactor()) {
    self.redactor = Mutex(redactor)
  }

  /// Registers `secret` (see `Redactor.add(_:)`).
  public func add(_ secret: String) {
    redactor.withLock { $0.add(secret) }
  }

  /// Registers every secret of `other`.
  public func add(contentsOf other: Redactor) {
    redactor.withLock { mine in
      for secret in other.secrets { mine.add(secret) }
    }
  }

  /// `text` with every secret known so far masked.
  public func redact(_ text: String) -> String {
    let current = redactor.withLock { $0 }
    return current.redact(text)
  }

  /// The secrets known so far.
  public var current: Redactor { redactor.withLock { $0 } }
}
