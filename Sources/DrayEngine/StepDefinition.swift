public import DrayModel

extension Step {
  /// The step's resolved definition as JSON: its kind and options, without retry and
  /// timeouts (changing how hard a step tries does not change what it does).
  public var definition: JSONValue {
    .object([("id", .string(id)), ("kind", .string(kindName)), ("options", kind.options)])
  }

  /// SHA-256 of the canonical JSON of `definition` and the job's database path: equal
  /// fingerprints mean a finished step need not run again.
  public func fingerprint(in manifest: Manifest) -> String {
    let database = manifest.database.map { manifest.resolve($0.path) } ?? ""
    return SHA256.hex(JSONValue.object([("step", definition), ("database", .string(database))]).canonicalJSON)
  }
}

extension StepKind {
  /// The kind's options as JSON, in manifest key names.
  public var options: JSONValue {
    func opt(_ pairs: [(String, JSONValue?)]) -> JSONValue {
      .object(pairs.compactMap { pair in pair.1.map { (key: pair.0, value: $0) } })
    }
    switch self {
    case .schemes(let s):
      return opt([("resources", s.resources.map { .array($0.map { .string($0) }) })])
    case .tableStream(let t):
      return opt([
        ("resource", .string(t.resource)), ("params", t.params), ("delta", .bool(t.delta)), ("transaction", .bool(t.transaction)),
      ])
    case .table(let t):
      return opt([
        ("resource", .string(t.resource)), ("params", t.params), ("output", .string(t.output)), ("format", .string(t.format.rawValue)),
        ("transaction", .bool(t.transaction)),
      ])
    case .request(let r):
      return opt([
        ("resource", .string(r.resource)), ("params", r.params), ("output", r.output.map { .string($0) }),
        ("transaction", .bool(r.transaction)),
      ])
    case .files(let f):
      return opt([
        ("connection", .string(f.connection)), ("action", .string(f.action.rawValue)), ("path", .string(f.path)),
        ("local", f.local.map { .string($0) }), ("missing_ok", .bool(f.missingOK)),
      ])
    case .sql(let s):
      return opt([("sql", .string(s.sql))])
    case .query(let q):
      let expect = JSONValue.object(
        q.expect.map { e in
          (
            key: e.column,
            value: opt([("min", e.min.map { .number("\($0)") }), ("max", e.max.map { .number("\($0)") }), ("equals", e.equals)])
          )
        })
      return opt([
        ("sql", .string(q.sql)), ("output", q.output.map { .string($0) }), ("format", .string(q.format.rawValue)), ("expect", expect),
      ])
    case .parallel(let p):
      return opt([("max", .integer(Int64(p.max))), ("steps", .array(p.steps.map(\.definition)))])
    }
  }
}
