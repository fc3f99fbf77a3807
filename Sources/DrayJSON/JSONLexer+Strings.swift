// MARK: Strings

extension JSONLexer {
  /// Reads the string whose opening quote is at `p`.
  /// - Returns: its bytes (the chunk's own when it holds no escape, else unescaped into
  ///   `scratch`) and the byte after its closing quote; nil when it reaches `end` before its
  ///   end and the next chunk may go on with it.
  @inline(__always)
  func string(
    _ p: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int, base: UnsafePointer<UInt8>, final: Bool
  ) throws -> (UnsafeBufferPointer<UInt8>, UnsafePointer<UInt8>)? {
    let first = p + 1
    var q = first
    while q < end {
      if end - q >= 8 {
        let special = Self.specialBytes(UnsafeRawPointer(q).loadUnaligned(as: UInt64.self))
        if special == 0 {
          q += 8
          continue
        }
        q += special.trailingZeroBitCount >> 3
      }
      let c = q.pointee
      if c == JSONByte.quote { return (UnsafeBufferPointer(start: first, count: q - first), q + 1) }
      if c == JSONByte.backslash { return try unescaped(p, from: q, end, origin: origin, base: base, final: final) }
      if c < JSONByte.space { throw Self.controlCharacter(c, byte: origin + (q - base)) }
      if c < 0x80 {
        q += 1
        continue
      }
      let length = Self.utf8Length(q, end)
      if length > 0 {
        q += length
      } else if length == 0 && !final {
        return nil
      } else {
        throw Self.notUTF8(byte: origin + (q - base))
      }
    }
    if final { throw Failure.truncated(bytes: origin + (end - base)) }
    return nil
  }

  /// Reads the rest of a string that holds an escape at `q`, unescaping it into `scratch`.
  func unescaped(
    _ p: UnsafePointer<UInt8>, from start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, origin: Int,
    base: UnsafePointer<UInt8>, final: Bool
  ) throws -> (UnsafeBufferPointer<UInt8>, UnsafePointer<UInt8>)? {
    let first = p + 1
    reserve(start - first + 16, used: 0)
    var out = scratch
    out.update(from: first, count: start - first)
    out += start - first
    var q = start
    func byte(_ at: UnsafePointer<UInt8>) -> Int { origin + (at - base) }
    while q < end {
      // One step writes at most 12 bytes (a plain run of 7, then a 4-byte character).
      if out - scratch + 16 > scratchCapacity {
        let used = out - scratch
        reserve(used + 16, used: used)
        out = scratch + used
      }
      if end - q >= 8 {
        let word = UnsafeRawPointer(q).loadUnaligned(as: UInt64.self)
        let special = Self.specialBytes(word)
        if special == 0 {
          UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
          out += 8
          q += 8
          continue
        }
        let plain = special.trailingZeroBitCount >> 3
        out.update(from: q, count: plain)
        out += plain
        q += plain
      }
      let c = q.pointee
      if c == JSONByte.quote { return (UnsafeBufferPointer(start: scratch, count: out - scratch), q + 1) }
      if c == JSONByte.backslash {
        guard end - q >= 2 else { break }
        let escape = q[1]
        switch escape {
        case JSONByte.quote, JSONByte.backslash, JSONByte.slash: out.pointee = escape
        case JSONByte.lowerB: out.pointee = 0x08
        case JSONByte.lowerF: out.pointee = 0x0C
        case JSONByte.lowerN: out.pointee = JSONByte.lineFeed
        case JSONByte.lowerR: out.pointee = JSONByte.carriageReturn
        case JSONByte.lowerT: out.pointee = JSONByte.tab
        case JSONByte.lowerU:
          guard let (scalar, length) = try Self.unicodeEscape(q, end, byte: byte(q), final: final) else { return nil }
          out += Self.writeUTF8(scalar, to: out)
          q += length
          continue
        default:
          throw Failure.invalid(
            "'\\\(Self.describeByte(escape))' is not a JSON escape (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)", byte: byte(q))
        }
        out += 1
        q += 2
        continue
      }
      if c < JSONByte.space { throw Self.controlCharacter(c, byte: byte(q)) }
      if c < 0x80 {
        out.pointee = c
        out += 1
        q += 1
        continue
      }
      let length = Self.utf8Length(q, end)
      guard length > 0 else {
        if length == 0 && !final { return nil }
        throw Self.notUTF8(byte: byte(q))
      }
      out.update(from: q, count: length)
      out += length
      q += length
    }
    if final { throw Failure.truncated(bytes: origin + (end - base)) }
    return nil
  }

  /// Makes `scratch` hold at least `capacity` bytes, keeping its first `used`.
  func reserve(_ capacity: Int, used: Int) {
    guard scratchCapacity < capacity else { return }
    let (larger, size) = RowStaging.grow(scratch, used: used, capacity: scratchCapacity, more: capacity - used)
    scratch = larger
    scratchCapacity = size
  }

  /// The scalar of the `\uXXXX` escape at `q` (a surrogate pair's two escapes read as one)
  /// and the escape's length in bytes; nil when it reaches `end` and the next chunk may go on.
  static func unicodeEscape(_ q: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, byte: Int, final: Bool) throws
    -> (UInt32, Int)?
  {
    // The four digits of the escape at `at` (its backslash and `u` already seen), nil when
    // they are cut by `end` and every digit present is one.
    func hex(_ at: UnsafePointer<UInt8>) throws -> UInt32? {
      var value: UInt32 = 0
      for i in 2..<6 {
        guard at + i < end else {
          if final { throw badEscape(at, length: i, byte: byte + (at - q)) }
          return nil
        }
        guard let digit = hexValue(at[i]) else { throw badEscape(at, length: i + 1, byte: byte + (at - q)) }
        value = value << 4 | digit
      }
      return value
    }
    guard let high = try hex(q) else { return nil }
    switch high {
    case 0xD800...0xDBFF:
      // A high surrogate: the low one must follow as the next escape (RFC 8259 §7). Bytes
      // cut by `end` wait for the next chunk only while those present fit.
      if q + 6 == end || q + 7 == end && q[6] == JSONByte.backslash {
        if final { throw loneSurrogate(high, byte: byte) }
        return nil
      }
      guard q[6] == JSONByte.backslash, q[7] == JSONByte.lowerU else { throw loneSurrogate(high, byte: byte) }
      guard let low = try hex(q + 6) else { return nil }
      guard (0xDC00...0xDFFF).contains(low) else { throw loneSurrogate(high, byte: byte) }
      return (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12)
    case 0xDC00...0xDFFF:
      throw loneSurrogate(high, byte: byte)
    default:
      return (high, 6)
    }
  }

  @inline(__always)
  static func hexValue(_ c: UInt8) -> UInt32? {
    switch c {
    case JSONByte.zero...JSONByte.nine: UInt32(c - JSONByte.zero)
    case 0x61...0x66: UInt32(c - 0x61 + 10)
    case 0x41...0x46: UInt32(c - 0x41 + 10)
    default: nil
    }
  }

  /// Writes `scalar` as UTF-8 at `out`; returns its length in bytes.
  static func writeUTF8(_ scalar: UInt32, to out: UnsafeMutablePointer<UInt8>) -> Int {
    switch scalar {
    case 0..<0x80:
      out[0] = UInt8(scalar)
      return 1
    case 0x80..<0x800:
      out[0] = UInt8(0xC0 | scalar >> 6)
      out[1] = UInt8(0x80 | scalar & 0x3F)
      return 2
    case 0x800..<0x10000:
      out[0] = UInt8(0xE0 | scalar >> 12)
      out[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[2] = UInt8(0x80 | scalar & 0x3F)
      return 3
    default:
      out[0] = UInt8(0xF0 | scalar >> 18)
      out[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
      out[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[3] = UInt8(0x80 | scalar & 0x3F)
      return 4
    }
  }

  /// The length of the UTF-8 character starting with the byte (at least 0x80) at `q`, by
  /// RFC 3629 §4; 0 when it is cut by `end` (valid so far), -1 when it is not UTF-8.
  @inline(__always)
  static func utf8Length(_ q: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> Int {
    let lead = q.pointee
    let length: Int
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    switch lead {
    case 0xC2...0xDF: length = 2
    case 0xE0:
      length = 3
      low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED:
      length = 3
      high = 0x9F
    case 0xF0:
      length = 4
      low = 0x90
    case 0xF1...0xF3: length = 4
    case 0xF4:
      length = 4
      high = 0x8F
    default: return -1
    }
    // Only the second byte has a narrower range.
    for i in 1..<length {
      guard q + i < end else { return 0 }
      let c = q[i]
      if i == 1 ? (c < low || c > high) : (c & 0xC0 != 0x80) { return -1 }
    }
    return length
  }

  /// Bytes of `word` (eight bytes of text, the first in the lowest byte) that a string's
  /// plain run stops at: `"`, `\`, below U+0020, or at least 0x80. The lowest set bit is the
  /// first such byte's top bit (a borrow only ever marks bytes after a real one).
  @inline(__always)
  static func specialBytes(_ word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let quotes = word ^ (ones &* UInt64(JSONByte.quote))
    let backslashes = word ^ (ones &* UInt64(JSONByte.backslash))
    let zeroQuote = (quotes &- ones) & ~quotes
    let zeroBackslash = (backslashes &- ones) & ~backslashes
    let control = (word &- ones &* UInt64(JSONByte.space)) & ~word
    return (zeroQuote | zeroBackslash | control | word) & highs
  }
}
