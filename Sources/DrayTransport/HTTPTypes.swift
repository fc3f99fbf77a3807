public import DrayModel
internal import Foundation

/// Request methods dray sends.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
  case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE", head = "HEAD"

  /// Idempotent methods (RFC 9110 §9.2.2) may be retried after bytes were sent.
  public var isIdempotent: Bool { self != .post && self != .patch }
}

/// Header fields in order, with case-insensitive lookup (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Hashable, Sequence {
  public private(set) var fields: [HTTPHeader] = []

  public init(_ fields: [HTTPHeader] = []) { self.fields = fields }

  public mutating func add(_ name: String, _ value: String) { fields.append(HTTPHeader(name, value)) }

  /// Appends `field` as it is, keeping whether it holds a secret.
  public mutating func add(_ field: HTTPHeader) { fields.append(field) }

  /// Replaces every field named `name` by one with `value`.
  public mutating func set(_ name: String, _ value: String) {
    fields.removeAll { $0.name.lowercased() == name.lowercased() }
    fields.append(HTTPHeader(name, value))
  }

  /// Replaces every field named as `field` by `field`, keeping whether it holds a secret
  /// (a sign-in's token in a header of its own name: never sent to another origin).
  public mutating func set(_ field: HTTPHeader) {
    fields.removeAll { $0.name.lowercased() == field.name.lowercased() }
    fields.append(field)
  }

  public mutating func remove(_ name: String) {
    fields.removeAll { $0.name.lowercased() == name.lowercased() }
  }

  /// Removes every field for which `shouldRemove` is true.
  public mutating func removeAll(where shouldRemove: (HTTPHeader) -> Bool) {
    fields.removeAll(where: shouldRemove)
  }

  /// The first value of `name`, or nil.
  public subscript(name: String) -> String? {
    let lower = name.lowercased()
    return fields.first { $0.name.lowercased() == lower }?.value
  }

  public func makeIterator() -> IndexingIterator<[HTTPHeader]> { fields.makeIterator() }
}

/// What to send as a request body.
public enum HTTPBody: Sendable, Hashable {
  case none
  case bytes([UInt8])
  /// A file streamed from disk.
  case file(String)
}

/// One HTTP request, with the limits it runs under.
public struct HTTPRequest: Sendable, Hashable {
  public var method: HTTPMethod
  public var url: String
  public var headers: HTTPHeaders
  public var body: HTTPBody
  public var timeouts: Timeouts
  public var tls: TLSSettings
  /// Whether the server may receive this request twice without harm: true for idempotent
  /// methods (RFC 9110 §9.2.2), and for calls a transaction id makes safe to repeat. A
  /// request that is not repeatable always goes on a new connection, because libcurl sends
  /// a request again by itself when a reused connection closes before the answer.
  public var repeatable: Bool
  /// The `Accept-Encoding` sent (RFC 9110 §12.5.3): `identity` (the default) asks for the
  /// bytes as they are and leaves any content coding undecoded; any other value is sent as
  /// it is and the body is decoded as it arrives (libcurl's CURLOPT_ACCEPT_ENCODING: gzip,
  /// deflate, br, zstd), so that a sink always receives decoded bytes. An `Accept-Encoding`
  /// among `headers` is ignored: this is the one place it is set.
  public var acceptEncoding: String
  /// When the body holds a secret (a login's password, a client secret, a value of the
  /// job's `secrets`): the manifest setting that gives this request's address, such as
  /// `login.url` or `oauth2.token_url`. A `307` or `308` that would send such a body to
  /// another origin is refused (`TransportError.secretRedirect`) and names this setting;
  /// `nil` for a body without secrets.
  public var secretBody: String? = nil
  /// The request must reach its address as it was sent (a login, a token request): a `301`,
  /// `302` or `303`, which would send it again as a `GET` without its body, is refused
  /// (`TransportError.secretRedirect`, naming `secretBody`'s setting and the target).
  public var keepsMethod = false

  public init(
    method: HTTPMethod = .get, url: String, headers: HTTPHeaders = HTTPHeaders(), body: HTTPBody = .none,
    timeouts: Timeouts = Timeouts(), tls: TLSSettings = TLSSettings(), repeatable: Bool? = nil,
    acceptEncoding: String = HTTPRequest.identity
  ) {
    self.method = method
    self.url = url
    self.headers = headers
    self.body = body
    self.timeouts = timeouts
    self.tls = tls
    self.repeatable = repeatable ?? method.isIdempotent
    self.acceptEncoding = acceptEncoding
  }

  /// `identity`: the bytes as they are, no content coding (RFC 9110 §8.4.1).
  public static let identity = "identity"

  /// Whether the answer is asked for in a content coding that is decoded on arrival.
  public var decodes: Bool { acceptEncoding.lowercased() != HTTPRequest.identity }
}

/// The head of an answer, and how much of its body arrived.
public struct HTTPResponse: Sendable, Hashable {
  public var status: Int
  /// The URL that answered (after redirects); empty when not known.
  public var url: String = ""
  public var headers: HTTPHeaders
  /// Body bytes received in this attempt, after any content coding was decoded.
  public var bytesReceived: Int64
  /// Body bytes of this attempt as they came over the connection, before content decoding
  /// (libcurl's CURLINFO_SIZE_DOWNLOAD_T; the error body's too): equal to `bytesReceived`
  /// for an answer without a content coding.
  public var wireBytes: Int64 = 0
  /// The error body's first bytes (at most 64 KiB) when the status is not 2xx.
  public var errorBody: [UInt8]
  /// Whether the framing showed the body whole: a `Content-Length` or chunked coding (whose
  /// shortfall libcurl reports as an error), or an answer without a body. False for a body
  /// that only the connection's close ended (HTTP/1.0 style), which a cut looks the same as.
  public var endShown = true
  /// The status the server sent when the answer is treated as another: a `416` that shows
  /// a resumed part already complete is handled as `200` (`Download`) and reported as 416.
  public var statusSent: Int?

  public init(status: Int, headers: HTTPHeaders, bytesReceived: Int64 = 0, errorBody: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.bytesReceived = bytesReceived
    self.errorBody = errorBody
  }

  /// The answer's content coding (`Content-Encoding`, RFC 9110 §8.4), lower-cased; nil
  /// when it has none or says `identity`.
  public var contentEncoding: String? {
    guard let value = headers["Content-Encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
      !value.isEmpty, value != HTTPRequest.identity
    else { return nil }
    return value
  }

  /// What the answer says it is, for messages: `Content-Type: text/html, Content-Encoding:
  /// gzip` (`none` for a missing type; the encoding only when there is one).
  public var describedKind: String {
    "Content-Type: \(headers["Content-Type"] ?? "none")" + (contentEncoding.map { ", Content-Encoding: \($0)" } ?? "")
  }
}

/// Where a successful answer's body goes. Called on the transfer's thread.
public protocol ResponseSink: AnyObject {
  /// Called once per attempt, before any body byte, when the status is 2xx.
  /// - Throws: to abort the transfer (the error is rethrown from `perform`).
  func begin(_ response: HTTPResponse) throws
  /// Called with each piece of the body, in order.
  func write(_ bytes: UnsafeRawBufferPointer) throws
}

/// Keeps a small body in memory, up to a limit.
public final class MemorySink: ResponseSink {
  public private(set) var bytes: [UInt8] = []
  public let limit: Int

  /// - Parameter limit: most bytes kept; a longer body fails the transfer. 64 MiB by default.
  public init(limit: Int = 64 << 20) { self.limit = limit }

  public func begin(_ response: HTTPResponse) throws { bytes.removeAll(keepingCapacity: true) }

  public func write(_ buffer: UnsafeRawBufferPointer) throws {
    guard bytes.count + buffer.count <= limit else { throw TransportError.bodyTooLarge(limit: limit) }
    bytes.append(contentsOf: buffer)
  }

  public var text: String { String(decoding: bytes, as: UTF8.self) }
}
