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

  /// The OpenSSL libcrypto loaded at run time (`OpenSSL_version(OPENSSL_VERSION_STRING)`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "OpenSSL", version: String(cString: OpenSSL_version(OPENSSL_VERSION_STRING)))
  }
}
