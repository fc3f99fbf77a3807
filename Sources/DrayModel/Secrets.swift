internal import Glibc
internal import Synchronization

/// The secret values of a job, and the one place that masks them.
///
/// Every value from `auth.password`, from `${file:...}`, from secret header fields and from
/// the manifest's `secrets` list is registered here, and so is the platform's token when it
/// arrives; every line printed, every report and every error message passes through
/// `redact(_:)` before it leaves the process. Masking works on text, before that text is
/// encoded into an output format (a JSON string, an XML attribute): a secret echoed by a
/// server is found in the forms the server wrote, never in an escaping of dray's own.
///
/// Names dray writes itself (the job, step ids, the run id, report paths) are registered with
/// `keep(_:)` and never altered, even when a secret happens to be part of one.
public struct Redactor: Sendable {
  /// What a secret is replaced with.
  public static let mask = "***"

  /// A secret with fewer characters than this is short: it is masked only where it stands
  /// as a whole word (the characters just before and after it, once escapes are undone, are
  /// no letter, digit or `_`). Masking it inside words would hide ordinary words in every
  /// line (a listed user name `test` would turn `contest` into `con***`) and tell a reader
  /// what it is; where it is the secret, it stands alone: `password=test123&`,
  /// `"password": "abc"`, `you sent abc`. 8 is the least length NIST SP 800-63B (§5.1.1.1)
  /// allows for a memorized secret a user chooses; shorter ones are a platform's samples
  /// (the example apps' `test123`).
  public static let shortLength = 8

  /// How many layers of escaping `redact(_:)` undoes: a server may escape a secret once
  /// (JSON, percent-encoding, HTML) and again when it quotes that text (a JSON body holding a
  /// JSON-escaped echo, a percent-encoded URL inside a query); one more is margin.
  static let decodingDepth = 3

  /// One form of a secret, as `redact(_:)` looks for it.
  struct Pattern: Sendable {
    /// The form's UTF-8 bytes, canonical as `DecodedText` makes text (`+` read as a space).
    var bytes: [UInt8]
    /// Matched only as a whole word (the secret is short, `shortLength`).
    var wholeWord: Bool
  }

  /// The forms of the secrets (see `add(_:)`), longest first.
  public private(set) var secrets: [String] = []
  /// `secrets` as `redact(_:)` looks for them, in the same order.
  private var patterns: [Pattern] = []
  /// Names never altered (see `keep(_:)`), as UTF-8 bytes.
  private var kept: [[UInt8]] = []
  /// `patterns` by their first byte (indices into `patterns`), for the one pass over a layer.
  private var byFirstByte: [[Int32]] = Array(repeating: [], count: 256)
  /// One bit per pair of first two bytes some pattern starts with (`b0 << 8 | b1`): a pass
  /// over a layer skips, at one lookup, every position no pattern can start at.
  private var pairBits: [UInt64] = Array(repeating: 0, count: 1024)

  public init(_ secrets: some Sequence<String> = []) {
    for s in secrets { add(s) }
  }

  /// Registers `secret` and the forms escaping cannot reach.
  ///
  /// `redact(_:)` undoes escapes before it compares (`DecodedText`), so one form stands for
  /// every way of escaping it: JSON (`\"`, `\u00e4`, `\u00E4`, a surrogate pair, `\/`),
  /// percent-encoding (any set of characters kept, as a form body, Python's `quote`,
  /// JavaScript's `encodeURI` or an `http` step's `path` leave them; escapes in either case;
  /// a space as `+`), HTML and XML references (named, decimal, hexadecimal, either case,
  /// leading zeros), dray's own `\u{9F}`, and any of them applied up to `decodingDepth`
  /// times or mixed. The forms registered are those no escape produces, for `Päss/wörd 1`:
  ///
  /// - the value itself;
  /// - its UTF-8 bytes read as Latin-1 (`PÃ¤ss/wÃ¶rd 1`: a server that decodes a header that
  ///   way and echoes it), and that reading's bytes read so again (UTF-8 encoded twice;
  ///   not in base64);
  /// - each of those as it reads with its own escape-like text undone (`decodings(of:)`);
  /// - each of those with a control character as `PrintableText.oneLine` shows it (a line
  ///   break as ` ⏎ `, a tab as a space), since server text is made one printable line
  ///   where an error is built;
  /// - base64 of the UTF-8 bytes of the value, of its first Latin-1 reading and of its
  ///   percent-encoded forms on the wire (`percentForms(of:)`: `tok%2Fen%20x` inside a
  ///   base64 echo of a request line) (RFC 4648 §4, and the URL-safe alphabet of §5), whole
  ///   with its padding, and, unless the secret is short, the characters that encode only
  ///   its bytes at each of the three alignments it can have inside a longer text
  ///   (`base64Forms(of:)`): a password inside `Authorization: Basic base64(user:password)`
  ///   (RFC 7617) is one such;
  /// - for the value and its first Latin-1 reading: unless the secret is short, the text in
  ///   lower case and in capitals (a server that case-folds what it echoes, also
  ///   percent-encoded: `xy9%21pa+ss%2fw%c3%b6rd`) and its UTF-8 bytes in hexadecimal, lower
  ///   case and capitals (`hexForms(of:)`); base32 of its UTF-8 bytes (RFC 4648 §6),
  ///   capitals or lower case, padded or not, and unless the secret is short at each of the
  ///   five alignments it can have inside longer base32 (`base32Forms(of:whole:)`); its
  ///   quoted-printable forms (RFC 2045 §6.7, `w=C3=B6rd=3D`, and RFC 2047's "Q" encoding,
  ///   `_` for a space) (`quotedPrintableForms(of:)`).
  ///
  /// A secret shorter than `shortLength` characters is matched as a whole word only. An
  /// empty one is not registered.
  public mutating func add(_ secret: String) {
    guard !secret.isEmpty else { return }
    let short = secret.count < Redactor.shortLength
    var readings = [secret]
    if secret.unicodeScalars.contains(where: { !$0.isASCII }) { readings.append(Redactor.latin1Reading(secret)) }
    // base64 of the value and of its Latin-1 reading; the second reading (UTF-8 encoded
    // twice: `Ã\u{83}Â¤` for `ä`) only as text.
    // base64 of the forms percent-encoding gives it on the wire, too: escapes are undone
    // in text, never inside base64 (a server that base64s its request line).
    let encoded = (readings + Redactor.percentForms(of: secret)).flatMap { Redactor.base64Forms(of: Array($0.utf8), whole: short) }
    // base32, quoted-printable, and unless the secret is short hex and the case-folded text
    // (a server that lower-cases what it echoes, or its percent-encoding), of the value and
    // of its first Latin-1 reading (Python's http.server decodes a header so before it
    // echoes it); a short secret's few letters in another case are ordinary words.
    var other: [String] = []
    for reading in readings {
      let bytes = Array(reading.utf8)
      other += Redactor.base32Forms(of: bytes, whole: short) + Redactor.quotedPrintableForms(of: bytes)
      if !short { other += Redactor.hexForms(of: reading) + [reading.lowercased(), reading.uppercased()].filter { $0 != reading } }
    }
    if readings.count > 1 { readings.append(Redactor.latin1Reading(readings[1])) }
    readings += readings.flatMap(Redactor.decodings)
    readings += readings.map(PrintableText.oneLine)
    insert(readings + encoded + other, wholeWord: short)
  }

  /// `bytes` in base32 (RFC 4648 §6), without its `=` padding (so that the padded and the
  /// unpadded text both hold it), in capitals as §6 writes it and in lower case; and unless
  /// `whole` alone, for each of the 5 byte offsets modulo 5 it can have inside longer data,
  /// the characters that encode only its own bits (as `base64Forms(of:whole:)` does).
  static func base32Forms(of bytes: [UInt8], whole: Bool = false) -> [String] {
    guard !bytes.isEmpty else { return [] }
    var forms = [base32(bytes)]
    for offset in 0..<5 where !whole {
      let encoded = Array(base32([UInt8](repeating: 0, count: offset) + bytes).utf8)
      // Character i holds bits 5i..<5i+5; the secret's bits are 8·offset..<8·(offset+count).
      let first = (8 * offset + 4) / 5
      let end = min(encoded.count, 8 * (offset + bytes.count) / 5)
      if end > first { forms.append(String(decoding: encoded[first..<end], as: UTF8.self)) }
    }
    forms = forms.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    return forms + forms.map { $0.lowercased() }
  }

  /// `bytes` in base32 (RFC 4648 §6), capitals, no padding.
  static func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    var out: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    for byte in bytes {
      buffer = buffer << 8 | UInt32(byte)
      bits += 8
      while bits >= 5 {
        out.append(alphabet[Int(buffer >> UInt32(bits - 5) & 0x1F)])
        bits -= 5
      }
      buffer &= (1 << UInt32(bits)) - 1
    }
    if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 0x1F)]) }
    return String(decoding: out, as: UTF8.self)
  }

  /// `bytes` in quoted-printable (RFC 2045 §6.7): `=`, control characters and every byte
  /// over 126 as `=XX` in capitals, a space as is (rule 3), as `=20` (an encoder quoting
  /// every space, Python's `quotetabs`), and as `_` with `_`, `?` and `=` escaped (RFC 2047
  /// §4.2's "Q" encoding of a header's encoded word); only the forms that differ from the
  /// bytes. Lower-case escapes are not registered: §6.7 requires capitals. Soft line breaks
  /// (`=` at the end of a line, a text over 76 characters) are not undone.
  static func quotedPrintableForms(of bytes: [UInt8]) -> [String] {
    let digits = Array("0123456789ABCDEF".utf8)
    func encoded(space: [UInt8]?, escaping: Set<UInt8>) -> String {
      var out: [UInt8] = []
      for byte in bytes {
        if byte == UInt8(ascii: " "), let space {
          out += space
        } else if byte < 33 || byte > 126 || escaping.contains(byte) {
          out += [UInt8(ascii: "="), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
        } else {
          out.append(byte)
        }
      }
      return String(decoding: out, as: UTF8.self)
    }
    let equals = UInt8(ascii: "=")
    let forms = [
      encoded(space: [UInt8(ascii: " ")], escaping: [equals]), encoded(space: nil, escaping: [equals]),
      encoded(space: [UInt8(ascii: "_")], escaping: [equals, UInt8(ascii: "_"), UInt8(ascii: "?")]),
    ]
    let plain = String(decoding: bytes, as: UTF8.self)
    return forms.reduce(into: []) { if $1 != plain && !$0.contains($1) { $0.append($1) } }
  }

  /// `secret` percent-encoded as dray sends it in a query or form
  /// (`application/x-www-form-urlencoded`, `percentEncoded(_:)`), with its escapes in
  /// capitals and in lower case, and a space as `%20` and as `+`, and as dray writes it in
  /// a path (`HTTPStep.encodePath`); only the forms that differ from `secret`.
  static func percentForms(of secret: String) -> [String] {
    var forms: [String] = []
    let path = HTTPStep.encodePath(secret)
    if path != secret { forms.append(path) }
    for upper in [percentEncoded(secret)] {
      var lower = ""
      var rest = Substring(upper)
      while let percent = rest.firstIndex(of: "%") {
        let end = rest.index(percent, offsetBy: 3, limitedBy: rest.endIndex) ?? rest.endIndex
        lower += rest[..<percent] + rest[percent..<end].lowercased()
        rest = rest[end...]
      }
      lower += rest
      for form in [upper, lower, upper.replacing("%20", with: "+"), lower.replacing("%20", with: "+")]
      where form != secret && !forms.contains(form) {
        forms.append(form)
      }
    }
    return forms
  }

  /// The UTF-8 bytes of `secret` in hexadecimal, in lower case and in capitals: the form
  /// debug dumps and hashes-as-text print. Not for a short secret, whose few digits would
  /// stand as a word in ordinary numbers.
  static func hexForms(of secret: String) -> [String] {
    let digits = Array("0123456789abcdef".utf8)
    let lower = String(decoding: secret.utf8.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] }, as: UTF8.self)
    return [lower, lower.uppercased()]
  }

  /// `text` with its escapes undone once, twice, ... (`DecodedText`), as long as it holds
  /// some: a secret that itself holds what reads as an escape (`\/`, `%41`, `&amp;`) reads
  /// so once `redact(_:)` undoes the escapes of a server's text around it (an HTML escaper
  /// leaves `\/` as it is; the scan's first layer reads it as `/`).
  static func decodings(of text: String) -> [String] {
    var out: [String] = []
    var layer = DecodedText(Array(text.utf8))
    while out.count < decodingDepth, let next = layer.decodedOnce() {
      let decoded = String(decoding: next.bytes, as: UTF8.self)
      if Array(decoded.utf8) == next.bytes { out.append(decoded) }
      layer = next
    }
    return out
  }

  /// `text`'s UTF-8 bytes read as Latin-1 (ISO 8859-1), each byte the character of its value.
  static func latin1Reading(_ text: String) -> String {
    String(String.UnicodeScalarView(text.utf8.map { Unicode.Scalar($0) }))
  }

  /// Registers every secret of `other`, with the forms it registered, and the names it keeps.
  public mutating func add(contentsOf other: Redactor) {
    for (form, pattern) in zip(other.secrets, other.patterns) { insert([form], wholeWord: pattern.wholeWord) }
    for name in other.kept where !kept.contains(name) { kept.append(name) }
  }

  /// Registers names dray writes itself (the job, step ids, the run id, report paths): a
  /// secret found inside one of them, in any text, is left as it is, so that the names a
  /// reader looks for and the paths they open are the real ones.
  public mutating func keep(_ names: some Sequence<String>) {
    for name in names where !name.isEmpty && !kept.contains(Array(name.utf8)) { kept.append(Array(name.utf8)) }
  }

  /// Adds `forms`; a form already registered as a whole word and now anywhere is matched
  /// anywhere.
  private mutating func insert(_ forms: [String], wholeWord: Bool) {
    var added = false
    for form in forms where !form.isEmpty {
      if let index = secrets.firstIndex(of: form) {
        if !wholeWord { patterns[index].wholeWord = false }
        continue
      }
      secrets.append(form)
      patterns.append(Pattern(bytes: DecodedText.canonical(Array(form.utf8)), wholeWord: wholeWord))
      added = true
    }
    guard added else { return }
    let order = secrets.indices.sorted { secrets[$0].utf8.count > secrets[$1].utf8.count }
    secrets = order.map { secrets[$0] }
    patterns = order.map { patterns[$0] }
    byFirstByte = Array(repeating: [], count: 256)
    pairBits = Array(repeating: 0, count: 1024)
    for (index, pattern) in patterns.enumerated() {
      guard let first = pattern.bytes.first else { continue }
      byFirstByte[Int(first)].append(Int32(index))
      // A one-byte pattern may start at any pair beginning with its byte.
      let seconds = pattern.bytes.count > 1 ? [pattern.bytes[1]] : Array(0...255)
      for second in seconds {
        let pair = Int(first) << 8 | Int(second)
        pairBits[pair >> 6] |= 1 << UInt64(pair & 63)
      }
    }
  }

  /// `bytes` in base64 (RFC 4648 §4) and its URL-safe alphabet (§5): whole, with padding,
  /// and unless `whole` alone, for each of the 3 byte offsets modulo 3 it can have inside
  /// longer data, the characters that encode only its own bits (the first and last
  /// characters of its run also carry bits of its neighbours, so they are left out).
  static func base64Forms(of bytes: [UInt8], whole: Bool = false) -> [String] {
    guard !bytes.isEmpty else { return [] }
    var standard = [base64(bytes)]
    for offset in 0..<3 where !whole {
      let encoded = Array(base64([UInt8](repeating: 0, count: offset) + bytes).utf8)
      // Character i holds bits 6i..<6i+6; the secret's bits are 8·offset..<8·(offset+count).
      let first = (8 * offset + 5) / 6
      let end = 8 * (offset + bytes.count) / 6
      if end > first { standard.append(String(decoding: encoded[first..<end], as: UTF8.self)) }
    }
    let urlSafe = standard.map { $0.replacing("+", with: "-").replacing("/", with: "_") }
    return standard + urlSafe
  }

  /// `bytes` in base64 with padding (RFC 4648 §4).
  static func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
      let chunk = bytes[index..<min(index + 3, bytes.count)]
      let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
      for position in 0..<4 {
        out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * position) & 0x3F)] : UInt8(ascii: "="))
      }
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// `text` with every registered secret replaced by `***`, and the password of every URL
  /// that carries one (`https://user:password@host/`, RFC 3986 §3.2.1) masked too, whether
  /// or not it was registered.
  ///
  /// The text is searched as it is and with its escapes undone once, twice and three times
  /// (`DecodedText`, `decodingDepth`); a match covers the bytes of the text it was decoded
  /// from. Every byte any form of any secret covers is masked (overlapping secrets are
  /// masked together), each run of masked bytes becoming one `***`. A match that lies
  /// inside a name registered with `keep(_:)` is left, and so is a short secret's match
  /// inside a word (`shortLength`).
  ///
  /// Cost: one pass per layer that holds an escape, and one pass per layer over its bytes
  /// that compares the forms starting at each position whose first two bytes some form
  /// starts with (`matches(in:)`); docs/report.md ("Secrets") gives figures.
  public func redact(_ text: String) -> String { redact(text, mask: Redactor.mask) }

  /// `text` as `redact(_:)` masks it, with each run of masked bytes (and each URL's
  /// password) replaced by `mask` instead of `***`: a recording's placeholders
  /// (docs/recordings.md).
  public func redact(_ text: String, mask: String) -> String {
    guard !patterns.isEmpty else { return Redactor.maskingURLPasswords(text, mask: mask) }
    let bytes = Array(text.utf8)
    var keptRanges: [Range<Int>] = []
    for name in kept {
      var start = 0
      while let hit = Redactor.find(name, in: bytes, from: start) {
        keptRanges.append(hit..<hit + name.count)
        start = hit + 1
      }
    }
    // Empty until the first hit: most texts hold no secret.
    var covered: [Bool] = []
    // layers[0] is the text (`+` read as a space), each next one the one before decoded once.
    var layers = [DecodedText(bytes)]
    while let layer = layers.last {
      for (hit, index) in matches(in: layer.bytes) {
        let pattern = patterns[index]
        let end = hit + pattern.bytes.count
        if pattern.wholeWord && (layer.isWordCharacter(endingAt: hit) || layer.isWordCharacter(startingAt: end)) { continue }
        let range = layers.reversed().reduce(hit..<end) { $1.source($0) }
        if keptRanges.contains(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) { continue }
        if covered.isEmpty { covered = [Bool](repeating: false, count: bytes.count) }
        for index in range { covered[index] = true }
      }
      guard layers.count <= Redactor.decodingDepth, let next = layer.decodedOnce() else { break }
      layers.append(next)
    }
    guard !covered.isEmpty else { return Redactor.maskingURLPasswords(text, mask: mask) }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    for index in bytes.indices {
      if !covered[index] {
        out.append(bytes[index])
      } else if index == 0 || !covered[index - 1] {
        out += mask.utf8
      }
    }
    return Redactor.maskingURLPasswords(String(decoding: out, as: UTF8.self), mask: mask)
  }

  /// `value` with every string in it masked (`redact(_:)`), before it is encoded: the
  /// secrets are found as the text holds them, never in JSON's escaping of it. Keys are
  /// names and are kept.
  public func redact(_ value: JSONValue) -> JSONValue {
    switch value {
    case .string(let text): .string(redact(text))
    case .array(let items): .array(items.map(redact))
    case .object(let pairs): .object(pairs.map { ($0.key, redact($0.value)) })
    default: value
    }
  }

  /// Every place a pattern starts in `layer`, as (offset, index into `patterns`): one pass
  /// over the bytes, each position checked against `pairBits` (most are no pattern's first
  /// two bytes) and then `memcmp(3)` with the patterns starting with its byte.
  private func matches(in layer: [UInt8]) -> [(offset: Int, pattern: Int)] {
    var found: [(offset: Int, pattern: Int)] = []
    layer.withUnsafeBufferPointer { buffer in
      guard let base = buffer.baseAddress else { return }
      let count = buffer.count
      pairBits.withUnsafeBufferPointer { bits in
        for offset in 0..<count {
          let pair = Int(buffer[offset]) << 8 | (offset + 1 < count ? Int(buffer[offset + 1]) : 0)
          guard bits[pair >> 6] & (1 << UInt64(pair & 63)) != 0 else { continue }
          for index in byFirstByte[Int(buffer[offset])] {
            let needle = patterns[Int(index)].bytes
            guard needle.count <= count - offset else { continue }
            let same = needle.withUnsafeBufferPointer { pin in pin.baseAddress.map { memcmp(base + offset, $0, pin.count) == 0 } ?? false }
            if same { found.append((offset, Int(index))) }
          }
        }
      }
    }
    return found
  }

  /// The offset of the first `needle` in `haystack` at or after `start`: `memchr(3)` finds
  /// each candidate first byte, `memcmp(3)` checks the rest (glibc's `memmem` is not in
  /// Swift's Glibc module).
  private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
    guard !needle.isEmpty, haystack.count - start >= needle.count else { return nil }
    return haystack.withUnsafeBytes { hay in
      needle.withUnsafeBytes { pin in
        // Both are non-empty (checked above), so both have a base address.
        guard let base = hay.baseAddress, let pinBase = pin.baseAddress else { return nil }
        var offset = start
        while hay.count - offset >= pin.count {
          guard let found = memchr(base + offset, Int32(pin[0]), hay.count - offset - pin.count + 1) else { return nil }
          let at = base.distance(to: UnsafeRawPointer(found))
          if memcmp(base + at, pinBase, pin.count) == 0 { return at }
          offset = at + 1
        }
        return nil
      }
    }
  }

  /// `text` with the password part of each URL's user information replaced by `***`:
  /// `http://user:pw@host/` becomes `http://user:***@host/`.
  public static func maskingURLPasswords(_ text: String, mask: String = Redactor.mask) -> String {
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
  /// characters kept, everything else `%XX`, escapes in capitals).
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

  /// Registers every secret of `other`, and the names it keeps.
  public func add(contentsOf other: Redactor) {
    redactor.withLock { $0.add(contentsOf: other) }
  }

  /// Registers names never altered (see `Redactor.keep(_:)`).
  public func keep(_ names: [String]) {
    redactor.withLock { $0.keep(names) }
  }

  /// `text` with every secret known so far masked.
  public func redact(_ text: String) -> String {
    let current = redactor.withLock { $0 }
    return current.redact(text)
  }

  /// The secrets known so far.
  public var current: Redactor { redactor.withLock { $0 } }
}
