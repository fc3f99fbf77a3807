public import DrayModel

/// What a store keeps for an `incremental` step (`CursorLedger`).
public struct CursorEntry: Sendable, Equatable {
  /// The cursor the next run sends, as the API gave it; nil before any is kept.
  public var value: JSONValue?
  /// The highest cursor of the pages staged and not yet published.
  public var staged: JSONValue?
  /// The staged pages started again from `initial` (`--fresh`) and replace the table.
  public var fresh: Bool

  public init(value: JSONValue? = nil, staged: JSONValue? = nil, fresh: Bool = false) {
    self.value = value
    self.staged = staged
    self.fresh = fresh
  }

  /// The entry of step `stepID` from the columns of its `_dray_http_cursors` row: `value`
  /// and `staged` as JSON text (nil for NULL).
  /// - Throws: `CursorLedgerError` for text that is not JSON.
  public init(storedValue: String?, staged: String?, fresh: Bool, stepID: String) throws {
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
    self.init(value: try json(storedValue), staged: try json(staged), fresh: fresh)
  }
}

/// A kept cursor dray cannot read.
public struct CursorLedgerError: Error, CustomStringConvertible {
  public var message: String
  public var description: String { message }
  public init(message: String) { self.message = message }
}
