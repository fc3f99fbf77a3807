internal import Foundation

/// `partitions:` of an `http` or `table_stream` step: the partitions the step runs over,
/// each a set of placeholder values its settings take (`Placeholders`), each with its own
/// checkpoint (docs/partitions.md).
public struct Partitions: Sendable, Hashable {
  /// Where the partitions come from: exactly one source.
  public enum Source: Sendable, Hashable {
    /// `list`: the mappings given, in order.
    case list([Partition])
    /// `rows`: a query on the job's database (`{{ table ... }}` as in `sql` steps), one
    /// partition per row; the column names are the placeholder names.
    case rows(String)
    /// `window`: consecutive half-open windows `[window_start, window_end)`.
    case window(Window)

    /// This source's manifest key.
    public var kind: SourceKind {
      switch self {
      case .list: .list
      case .rows: .rows
      case .window: .window
      }
    }
  }

  /// The sources by their manifest keys; `partitions:` holds exactly one of them.
  public enum SourceKind: String, Sendable, Hashable, CaseIterable {
    case list, rows, window
  }

  /// `concurrency` when not given: one partition at a time.
  public static let defaultConcurrency = 1
  /// `lease` when not given.
  public static let defaultLease = Duration.seconds(30)

  /// The step kinds that take `partitions:`.
  public static let stepKinds: [StepKind.Name] = [.tableStream, .http]

  /// `window: { start, end, every }`: `start` and `end` are dates (`2024-01-01`) or RFC 3339
  /// instants, kept in the form given (`windows()` writes its bounds in that form).
  public struct Window: Sendable, Hashable {
    public var start: String
    public var end: String
    public var every: Every

    public init(start: String, end: String, every: Every) {
      self.start = start
      self.end = end
      self.every = every
    }

    /// The placeholder names a window gives.
    public static let names = ["window_start", "window_end"]
  }

  /// A window's length: whole days (`7d`, `2w` as 14 days) or calendar months (`1mo`).
  public enum Every: Sendable, Hashable {
    case days(Int)
    case months(Int)

    /// The `every` `text` writes: a whole number of days (`7d`), weeks (`2w`, read as 14
    /// days) or calendar months (`1mo`), with no sign, space or fraction; nil otherwise
    /// (zero included: `0d` reads as `.days(0)`, for the caller to refuse by name). A count
    /// beyond 100 000 units reads as nil.
    public init?(parsing text: String) {
      let units: [(suffix: String, make: (Int) -> Every)] = [("mo", { .months($0) }), ("w", { .days($0 * 7) }), ("d", { .days($0) })]
      for unit in units where text.hasSuffix(unit.suffix) {
        let digits = text.dropLast(unit.suffix.count)
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let count = Int(digits),
          count <= 100_000
        else { return nil }
        self = unit.make(count)
        return
      }
      return nil
    }

    /// Whether this is no length at all (`0d`, `0mo`).
    public var isZero: Bool {
      switch self {
      case .days(let n), .months(let n): n == 0
      }
    }

    /// As the manifest writes it: `14d` as `2w`, `7d`, `1mo`.
    public var formatted: String {
      switch self {
      case .days(let n) where n > 0 && n % 7 == 0: "\(n / 7)w"
      case .days(let n): "\(n)d"
      case .months(let n): "\(n)mo"
      }
    }
  }

  public var source: Source
  /// How many partitions run at once in one runner (`concurrency`, default 1).
  public var concurrency: Int
  /// How long a claimed partition stays claimed without its runner renewing the claim
  /// (`lease`, default 30 seconds).
  public var lease: Duration
  /// Where `partitions:` starts in the manifest.
  public var location: SourceLocation

  public init(
    source: Source, concurrency: Int = Partitions.defaultConcurrency, lease: Duration = Partitions.defaultLease, location: SourceLocation
  ) {
    self.source = source
    self.concurrency = concurrency
    self.lease = lease
    self.location = location
  }
}

/// One partition: its placeholder values, by name, in the order given.
public struct Partition: Sendable, Hashable {
  public var values: [(name: String, value: String)] {
    get { zip(names, texts).map { ($0, $1) } }
    set {
      names = newValue.map(\.name)
      texts = newValue.map(\.value)
    }
  }
  private var names: [String]
  private var texts: [String]

  public init(_ values: [(name: String, value: String)]) {
    names = values.map(\.name)
    texts = values.map(\.value)
  }

  /// The value of placeholder `name`, or nil.
  public subscript(name: String) -> String? {
    names.firstIndex(of: name).map { texts[$0] }
  }

  /// `region=eu, day=2024-01-01`: the values as the report and messages show them.
  public var label: String {
    values.map { "\($0.name)=\($0.value)" }.joined(separator: ", ")
  }
}
