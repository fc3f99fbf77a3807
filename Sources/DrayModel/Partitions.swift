public import Foundation

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
  }

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
  }

  public var source: Source
  /// How many partitions run at once in one runner (`concurrency`, default 1).
  public var concurrency: Int
  /// How long a claimed partition stays claimed without its runner renewing the claim
  /// (`lease`, default 30 seconds).
  public var lease: Duration
  /// Where `partitions:` starts in the manifest.
  public var location: SourceLocation

  public init(source: Source, concurrency: Int = 1, lease: Duration = .seconds(30), location: SourceLocation) {
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
