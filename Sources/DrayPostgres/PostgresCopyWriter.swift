internal import CLibPQ
internal import DrayJSON
internal import DrayModel
internal import Foundation

/// Sends the rows of a `COPY ... FROM STDIN` in text format (PostgreSQL 15 documentation,
/// COPY, "Text Format"), value by value, with bounded memory; made by
/// `copyInBinary(_:width:)`, in binary format (`PostgresCopyWriter+Binary.swift`).
///
/// Made by `PostgresConnection.copyIn(_:)`. Values are appended to the current row
/// (`appendNull()`, `append(_:)`, or `PostgresValueRule.append(_:as:to:)` for JSON values),
/// and `endRow()` ends it. Rows are staged in one buffer; each time it reaches `chunkSize`
/// bytes it is handed to a sender thread (`HandoffThread`) that sends it with
/// `PQputCopyData` while the next chunk fills, so that the answer's scanning and the sending
/// (and the server's reading, which the sending waits on) overlap on two cores. At most
/// `queueLimit` chunks wait, so memory stays at a few chunks plus the longest row whatever
/// the row count. The connection is used by one thread at a time: the sender between
/// chunks, the caller only once the chunks handed over are sent. `finish()` ends the COPY
/// (`PQputCopyEnd`) and checks the server's answer; `cancel(_:)` abandons it, and the server
/// then discards every row sent.
///
/// Text is escaped as the text format requires: backslash as `\\`, tab as `\t`, newline as
/// `\n`, carriage return as `\r`; NULL is `\N`, so NULL and `""` stay distinct. A NUL
/// character cannot be stored in PostgreSQL text at all and is refused.
///
/// After any throw from `endRow()` or `finish()` the COPY has failed: the connection stays
/// usable once the error is handled (a broken connection excepted), and nothing of the COPY
/// was stored.
public final class PostgresCopyWriter {
  /// Bytes staged before they are sent: 64 KiB.
  public static let chunkSize = 64 * 1024
  /// Chunks handed to the sender and not yet sent, at most.
  static let queueLimit = 3

  /// Staged bytes handed to the sender thread.
  final class Chunk {
    var base: UnsafeMutablePointer<UInt8>
    var capacity: Int
    var count = 0

    init(capacity: Int) {
      base = .allocate(capacity: capacity)
      self.capacity = capacity
    }

    deinit { base.deallocate() }
  }

  /// Sends the chunks on a thread of its own.
  private let sender: HandoffThread<Chunk>

  /// The staged bytes. Only trivial fields, reached through a raw pointer: the per-value
  /// path does no reference counting, no exclusivity checks and no array bookkeeping.
  struct Staging {
    var base: UnsafeMutablePointer<UInt8>
    var count = 0
    var capacity: Int
    /// True when the next value is not the first of its row (a tab goes before it; in
    /// binary, the row's field count is written).
    var inRow = false
    /// The COPY is in binary format (`PostgresCopyWriter+Binary.swift`).
    var binary = false
    /// Binary: the values of a row.
    var width = 0
    /// Binary: where the current row starts, and the kind of each of its values so far.
    var rowStart = 0
    var fields = 0
    var kinds: UnsafeMutablePointer<FieldKind>
    /// Binary: where the binary rows end when the current row goes by text
    /// (`PostgresCopyWriter+Binary.swift`, "switching to text"); the switch is made at its end.
    var binaryEnd: Int?
  }

  let connection: PostgresConnection
  /// The statement that started the COPY (in binary, without its `(FORMAT binary)`).
  var statement: String
  /// When the COPY was sent: its answer's limit counts from here.
  var started = ContinuousClock.now
  let staging: UnsafeMutablePointer<Staging>
  var done = false
  /// Rows ended so far.
  public internal(set) var rowCount = 0
  /// Rows the server copied in COPYs ended before this one (a binary COPY switched to text).
  var copiedBefore = 0
  /// Why a binary COPY went on in text, once it did.
  public internal(set) var textReason: String?

  init(connection: PostgresConnection, statement: String, binaryWidth: Int? = nil) {
    self.connection = connection
    self.statement = statement
    sender = HandoffThread(limit: Self.queueLimit) { [connection, statement] chunk in
      do throws(PostgresError) {
        try Self.send(on: connection, statement) { handle in
          UnsafeRawPointer(chunk.base).withMemoryRebound(to: CChar.self, capacity: chunk.count) {
            PQputCopyData(handle, $0, Int32(chunk.count))
          }
        }
        return nil
      } catch { return error }
    }
    let capacity = Self.chunkSize + 4096
    staging = UnsafeMutablePointer<Staging>.allocate(capacity: 1)
    let width = binaryWidth ?? 0
    staging.initialize(
      to: Staging(
        base: UnsafeMutablePointer<UInt8>.allocate(capacity: capacity), capacity: capacity, binary: binaryWidth != nil,
        width: width, kinds: .allocate(capacity: max(1, width))))
    if binaryWidth != nil { appendBinaryHeader() }
  }

  deinit {
    if !done { cancel("the COPY was abandoned") }
    sender.stop()
    staging.pointee.base.deallocate()
    staging.pointee.kinds.deallocate()
    staging.deinitialize(count: 1)
    staging.deallocate()
  }

  /// Whether values go in binary form now.
  var isBinary: Bool { staging.pointee.binary }

  /// Makes room for `count` more bytes.
  @inline(__always)
  func reserve(_ count: Int) {
    if staging.pointee.count + count > staging.pointee.capacity { grow(count) }
  }

  private func grow(_ count: Int) {
    let s = staging.pointee
    (staging.pointee.base, staging.pointee.capacity) = RowStaging.grow(s.base, used: s.count, capacity: s.capacity, more: count)
  }

  @inline(__always)
  func append(byte: UInt8) {
    reserve(1)
    staging.pointee.base[staging.pointee.count] = byte
    staging.pointee.count += 1
  }

  @inline(__always)
  func append(bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress, bytes.count > 0 else { return }
    reserve(bytes.count)
    (staging.pointee.base + staging.pointee.count).update(from: source, count: bytes.count)
    staging.pointee.count += bytes.count
  }

  /// Appends NULL (`\N`; in binary, a length of -1).
  public func appendNull() {
    if staging.pointee.binary {
      binaryField(.null)
      appendInt32(-1)
      return
    }
    separate()
    append(byte: UInt8(ascii: "\\"))
    append(byte: UInt8(ascii: "N"))
  }

  /// Appends a text value, escaped.
  ///
  /// - Throws: `PostgresValueRefusal` (nothing appended) when it holds a NUL character.
  public func append(_ text: String) throws(PostgresValueRefusal) {
    var text = text
    let refusal = text.withUTF8 { bytes -> PostgresValueRefusal? in
      do throws(PostgresValueRefusal) {
        try append(utf8: bytes)
        return nil
      } catch {
        return error
      }
    }
    if let refusal { throw refusal }
  }

  /// Appends UTF-8 text, escaped.
  ///
  /// - Throws: `PostgresValueRefusal` (nothing appended) when it holds a NUL byte.
  public func append(utf8 bytes: UnsafeBufferPointer<UInt8>) throws(PostgresValueRefusal) {
    if let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil {
      throw PostgresValueRefusal(found: "a string with a NUL character (\\u0000)", value: nil)
    }
    appendText(bytes)
  }

  /// Appends bytes that need no escaping (digits, `t`, `f`); checked by the caller.
  func appendVerbatim(_ bytes: UnsafeBufferPointer<UInt8>) {
    separate()
    append(bytes: bytes)
  }

  /// Appends bytes that need no escaping (digits, `t`, `f`); checked by the caller.
  func appendVerbatim(_ text: StaticString) {
    separate()
    append(bytes: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
  }

  /// Appends bytes escaped, continuing the current value (no separator).
  func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress else { return }
    // Each byte takes at most two.
    reserve(2 * bytes.count)
    var out = staging.pointee.base + staging.pointee.count
    var i = 0
    // Eight bytes at a time while none needs escaping (none below 0x0E, none a backslash).
    while i + 8 <= bytes.count {
      let word = UnsafeRawPointer(source + i).loadUnaligned(as: UInt64.self)
      guard !Self.needsEscape(word) else { break }
      UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
      out += 8
      i += 8
    }
    while i < bytes.count {
      let byte = source[i]
      i += 1
      let escaped: UInt8
      switch byte {
      case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
      case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
      case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
      case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
      default:
        out.pointee = byte
        out += 1
        continue
      }
      out[0] = UInt8(ascii: "\\")
      out[1] = escaped
      out += 2
    }
    staging.pointee.count = out - staging.pointee.base
  }

  /// Whether any byte of `word` is below 0x0E (tab, newline and carriage return among them)
  /// or a backslash: the bit tricks of "Bit Twiddling Hacks" (Sean Eron Anderson, "Determine
  /// if a word has a byte less than n" and "... equal to n"); false means none needs escaping.
  @inline(__always)
  private static func needsEscape(_ word: UInt64) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let below = (word &- ones &* 0x0E) & ~word & highs
    let backslashes = word ^ (ones &* 0x5C)
    let equal = (backslashes &- ones) & ~backslashes & highs
    return below | equal != 0
  }

  /// Starts a value: a tab unless it is the first of its row.
  @inline(__always)
  func separate() {
    if staging.pointee.inRow { append(byte: UInt8(ascii: "\t")) }
    staging.pointee.inRow = true
  }

  /// Ends the row; sends the staged rows when they reach `chunkSize`.
  ///
  /// - Throws: `PostgresError` when sending fails (the connection broke: transient).
  public func endRow() throws(PostgresError) {
    if staging.pointee.binary {
      if !staging.pointee.inRow { startBinaryRow() }
      staging.pointee.inRow = false
      rowCount += 1
      if staging.pointee.count >= Self.chunkSize { try flush() }
      return
    }
    append(byte: UInt8(ascii: "\n"))
    staging.pointee.inRow = false
    if let binaryEnd = staging.pointee.binaryEnd {
      rowCount += 1
      try switchToText(at: binaryEnd)
      return
    }
    rowCount += 1
    if staging.pointee.count >= Self.chunkSize { try flush() }
  }

  /// Hands the staged bytes to the sender and stages into a spare chunk.
  func flush() throws(PostgresError) {
    let s = staging.pointee
    guard s.count > 0 else { return }
    let chunk = sender.take() ?? Chunk(capacity: s.capacity)
    let (base, capacity) = (chunk.base, chunk.capacity)
    chunk.base = s.base
    chunk.capacity = s.capacity
    chunk.count = s.count
    staging.pointee.base = base
    staging.pointee.capacity = capacity
    staging.pointee.count = 0
    do {
      try sender.submit(chunk)
    } catch {
      done = true
      throw postgresError(error)
    }
  }

  /// Waits until the sender has sent every chunk handed over; the connection is then the
  /// caller's.
  /// - Throws: the sender's failure, if it had one.
  func waitForSender() throws(PostgresError) {
    if let failure = sender.drain() {
      done = true
      throw postgresError(failure)
    }
  }

  /// The sender's failures are `PostgresError`s (`send(on:_:_:)`).
  private func postgresError(_ error: any Error) -> PostgresError {
    error as? PostgresError ?? PostgresError(sqlState: nil, message: "\(error)", statement: statement, url: connection.url.redacted)
  }

  /// Queues a message with `put` (`PQputCopyData`, `PQputCopyEnd`: 1 queued, 0 no room yet,
  /// -1 failed) and sends it (`PostgresConnection.flushOutput`), so that libpq holds at most
  /// one chunk and a server that takes nothing is given up after `database.timeouts.idle`.
  func send(_ put: (OpaquePointer) -> Int32) throws(PostgresError) {
    try Self.send(on: connection, statement, put)
  }

  static func send(on connection: PostgresConnection, _ statement: String, _ put: (OpaquePointer) -> Int32) throws(PostgresError) {
    let handle = try connection.open(statement)
    var queued = put(handle)
    if queued == 0 {
      try connection.flushOutput(statement)
      queued = put(handle)
    }
    guard queued == 1 else { throw connection.failure(nil, statement) }
    try connection.flushOutput(statement)
  }

  /// Sends the last rows and ends the COPY; the server then checks and stores them.
  ///
  /// - Returns: the rows the server copied.
  /// - Throws: `PostgresError`: the server's refusal (a value its column's type does not
  ///   take, a constraint) with the line in `detail`, or a broken connection.
  @discardableResult
  public func finish() throws(PostgresError) -> Int {
    precondition(!staging.pointee.inRow, "finish() in the middle of a row")
    if staging.pointee.binary { appendInt16(-1) }
    try flush()
    try waitForSender()
    done = true
    try send { PQputCopyEnd($0, nil) }
    return try copiedBefore + drain()
  }

  /// Abandons the COPY: the server discards every row and the COPY fails with `message`.
  /// Doing it twice, or after `finish()`, does nothing.
  public func cancel(_ message: String) {
    guard !done else { return }
    done = true
    _ = sender.drain()
    guard (try? send { PQputCopyEnd($0, message) }) != nil else { return }
    _ = try? drain()
  }

  /// Reads the COPY's results up to the end; the count of the successful one.
  func drain() throws(PostgresError) -> Int {
    let handle = try connection.open(statement)
    var failure: PostgresError?
    var count = 0
    while let result = try connection.nextResult(statement, since: started) {
      if PQresultStatus(result) == PGRES_COMMAND_OK {
        count = Int(String(cString: PQcmdTuples(result))) ?? 0
      } else if failure == nil {
        failure = connection.failure(result, statement)
      }
      PQclear(result)
      if PQstatus(handle) != CONNECTION_OK { break }
    }
    if let failure { throw failure }
    return count
  }
}
