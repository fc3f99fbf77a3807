public import DrayModel

/// What a store keeps for an `incremental` step (`CursorLedger`).
public struct CursorEntry: Sendable, Equatable {
  /// The cursor the next run sends, as the API gave it; nil before any is kept.
  public var value: JSONValue?
  /// The highest cursor of the pages staged and not yet published.
  public var staged: JSONValue?
  /// The staged pages started again from `initial` (`--fresh`) and replace the table.
  public var fresh: Bool
  /// The digests (`RecordDigest`, lowercase hex SHA-256) of the records at `value` that the
  /// runs which kept it handled (appended, merged, set aside or trimmed): the next run
  /// passes over a record at `value` whose digest is here (docs/http.md, "Cursor
  /// boundaries"). Nil when unknown: kept by a dray without it, or more records shared the
  /// value than `limit`.
  public var boundary: Set<String>?
  /// The digests of the records at `staged` among the pages staged; nil when unknown.
  public var stagedBoundary: Set<String>?

  /// The most digests a set keeps (`boundary`, `stagedBoundary`): 64 bytes of hex each,
  /// about 6.5 MB of text at the limit. Past it the set is dropped (unknown).
  public static let limit = 100_000

  public init(
    value: JSONValue? = nil, staged: JSONValue? = nil, fresh: Bool = false, boundary: Set<String>? = nil,
    stagedBoundary: Set<String>? = nil
  ) {
    self.value = value
    self.staged = staged
    self.fresh = fresh
    self.boundary = boundary
    self.stagedBoundary = stagedBoundary
  }

  /// The entry of step `stepID` from the columns of its `_dray_http_cursors` row: `value`
  /// and `staged` as JSON text, `boundary` and `stagedBoundary` as `storedDigests` text
  /// (nil for NULL, or for a column an older dray did not create).
  /// - Throws: `CursorLedgerError` for text that is not JSON.
  public init(
    storedValue: String?, staged: String?, fresh: Bool, stepID: String, boundary: String? = nil, stagedBoundary: String? = nil
  ) throws {
    func json(_ text: String?) throws -> JSONValue? {
      guard let text else { return nil }
      do {
        return try JSONValue(parsing: text)
      } catch {
        throw CursorLedgerError(
          message:
            "the kept cursor of step \(stepID) in _dray_http_cursors is not JSON (\(text)); run with --fresh to start again from 'initial'")
      }
    }
    self.init(
      value: try json(storedValue), staged: try json(staged), fresh: fresh, boundary: CursorEntry.digests(boundary),
      stagedBoundary: CursorEntry.digests(stagedBoundary))
  }

  /// A set of digests as stored: sorted, separated by one space (`""` for none); nil for an
  /// unknown set.
  public static func storedDigests(_ digests: Set<String>?) -> String? {
    digests.map { $0.sorted().joined(separator: " ") }
  }

  /// The set `storedDigests` wrote.
  public static func digests(_ stored: String?) -> Set<String>? {
    stored.map { Set($0.split(separator: " ").map(String.init)) }
  }
}

/// A kept cursor dray cannot read.
public struct CursorLedgerError: Error, CustomStringConvertible {
  public var message: String
  public var description: String { message }
  public init(message: String) { self.message = message }
}
