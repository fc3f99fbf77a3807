internal import CCrypto

/// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto.
public enum SHA256 {
  /// The digest of `bytes`: 32 bytes.
  public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    let ok = Array(bytes).withUnsafeBytes { buffer in
      EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_sha256(), nil)
    }
    precondition(ok == 1, "libcrypto failed to compute SHA-256")
    return Array(digest.prefix(Int(length)))
  }

  /// The digest of `bytes`, as 64 lower-case hex digits.
  public static func hex(_ bytes: some Collection<UInt8>) -> String {
    let digest = digest(bytes)
    let hexDigits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(digest.count * 2)
    for byte in digest {
      out.append(hexDigits[Int(byte >> 4)])
      out.append(hexDigits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The digest of `text`'s UTF-8 bytes, as 64 lower-case hex digits.
  public static func hex(_ text: String) -> String { hex(Array(text.utf8)) }

  /// A SHA-256 digest fed piece by piece, for data too large, or too scattered, to hold
  /// whole (the records of a page: `StepRunner`'s repeated page check).
  public final class Hasher {
    private let context: OpaquePointer?

    public init() {
      context = EVP_MD_CTX_new()
      precondition(context != nil && EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "libcrypto failed to start SHA-256")
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds `bytes` to the digest.
    public func update(_ bytes: some Collection<UInt8>) {
      let ok = Array(bytes).withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
      precondition(ok == 1, "libcrypto failed to compute SHA-256")
    }

    /// Adds `text`'s UTF-8 bytes to the digest.
    public func update(_ text: String) { update(Array(text.utf8)) }

    /// The digest of everything added: 32 bytes. The hasher takes nothing after it.
    public func finish() -> [UInt8] {
      var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
      var length: UInt32 = 0
      precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1, "libcrypto failed to compute SHA-256")
      return Array(digest.prefix(Int(length)))
    }
  }

  /// The OpenSSL libcrypto loaded at run time (`OpenSSL_version(OPENSSL_VERSION_STRING)`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "OpenSSL", version: String(cString: OpenSSL_version(OPENSSL_VERSION_STRING)))
  }
}
