internal import CLibPQ
internal import DrayJSON
internal import Foundation

/// The binary format of `COPY ... FROM STDIN (FORMAT binary)` (PostgreSQL 15 documentation,
/// COPY, "Binary Format"): an 11-byte signature `PGCOPY\n\377\r\n\0`, a 32-bit flags field
/// and a 32-bit header extension length (both 0); per row a 16-bit field count, then per
/// field a 32-bit length (-1 for NULL) and the value in its type's `send` form; a 16-bit -1
/// ends the data. Integers are big-endian.
///
/// The server then reads each value with its column type's `recv` function and casts
/// nothing, so a load makes the writer binary only when every column's type in the catalog
/// is the one `PostgresColumnType` gives its scheme type (a user may have altered a column:
/// then the table goes by text, and the server casts as before). The forms:
///
/// | column | form |
/// |---|---|
/// | `bigint` | 8 bytes, two's complement |
/// | `double precision` | 8 bytes, IEEE 754 (the double nearest the digits: what `float8in` reads) |
/// | `numeric` | ndigits, weight, sign, dscale (16 bits each), then base-10000 digits (`numeric_recv`) |
/// | `text` | the UTF-8 bytes |
/// | `boolean` | 1 byte, 1 or 0 |
/// | `jsonb` | version 1, then the JSON text (`jsonb_recv`) |
///
/// A number's `numeric` form gets the display scale `numeric_in` gives its text (the digits
/// after the point less the exponent, at least 0), so that both store the same value.
///
/// Switching to text: a value binary cannot carry (a `numeric` of more than 3,000 base-10000
/// digits, which `numeric_recv` refuses but `numeric_in` takes; an exponent beyond ±1000,
/// or text that is not a JSON number, which the server judges) makes the rest of the
/// table go by text: the row is re-encoded as text, the binary COPY ends before it, and a
/// text COPY of the same columns carries it and the rows after it, in the same transaction.
/// `textReason` says why.
extension PostgresCopyWriter {
  /// What a value of the current binary row is, to re-encode the row as text.
  enum FieldKind: UInt8 { case null, bigint, double, numeric, text, boolean, jsonb }

  // MARK: Binary framing

  func appendBinaryHeader() {
    let signature: [UInt8] = [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00]
    signature.withUnsafeBufferPointer { append(bytes: $0) }
    appendInt32(0)
    appendInt32(0)
  }

  /// Appends `value` in network byte order (big-endian), as binary COPY's fields are.
  @inline(__always)
  func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
    let size = MemoryLayout<T>.size
    reserve(size)
    UnsafeMutableRawPointer(staging.pointee.base + staging.pointee.count).storeBytes(of: value.bigEndian, as: T.self)
    staging.pointee.count += size
  }

  @inline(__always)
  func appendInt16(_ value: Int16) { appendBigEndian(value) }

  @inline(__always)
  func appendInt32(_ value: Int32) { appendBigEndian(value) }

  @inline(__always)
  func appendInt64(_ value: Int64) { appendBigEndian(value) }

  /// Starts a binary row (its field count) unless one is started.
  @inline(__always)
  func startBinaryRow() {
    guard !staging.pointee.inRow else { return }
    staging.pointee.inRow = true
    staging.pointee.rowStart = staging.pointee.count
    staging.pointee.fields = 0
    appendInt16(Int16(truncatingIfNeeded: staging.pointee.width))
  }

  /// Starts a binary field of `kind`.
  @inline(__always)
  func binaryField(_ kind: FieldKind) {
    startBinaryRow()
    if staging.pointee.fields < staging.pointee.width { staging.pointee.kinds[staging.pointee.fields] = kind }
    staging.pointee.fields += 1
  }

  @inline(__always)
  private func binaryBytes(_ kind: FieldKind, prefix: UInt8?, _ bytes: UnsafeBufferPointer<UInt8>) {
    binaryField(kind)
    appendInt32(Int32(truncatingIfNeeded: bytes.count + (prefix == nil ? 0 : 1)))
    if let prefix { append(byte: prefix) }
    append(bytes: bytes)
  }

  // MARK: Values, in either format

  /// Appends an integer within 64 bits (its digits, checked by the caller).
  func appendBigint(_ digits: UnsafeBufferPointer<UInt8>) {
    if staging.pointee.binary {
      if let value = Self.int64(digits) {
        binaryField(.bigint)
        appendInt32(8)
        appendInt64(value)
        return
      }
      beginTextRow("an integer the binary form does not read")
    }
    appendVerbatim(digits)
  }

  /// Appends an integer into a `bigint` column of a binary COPY (`int8send`).
  @inline(__always)
  func appendBigint(_ value: Int64) {
    binaryField(.bigint)
    appendInt32(8)
    appendInt64(value)
  }

  /// Appends a boolean into a `bigint` column: 1 or 0.
  func appendBigint(_ flag: Bool) {
    if staging.pointee.binary {
      binaryField(.bigint)
      appendInt32(8)
      appendInt64(flag ? 1 : 0)
    } else {
      appendVerbatim(flag ? "1" : "0")
    }
  }

  func appendBoolean(_ flag: Bool) {
    if staging.pointee.binary {
      binaryField(.boolean)
      appendInt32(1)
      append(byte: flag ? 1 : 0)
    } else {
      appendVerbatim(flag ? "t" : "f")
    }
  }

  /// Appends a `double precision` value: `text` is what the text format sends, which
  /// PostgreSQL reads as the nearest double (`strtod`); the binary form is that double, read
  /// the same way (`NumberText.double`: correctly rounded, as `strtod`, with no copy of the
  /// text on its common path).
  func appendDouble(_ text: UnsafeBufferPointer<UInt8>) {
    if staging.pointee.binary {
      if let base = text.baseAddress, case let value = NumberText.double(base, text.count), value.isFinite {
        appendDouble(value)
        return
      }
      beginTextRow("a number the binary form does not read")
    }
    appendVerbatim(text)
  }

  /// Appends a finite double in binary form (`float8send`: its IEEE 754 bits, big-endian).
  @inline(__always)
  func appendDouble(_ value: Double) {
    binaryField(.double)
    appendInt32(8)
    appendInt64(Int64(bitPattern: value.bitPattern))
  }

  /// Appends a JSON number into a `numeric` column, every digit.
  func appendNumeric(_ text: UnsafeBufferPointer<UInt8>) {
    if staging.pointee.binary {
      if appendBinaryNumeric(text) { return }
      beginTextRow("a numeric value beyond what numeric_recv takes")
    }
    appendVerbatim(text)
  }

  /// Appends text (a `text` column's value, or an array's or object's JSON text).
  func appendText(_ bytes: UnsafeBufferPointer<UInt8>) {
    if staging.pointee.binary {
      binaryBytes(.text, prefix: nil, bytes)
    } else {
      separate()
      appendEscaped(bytes)
    }
  }

  /// Appends JSON text into a `jsonb` column.
  func appendJSON(_ bytes: UnsafeBufferPointer<UInt8>) {
    if staging.pointee.binary {
      binaryBytes(.jsonb, prefix: 1, bytes)
    } else {
      separate()
      appendEscaped(bytes)
    }
  }

  func appendJSON(_ text: StaticString) {
    appendJSON(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
  }

  static func int64(_ digits: UnsafeBufferPointer<UInt8>) -> Int64? {
    guard digits.count <= 20, let first = digits.first else { return nil }
    var i = first == UInt8(ascii: "-") ? 1 : 0
    guard i < digits.count else { return nil }
    var value: Int64 = 0
    while i < digits.count {
      let d = digits[i] &- 0x30
      guard d < 10 else { return nil }
      // Accumulated negatively: -9223372036854775808 fits, its positive does not.
      let (m, o1) = value.multipliedReportingOverflow(by: 10)
      let (s, o2) = m.subtractingReportingOverflow(Int64(d))
      guard !o1, !o2 else { return nil }
      value = s
      i += 1
    }
    if first == UInt8(ascii: "-") { return value }
    let (positive, overflow) = (0 as Int64).subtractingReportingOverflow(value)
    return overflow ? nil : positive
  }

  // MARK: numeric

  /// Writes the `numeric` field of a JSON number (`-?digits(.digits)?([eE][+-]?digits)?`);
  /// false, with nothing written, when `text` is not one or binary cannot carry it.
  private func appendBinaryNumeric(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = text.count
    var i = 0
    let negative = i < n && text[i] == UInt8(ascii: "-")
    if negative { i += 1 }
    let intStart = i
    while i < n, text[i] &- 0x30 < 10 { i += 1 }
    let intEnd = i
    guard intEnd > intStart else { return false }
    var fracStart = i
    var fracEnd = i
    if i < n, text[i] == UInt8(ascii: ".") {
      i += 1
      fracStart = i
      while i < n, text[i] &- 0x30 < 10 { i += 1 }
      fracEnd = i
      guard fracEnd > fracStart else { return false }
    }
    var exponent = 0
    if i < n, text[i] | 0x20 == UInt8(ascii: "e") {
      i += 1
      var exponentNegative = false
      if i < n, text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") {
        exponentNegative = text[i] == UInt8(ascii: "-")
        i += 1
      }
      let start = i
      while i < n, text[i] &- 0x30 < 10 {
        guard exponent <= 100_000 else { return false }
        exponent = exponent * 10 + Int(text[i] &- 0x30)
        i += 1
      }
      guard i > start else { return false }
      if exponentNegative { exponent = -exponent }
    }
    // numeric_in refuses an exponent beyond NUMERIC_MAX_PRECISION (1000): the server judges.
    guard i == n, abs(exponent) <= 1000 else { return false }
    let fracCount = fracEnd - fracStart
    let dscale = max(0, fracCount - exponent)
    guard dscale <= 0x3FFF else { return false }
    // The significant digits: from the first non-zero to the last non-zero, across the point.
    func digit(_ k: Int) -> UInt8 { k < intEnd - intStart ? text[intStart + k] &- 0x30 : text[fracStart + k - (intEnd - intStart)] &- 0x30 }
    let all = (intEnd - intStart) + fracCount
    var first = 0
    while first < all, digit(first) == 0 { first += 1 }
    var last = all - 1
    while last >= first, digit(last) == 0 { last -= 1 }
    if first > last {
      // Zero: no digits, positive (numeric_in drops the sign of zero), the display scale kept.
      binaryField(.numeric)
      appendInt32(8)
      for part: Int16 in [0, 0, 0, Int16(dscale)] { appendInt16(part) }
      return true
    }
    // Digit k stands for 10^(point - 1 - k), `point` digits of the whole before the point.
    let point = (intEnd - intStart) + exponent
    func group(_ power: Int) -> Int { power >= 0 ? power / 4 : -((-power + 3) / 4) }
    let weight = group(point - 1 - first)
    let lastGroup = group(point - 1 - last)
    let ndigits = weight - lastGroup + 1
    guard ndigits <= 3000, weight <= Int(Int16.max), weight >= Int(Int16.min) else { return false }
    binaryField(.numeric)
    appendInt32(Int32(8 + 2 * ndigits))
    appendInt16(Int16(ndigits))
    appendInt16(Int16(weight))
    appendInt16(negative ? 0x4000 : 0)
    appendInt16(Int16(dscale))
    var k = first
    for g in stride(from: weight, through: lastGroup, by: -1) {
      var value: Int16 = 0
      for place in stride(from: 3, through: 0, by: -1) {
        let power = 4 * g + place
        let index = point - 1 - power
        value = value &* 10
        if index == k && k <= last {
          value = value &+ Int16(digit(k))
          k += 1
        }
      }
      appendInt16(value)
    }
    return true
  }

  // MARK: Switching to text

  /// Makes the current row, and every row after it, go by text: the row's values so far are
  /// re-encoded as text after the binary rows; `endRow()` ends the binary COPY before it
  /// and starts the text one (`switchToText(at:)`).
  func beginTextRow(_ reason: String) {
    let s = staging.pointee
    textReason = textReason ?? reason
    let start = s.inRow ? s.rowStart : s.count
    let row = Array(UnsafeBufferPointer(start: s.base + start, count: s.count - start))
    let kinds = Array(UnsafeBufferPointer(start: s.kinds, count: s.inRow ? min(s.fields, s.width) : 0))
    staging.pointee.count = start
    staging.pointee.binary = false
    staging.pointee.inRow = false
    staging.pointee.binaryEnd = start
    var offset = 2
    func int(_ size: Int) -> Int64 {
      var value: Int64 = 0
      for b in row[offset..<offset + size] { value = value << 8 | Int64(b) }
      offset += size
      return size == 2 ? Int64(Int16(truncatingIfNeeded: value)) : size == 4 ? Int64(Int32(truncatingIfNeeded: value)) : value
    }
    for kind in kinds {
      let length = Int(int(4))
      if length < 0 {
        appendNull()
        continue
      }
      let end = offset + length
      var text: String
      switch kind {
      case .null: text = ""
      case .bigint: text = String(int(8))
      case .double: text = "\(Double(bitPattern: UInt64(bitPattern: int(8))))"
      case .boolean: text = row[offset] == 1 ? "t" : "f"
      case .numeric: text = Self.numericText(row[offset..<end])
      case .text, .jsonb:
        let body = kind == .jsonb ? row[(offset + 1)..<end] : row[offset..<end]
        body.withUnsafeBufferPointer { appendText($0) }
        offset = end
        continue
      }
      offset = end
      text.withUTF8 { appendVerbatim($0) }
    }
  }

  /// The text of a `numeric` in its binary form, with its display scale.
  static func numericText(_ field: ArraySlice<UInt8>) -> String {
    let bytes = Array(field)
    func int16(_ at: Int) -> Int { Int(Int16(bitPattern: UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]))) }
    let ndigits = int16(0)
    let weight = int16(2)
    let negative = int16(4) == 0x4000
    let dscale = int16(6)
    let digits = (0..<ndigits).map { int16(8 + 2 * $0) }
    func at(_ g: Int) -> Int { g <= weight && weight - g < ndigits ? digits[weight - g] : 0 }
    var text = negative && ndigits > 0 ? "-" : ""
    if weight < 0 {
      text += "0"
    } else {
      text += String(at(weight))
      for g in stride(from: weight - 1, through: 0, by: -1) {
        let part = String(at(g))
        text += String(repeating: "0", count: 4 - part.count) + part
      }
    }
    if dscale > 0 {
      var fraction = ""
      var g = -1
      while fraction.count < dscale {
        let part = String(at(g))
        fraction += String(repeating: "0", count: 4 - part.count) + part
        g -= 1
      }
      text += "." + fraction.prefix(dscale)
    }
    return text
  }

  /// Ends the binary COPY at `binaryEnd` and sends the text rows after it by a text COPY of
  /// the same table and columns.
  func switchToText(at binaryEnd: Int) throws(PostgresError) {
    let s = staging.pointee
    let textRows = Array(UnsafeBufferPointer(start: s.base + binaryEnd, count: s.count - binaryEnd))
    staging.pointee.count = binaryEnd
    staging.pointee.binaryEnd = nil
    appendInt16(-1)
    try flush()
    try waitForSender()
    done = true
    try send { PQputCopyEnd($0, nil) }
    copiedBefore += try drain()
    try connection.startCopy(statement)
    done = false
    started = ContinuousClock.now
    textRows.withUnsafeBufferPointer { append(bytes: $0) }
    if staging.pointee.count >= Self.chunkSize { try flush() }
  }
}
