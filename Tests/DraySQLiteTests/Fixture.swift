import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation

/// A store in a fresh folder, with answers written as files and loaded.
final class StoreFixture {
  let folder = TemporaryDirectory()
  let store: Store
  private var answers = 0

  init() throws {
    store = try Store(path: folder.path + "/db.sqlite")
  }

  /// Writes `json` as an answer file and loads it.
  @discardableResult
  func load(
    _ scheme: ResourceScheme, _ json: String, delta: Bool = false, params: JSONValue = .object([]),
    info: AnswerInfo = .init()
  ) throws -> LoadResult {
    answers += 1
    let file = try folder.write("answer-\(answers).json", json)
    return try store.write { try $0.load(file: file, scheme: scheme, params: params, delta: delta, info: info, cancellation: nil) }
  }

  /// The load's error, or nil when it succeeded.
  func loadError(_ scheme: ResourceScheme, _ json: String, delta: Bool = false) throws -> String? {
    do {
      try load(scheme, json, delta: delta)
      return nil
    } catch let error as LoadError {
      return error.description
    }
  }

  /// Every row of `sql`, values only.
  func rows(_ sql: String) throws -> [[SQLValue]] {
    try store.database.rows(sql).map(\.values)
  }
}

extension ResourceScheme {
  /// A one-table resource; cached (rows start with a row id) when `lifetime` is set.
  static func table(_ columns: [(String, String)], resource: String = "R", table: String = "t", lifetime: Int? = nil)
    -> ResourceScheme
  {
    ResourceScheme(
      name: resource, lifetime: lifetime,
      outputs: [.init(name: table, columns: columns.map { .init(name: $0.0, type: $0.1) })])
  }
}
