/// The content codings dray can ask for and decode (RFC 9110 §8.4.1), as libcurl does them.
///
/// An `http` step's own `Accept-Encoding` header is sent as written when every coding it
/// names is one of `decoded` (each with an optional `;q=` weight); the answer is decoded as
/// it arrives, so its files and rows are the same with or without compression.
public enum ContentCoding {
  /// Codings the Debian libcurl dray links decodes (zlib, brotli and zstd built in), and
  /// `identity`.
  public static let decoded = ["gzip", "x-gzip", "deflate", "br", "zstd", "identity"]

  /// Why `value`, an `Accept-Encoding` field value, cannot be sent as it is, or nil when it
  /// can.
  ///
  /// `gzip, br;q=0.5` and `identity` pass; `*` and `compress` do not: the server could
  /// choose a coding dray cannot decode.
  public static func problem(_ value: String) -> String? {
    let codings = value.split(separator: ",").map {
      $0.split(separator: ";", maxSplits: 1).first.map { String($0).filter { $0 != " " && $0 != "\t" }.lowercased() } ?? ""
    }
    if codings.isEmpty || codings.contains("") {
      return "names no coding; write the codings dray decodes, such as gzip (one of \(decoded.joined(separator: ", ")))"
    }
    if let unknown = codings.first(where: { !decoded.contains($0) }) {
      return "names '\(unknown)', which dray cannot decode; use \(decoded.joined(separator: ", ")) (with ;q= weights if you like)"
    }
    return nil
  }
}
