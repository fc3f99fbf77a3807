internal import DrayJSON
public import DrayModel
internal import Foundation

/// Reads the records of a JSON answer from a file, streaming, with dray's JSON reader
/// (`JSONEvents`).
///
/// The records are the value a JSON Pointer (RFC 6901) selects: each element when it is an
/// array, the value itself when it is an object, none when it is null. Only one record is
/// held in memory at a time, so an answer of any size reads in bounded memory. On the way,
/// the values of `probes` (a next link, a cursor) are picked up.
///
/// A record that is an object gives one column per member (nested arrays and objects as
/// their JSON text); any other record gives one column, `value`. With declared columns, each
/// column's value is the member named like it, or what its own pointer selects inside the
/// record.
public struct JSONRecordReader {
  public var records: JSONPointer?
  public var columns: [HTTPStep.Column]?
  public var probes: [JSONPointer]
  /// With `columns`: a record's members they do not name follow the declared columns, as
  /// their own columns (`load.contract.new_columns`); otherwise they are not read.
  public var keepingExtra: Bool
  /// The column of an incremental cursor (the first token of `incremental.cursor`): its
  /// numbers with a fraction or an exponent keep the text the API wrote
  /// (`RecordValue.decimal`), so that the kept cursor is the API's own (docs/http.md,
  /// "Precision"); nil for none.
  public var cursorColumn: String?

  /// - Parameters:
  ///   - records: where the records are; nil to read only the probes.
  ///   - columns: declared columns, or nil to take every member.
  ///   - probes: single values to pick up.
  public init(records: JSONPointer?, columns: [HTTPStep.Column]? = nil, probes: [JSONPointer] = [], keepingExtra: Bool = false) {
    self.keepingExtra = keepingExtra
    self.records = records
    self.columns = columns
    self.probes = probes
  }

  /// Reads `file`, handing each record to `each`; with `growing`, the part a download is
  /// still writing, as it arrives (`FileChunks`).
  /// - Returns: how many records were read, and what each probe found.
  /// - Throws: `RecordError` when the file cannot be read or is not JSON (an empty one
  ///   included: a server with no records says so with a document such as `[]`), is nested
  ///   deeper than `JSONValue.maxDepth` levels, or the records selector points at a string or
  ///   number, or selects nothing; `GrowingFile.Stop` when the download failed or started its
  ///   part again; errors thrown by `each` as they are.
  public func read(file: String, growing: GrowingFile? = nil, each: (Record) throws -> Void) throws -> AnswerSummary {
    let input: FileChunks
    do {
      input = try FileChunks(path: file, growing: growing, chunkSize: JSONEvents.chunkSize)
    } catch is FileChunks.Unreadable {
      throw RecordError("cannot read the answer at \(file)")
    }
    return try withoutActuallyEscaping(each) { each in
      let state = JSONScanState(reader: self, each: each)
      do throws(JSONEvents.Failure) {
        try JSONEvents.parse(input, into: state)
      } catch .empty(let bytes) {
        throw RecordError(BlankAnswer.describe(bytes: bytes) + "; an empty body is not a JSON document")
      } catch .truncated(_, let bytes) {
        throw RecordError("the answer ends before its JSON is complete (\(bytes) bytes)")
      } catch .stopped(let byte) {
        if let place = state.tooDeep {
          throw RecordError(
            "\(place) \(JSONValue.nestingMessage(at: byte)); dray reads at most \(JSONValue.maxDepth) levels of arrays and objects")
        }
        throw state.failure ?? RecordError("reading the answer stopped")
      } catch .invalid(var reason, let byte) {
        if reason.hasSuffix(".") { reason.removeLast() }
        throw RecordError("the answer is not valid JSON (\(reason), at byte \(byte))")
      } catch .unreadable(let error) {
        if error is FileChunks.Unreadable { throw RecordError("cannot read the answer at \(file)") }
        throw error
      }
      if let records, !state.foundRecords {
        let near = records.nearSpelling { state.members[records]?[$0.count] ?? [] }.map { "; did you mean '\($0)'?" } ?? ""
        throw RecordError("the records selector '\(records)' matches nothing in the answer\(near)")
      }
      for probe in probes where state.summary.values[.json(probe)] == nil {
        state.summary.nearSpellings[.json(probe)] = probe.nearSpelling { state.members[probe]?[$0.count] ?? [] }.map(\.description)
      }
      try state.sightings.check(columns ?? [], records: state.summary.records)
      state.summary.unmatchedColumns = state.sightings.unmatched(columns ?? [], records: state.summary.records)
      return state.summary
    }
  }

  /// Which declared columns' `from` pointers matched a record of an answer, and the near
  /// spelling of one that did not (docs/http.md, "A misspelt selector").
  struct FromSightings {
    /// The indexes of the columns whose `from` selected a value (null included).
    var matched: Set<Int> = []
    /// For a column whose `from` selected nothing in a record, the near spelling a record
    /// held at any depth (`JSONPointer.nearSpelling(in:)`).
    var near: [Int: JSONPointer] = [:]

    /// - Throws: `RecordError` for a `from` that matched none of `records` records (at
    ///   least one) while one of them held a near spelling: taken as misspelt.
    func check(_ columns: [HTTPStep.Column], records: Int) throws {
      guard records > 0 else { return }
      for (i, column) in columns.enumerated() where !matched.contains(i) {
        guard case .json(let pointer)? = column.from, let near = near[i] else { continue }
        throw RecordError(
          "load.columns.\(column.name).from '\(pointer)' matches nothing in the page's \(records) record\(records == 1 ? "" : "s"); "
            + "did you mean '\(near)'? A misspelt selector would load the column as NULL; nothing of this page was loaded")
      }
    }

    /// The columns with a `from` that matched none of `records` records (at least one).
    func unmatched(_ columns: [HTTPStep.Column], records: Int) -> [HTTPStep.Column] {
      guard records > 0 else { return [] }
      return columns.enumerated().filter { i, column in
        if case .json? = column.from { !matched.contains(i) } else { false }
      }.map(\.element)
    }
  }

  /// A captured record as columns.
  /// - Parameters:
  ///   - number: the record's number in the answer, from 1, for messages.
  ///   - sightings: what the declared columns' `from` pointers matched, updated.
  /// - Throws: `RecordError` when the record's keys would be one column (`RecordNames`).
  func record(_ value: JSONValue, number: Int, sightings: inout FromSightings) throws -> Record {
    if let columns {
      let declared: Record = columns.enumerated().map { i, column in
        let found: JSONValue?
        if case .json(let pointer)? = column.from {
          found = pointer.resolve(in: value)
          if found != nil {
            sightings.matched.insert(i)
          } else if !sightings.matched.contains(i), sightings.near[i] == nil {
            sightings.near[i] = pointer.nearSpelling(in: value)
          }
        } else if case .object(let pairs) = value {
          found = pairs.first { IdentifierKey.sameBytes($0.key, column.name) }?.value
        } else {
          found = nil
        }
        return (column.name, found.map { self.value(column.name, $0) } ?? .null)
      }
      guard keepingExtra, case .object(let pairs) = value else { return declared }
      // A member is named by a column's name, or by the first token of its `from`.
      let named = columns.map { column in
        if case .json(let pointer)? = column.from { pointer.tokens.first ?? "" } else { column.name }
      }
      let extra = pairs.filter { pair in
        !named.contains { IdentifierKey.sameBytes($0, pair.key) } && !columns.contains { IdentifierKey($0.name) == IdentifierKey(pair.key) }
      }
      try RecordNames.check(extra.map { ($0.key, "key") }, record: number)
      return declared + extra.map { ($0.key, self.value($0.key, $0.value)) }
    }
    if case .object(let pairs) = value {
      try RecordNames.check(pairs.map { ($0.key, "key") }, record: number)
      return pairs.map { ($0.key, self.value($0.key, $0.value)) }
    }
    return [("value", self.value("value", value))]
  }

  /// The record value of `json` in the column `name`: as written at `cursorColumn`.
  func value(_ name: String, _ json: JSONValue) -> RecordValue {
    guard name == cursorColumn else { return RecordValue(json: json) }
    return RecordValue(writtenJSON: json)
  }
}

/// The parser's position and what it is building, behind `JSONEvents`' handler.
private final class JSONScanState: JSONEventHandler {
  /// An open array or object, and where inside it the parser is.
  struct Frame {
    var isArray: Bool
    /// The index of the next element (arrays).
    var index = 0
    /// The key of the current member (objects).
    var key = ""
  }

  /// A container of the record being captured.
  struct Builder {
    var isArray: Bool
    var items: [JSONValue] = []
    var pairs: [(key: String, value: JSONValue)] = []
    var key = ""
  }

  let reader: JSONRecordReader
  let each: (Record) throws -> Void
  var frames: [Frame] = []
  var builders: [Builder] = []
  /// `frames.count` inside the records array, while the parser is in it.
  var recordsArrayDepth: Int?
  var foundRecords = false
  var summary = AnswerSummary()
  var failure: (any Error)?
  /// What the declared columns' `from` pointers matched.
  var sightings = JSONRecordReader.FromSightings()
  /// The member names of the objects each probe (and the records selector) looks in, by
  /// how many of its tokens select the object (each token, or a member a small edit away),
  /// for "did you mean" when it finds nothing (`JSONPointer.nearSpelling(members:)`); at
  /// most `memberLimit` each, and its own token.
  var members: [JSONPointer: [Int: [String]]] = [:]
  static let memberLimit = 1000
  /// The probes and the records selector, for `members`.
  let watched: [JSONPointer]
  /// Where a container opened past `JSONValue.maxDepth` ("record 3 is"), which stopped the
  /// parse: deeper values could not be held, written or freed without overflowing the stack.
  var tooDeep: String?

  init(reader: JSONRecordReader, each: @escaping (Record) throws -> Void) {
    self.reader = reader
    self.each = each
    watched = (reader.probes + (reader.records.map { [$0] } ?? [])).filter { !$0.tokens.isEmpty }
  }

  /// Whether the value about to start is at `tokens`.
  func isAt(_ tokens: [String]) -> Bool { isAt(tokens[...], frames[...]) }

  /// Whether `frames` lead to `tokens`.
  func isAt(_ tokens: ArraySlice<String>, _ frames: ArraySlice<Frame>) -> Bool {
    guard tokens.count == frames.count else { return false }
    for (frame, token) in zip(frames, tokens) {
      if frame.isArray {
        guard JSONPointer.index(token) == frame.index else { return false }
      } else if !IdentifierKey.sameBytes(frame.key, token) {
        return false
      }
    }
    return true
  }

  /// Whether `frames` lead to `tokens`, or to where a near spelling of them would
  /// (`EditDistance.closest`), for `members`.
  func isNear(_ tokens: ArraySlice<String>, _ frames: ArraySlice<Frame>) -> Bool {
    guard tokens.count == frames.count else { return false }
    return zip(frames, tokens).allSatisfy { frame, token in
      frame.isArray
        ? JSONPointer.index(token) == frame.index
        : IdentifierKey.sameBytes(frame.key, token) || EditDistance.closest(to: token, among: [frame.key]) != nil
    }
  }

  /// Called before every value; false stops the parse.
  func begin(container isArray: Bool?, scalar: JSONValue?) -> Bool {
    for probe in reader.probes where summary.values[.json(probe)] == nil && isAt(probe.tokens) {
      if let scalar {
        switch scalar {
        case .null: summary.values[.json(probe)] = .null
        case .string(let s): summary.values[.json(probe)] = .text(s)
        default: summary.values[.json(probe)] = .scalar(scalar.json)
        }
      } else {
        summary.values[.json(probe)] = .structure(isArray == true ? "a list" : "an object")
      }
    }
    guard builders.isEmpty else { return true }
    if let depth = recordsArrayDepth, depth == frames.count {
      // A value is a container (`isArray`) or a scalar.
      if let isArray {
        builders.append(Builder(isArray: isArray))
      } else if let scalar {
        return emit(scalar)
      }
      return true
    }
    if let records = reader.records, !foundRecords, isAt(records.tokens) {
      foundRecords = true
      switch (isArray, scalar) {
      case (true?, _): recordsArrayDepth = frames.count + 1
      case (false?, _): builders.append(Builder(isArray: false))
      case (nil, .null?): break
      default:
        let kind = scalar.map { if case .string = $0 { "a string" } else { "a single value (\($0.json))" } } ?? "a value"
        return fail(RecordError("the records selector '\(records)' points at \(kind); it must point at a list or an object"))
      }
    }
    return true
  }

  func scalar(_ value: JSONValue) -> Bool {
    guard begin(container: nil, scalar: value) else { return false }
    if !builders.isEmpty { add(value) }
    finishValue()
    return true
  }

  func start(isArray: Bool) -> Bool {
    // `begin` pushes the builder of a record's outermost container; nested ones are pushed here.
    let capturing = !builders.isEmpty
    guard frames.count < JSONValue.maxDepth else {
      tooDeep = capturing ? "record \(summary.records + 1) is" : "the answer is"
      return false
    }
    guard begin(container: isArray, scalar: nil) else { return false }
    if capturing { builders.append(Builder(isArray: isArray)) }
    frames.append(Frame(isArray: isArray))
    return true
  }

  func key(_ key: String) -> Bool {
    frames[frames.count - 1].key = key
    // A member of an object a watched pointer looks in (the object is the innermost frame).
    let depth = frames.count - 1
    for pointer in watched where depth < pointer.tokens.count && isNear(pointer.tokens.prefix(depth), frames.dropLast()) {
      let names = members[pointer]?[depth] ?? []
      if names.count < JSONScanState.memberLimit || key == pointer.tokens[depth] {
        members[pointer, default: [:]][depth, default: []].append(key)
      }
    }
    if !builders.isEmpty { builders[builders.count - 1].key = key }
    return true
  }

  func end() -> Bool {
    let frame = frames.removeLast()
    if let depth = recordsArrayDepth, frame.isArray, depth == frames.count + 1 {
      recordsArrayDepth = nil
    }
    if !builders.isEmpty {
      let builder = builders.removeLast()
      let value: JSONValue = builder.isArray ? .array(builder.items) : .object(builder.pairs)
      if builders.isEmpty {
        guard emit(value) else { return false }
      } else {
        add(value)
      }
    }
    finishValue()
    return true
  }

  private func add(_ value: JSONValue) {
    let top = builders.count - 1
    if builders[top].isArray {
      builders[top].items.append(value)
    } else {
      builders[top].pairs.append((builders[top].key, value))
    }
  }

  private func finishValue() {
    if let top = frames.indices.last, frames[top].isArray { frames[top].index += 1 }
  }

  private func emit(_ value: JSONValue) -> Bool {
    summary.records += 1
    do {
      try each(reader.record(value, number: summary.records, sightings: &sightings))
      return true
    } catch {
      return fail(error)
    }
  }

  private func fail(_ error: any Error) -> Bool {
    failure = error
    return false
  }
}
