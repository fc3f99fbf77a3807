import Foundation

/// A self-signed TLS certificate for 127.0.0.1, made with the openssl command.
public enum TestCertificate {
  /// Writes `cert.pem` and `key.pem` into `folder` (or `folder/subfolder`).
  /// - Returns: their paths.
  /// - Throws: `TestSupportError` when openssl fails.
  public static func make(in folder: TemporaryDirectory, subfolder: String = "") throws -> (cert: String, key: String) {
    let base = subfolder.isEmpty ? folder.path : folder.path + "/" + subfolder
    try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    let cert = base + "/cert.pem"
    let key = base + "/key.pem"
    let result = try Command.run(
      "/usr/bin/openssl",
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
        "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
      ])
    guard result.status == 0 else { throw TestSupportError("openssl failed: \(result.stderr)") }
    return (cert, key)
  }
}
