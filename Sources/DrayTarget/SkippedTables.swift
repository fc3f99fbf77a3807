/// The tables an answer held that the resource's scheme does not list, as a load reports
/// them: the first `namedLimit` distinct names in the order met, and how many table objects
/// after them were skipped too. Bounded whatever the answer holds: a server may send
/// thousands of table objects, and each would otherwise cost a note in the report and a look
/// through every name met before it (time quadratic in their number).
public struct SkippedTables: Sendable, Equatable {
  /// How many names are kept: 10.
  public static let namedLimit = 10
  /// The first distinct names, in order of appearance.
  public private(set) var names: [String] = []
  /// Table objects skipped after the first `namedLimit` names (one whose name is met again
  /// counts again).
  public private(set) var more = 0

  public init() {}

  /// Notes that the answer's table `name` was skipped.
  public mutating func add(_ name: String) {
    guard !names.contains(name) else { return }
    if names.count < Self.namedLimit { names.append(name) } else { more += 1 }
  }
}
