public import DrayModel

extension Step {
  /// The step's resolved definition as JSON: its kind and options, and the source of its
  /// partitions, without retry, timeouts and the partitions' `concurrency` and `lease`
  /// (changing how hard or how fast a step works does not change what it does).
  public var definition: JSONValue {
    var pairs: [(key: String, value: JSONValue)] = [("id", .string(id)), ("kind", .string(kindName)), ("options", kind.options)]
    // Only when set, so that the fingerprints of steps without partitions stay.
    if let partitions { pairs.append(("partitions", partitions.definition)) }
    return .object(pairs)
  }

  /// SHA-256 of the canonical JSON of `definition` alone: what the runners sharing a run
  /// compare (`dray run --join`), whose database is one by construction though each may
  /// reach it by another URL (another `application_name`, host name or port).
  public var definitionDigest: String { SHA256.hex(definition.canonicalJSON) }

  /// SHA-256 of the canonical JSON of `definition` and the job's database: equal
  /// fingerprints mean a finished step need not run again.
  ///
  /// The database is the resolved SQLite path, or for `database.url` the URL without its
  /// password (wherever the password is written, it is not part of which database it is)
  /// and the schema, so that two databases, or two schemas of one, never share a
  /// fingerprint.
  public func fingerprint(in manifest: Manifest) -> String {
    let fields: [(String, JSONValue)] = [("step", definition)] + manifest.databaseIdentity.map { ($0.key, .string($0.value)) }
    return SHA256.hex(JSONValue.object(fields).canonicalJSON)
  }
}

extension Partitions {
  /// The source as JSON, in manifest key names: `{"list": [{"region": "eu"}]}`,
  /// `{"rows": "SELECT ..."}` (as written, templates and all) or
  /// `{"window": {"start": ..., "end": ..., "every": "1w"}}`.
  public var definition: JSONValue {
    switch source {
    case .list(let list):
      .object([("list", .array(list.map { partition in .object(partition.values.map { ($0.name, .string($0.value)) }) }))])
    case .rows(let sql):
      .object([("rows", .string(sql))])
    case .window(let window):
      .object([
        (
          "window",
          .object([("start", .string(window.start)), ("end", .string(window.end)), ("every", .string(window.every.formatted))])
        )
      ])
    }
  }
}

extension StepKind {
  /// A `table_stream` step's `load`: its contract and quarantine in manifest key names, each
  /// rule and bound only when given.
  static func contractDefinition(_ contract: HTTPStep.Contract, _ quarantine: HTTPStep.Quarantine) -> JSONValue {
    func object(_ pairs: [(String, JSONValue?)]) -> JSONValue { .object(pairs.compactMap { p in p.1.map { (p.0, $0) } }) }
    return object([
      (
        "contract",
        object([
          ("new_columns", contract.newColumns.map { .string($0.rawValue) }),
          ("types", contract.types == .asGiven ? nil : .string(contract.types.rawValue)),
        ])
      ),
      (
        "quarantine",
        quarantine == HTTPStep.Quarantine()
          ? nil
          : object([
            ("table", quarantine.table.map { .string($0) }), ("max_rows", quarantine.maxRows.map { .integer(Int64($0)) }),
            ("max_share", quarantine.maxShare.map { .number("\($0)") }),
          ])
      ),
    ])
  }

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
        // Only when set, so that the fingerprints of steps without them stay.
        ("writes", t.writes.map { .bool($0) }), ("expect", t.expect.isEmpty ? nil : Expectation.definition(t.expect)),
        ("load", t.contract.map { Self.contractDefinition($0, t.quarantine) }),
      ])
    case .table(let t):
      return opt([
        ("resource", .string(t.resource)), ("params", t.params), ("output", .string(t.output)), ("format", .string(t.format.rawValue)),
        ("transaction", .bool(t.transaction)), ("writes", t.writes.map { .bool($0) }),
      ])
    case .request(let r):
      return opt([
        ("resource", .string(r.resource)), ("params", r.params), ("output", r.output.map { .string($0) }),
        ("transaction", .bool(r.transaction)), ("writes", r.writes.map { .bool($0) }),
      ])
    case .files(let f):
      return opt([
        ("connection", .string(f.connection)), ("action", .string(f.action.rawValue)), ("path", .string(f.path)),
        ("local", f.local.map { .string($0) }), ("missing_ok", .bool(f.missingOK)),
      ])
    case .sql(let s):
      return opt([("sql", .string(s.sql))])
    case .query(let q):
      return opt([
        ("sql", .string(q.sql)), ("output", q.output.map { .string($0) }), ("format", .string(q.format.rawValue)),
        ("expect", Expectation.definition(q.expect)),
      ])
    case .parallel(let p):
      return opt([("max", .integer(Int64(p.max))), ("steps", .array(p.steps.map(\.definition)))])
    case .http(let h):
      return h.options
    }
  }
}

extension Expectation {
  /// Conditions as JSON, in manifest key names: `{"n": {"min": 200.0}}`.
  static func definition(_ expectations: [Expectation]) -> JSONValue {
    .object(
      expectations.map { e in
        (
          key: e.column,
          // Bounds as doubles ("200.0"), as they were first written, so fingerprints stay.
          value: .object(
            [
              ("min", e.min.map { JSONValue.number("\($0.doubleValue)") }), ("max", e.max.map { .number("\($0.doubleValue)") }),
              ("equals", e.equals),
            ].compactMap { pair in pair.1.map { (key: pair.0, value: $0) } })
        )
      })
  }
}

extension HTTPStep {
  /// `value` with the value of every key named as a credential (`QueryItem.secretNames`)
  /// replaced by `***`, at any depth: a JSON body's credentials, as a form's.
  static func maskingCredentials(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let pairs):
      .object(pairs.map { ($0.key, QueryItem($0.key, "").isSecret ? .string(Redactor.mask) : maskingCredentials($0.value)) })
    case .array(let items): .array(items.map(maskingCredentials))
    default: value
    }
  }

  /// The step's options as JSON, in manifest key names. Credentials are left out (the
  /// values of secret header fields, `HTTPHeader.isSecret`, and of secret query parameters
  /// and form fields, `QueryItem.isSecret`, show as `***`): a rotated token neither changes
  /// what the step does nor belongs in a fingerprint or a plan.
  var options: JSONValue {
    func object(_ pairs: [(String, JSONValue?)]) -> JSONValue {
      .object(pairs.compactMap { pair in pair.1.map { (key: pair.0, value: $0) } })
    }
    func items(_ items: [QueryItem]) -> JSONValue {
      .array(items.map { .array([.string($0.name), .string($0.isSecret ? Redactor.mask : $0.value)]) })
    }
    let body: JSONValue? =
      switch self.body {
      case .json(let value)?: object([("json", HTTPStep.maskingCredentials(value))])
      case .form(let fields)?: object([("form", items(fields))])
      case nil: nil
      }
    let auth: JSONValue? =
      switch self.auth {
      case .bearer?: .string("bearer")
      case .basic(let username, _)?: object([("basic", .string(username))])
      // No secret, nor the refresh token: rotating a token does not redo a finished step.
      case .oauth2(let o)?:
        object([
          (
            "oauth2",
            object([
              ("token_url", .string(o.tokenURL)), ("grant", .string(o.grant.rawValue)), ("client_id", .string(o.clientID)),
              ("scope", o.scope.map { .string($0) }), ("client_auth", .string(o.clientAuth.rawValue)),
            ])
          )
        ])
      // The user, never the password (`Login.maskedBody`).
      case .login(let l)?:
        object([
          (
            "login",
            object([
              ("url", .string(l.url)), ("body", l.maskedBody), ("token", .string(l.token.description)),
              ("header", .string(l.header)), ("prefix", .string(l.prefix)), ("expires_in", l.expiresIn.map { .string($0.description) }),
            ])
          )
        ])
      // The place, never the key.
      case .apiKey(let key)?:
        switch key.place {
        case .header(let name): object([("api_key", object([("header", .string(name))]))])
        case .query(let name): object([("api_key", object([("query", .string(name))]))])
        }
      case nil: nil
      }
    let paginate: JSONValue? =
      switch self.paginate {
      case .next(let selector)?: object([("next", .string(selector.description))])
      case .linkHeader?: object([("link_header", .bool(true))])
      case .offset(let param, let limitParam, let limit, let start)?:
        object([
          (
            "offset",
            object([
              ("param", .string(param)), ("limit_param", .string(limitParam)), ("limit", .integer(Int64(limit))),
              ("start", .integer(Int64(start))),
            ])
          )
        ])
      case .cursor(let param, let from)?: object([("cursor", object([("param", .string(param)), ("from", .string(from.description))]))])
      case .lastRecord(let param, let field)?:
        object([("cursor", object([("param", .string(param)), ("from_last_record", .string(field.description))]))])
      case .bodyCursor(let from, let body)?:
        object([("cursor", object([("from", .string(from.description)), ("body", .string(body.description))]))])
      case .page(let param, let start)?: object([("page", object([("param", .string(param)), ("start", .integer(Int64(start)))]))])
      case nil: nil
      }
    let load: JSONValue? = self.load.map { load in
      object([
        ("table", .string(load.table)), ("records", .string(load.records.description)),
        (
          "columns",
          load.columns.map { columns in
            .array(
              columns.map {
                object([("name", .string($0.name)), ("type", .string($0.type.rawValue)), ("from", $0.from.map { .string($0.description) })])
              })
          }
        ),
        ("expect", load.expect.isEmpty ? nil : Expectation.definition(load.expect)),
        // Left out at its default, so that the definitions of earlier steps stay.
        ("write", load.write == .replace ? nil : .string(load.write.rawValue)),
        ("primary_key", load.primaryKey.isEmpty ? nil : .array(load.primaryKey.map { .string($0) })),
        ("deleted", load.deleted.map { .string($0.description) }),
        // Left out at their defaults; `extra: refuse`, the old spelling, keeps its definition.
        ("extra", load.columns != nil && load.contract == HTTPStep.Contract(newColumns: .freeze) ? .string("refuse") : nil),
        (
          "contract",
          load.contract == HTTPStep.Contract() || (load.columns != nil && load.contract == HTTPStep.Contract(newColumns: .freeze))
            ? nil
            : object([
              ("new_columns", load.contract.newColumns.map { .string($0.rawValue) }),
              ("types", load.contract.types == .asGiven ? nil : .string(load.contract.types.rawValue)),
            ])
        ),
        (
          "quarantine",
          load.quarantine == HTTPStep.Quarantine()
            ? nil
            : object([
              ("table", load.quarantine.table.map { .string($0) }),
              ("max_rows", load.quarantine.maxRows.map { .integer(Int64($0)) }),
              ("max_share", load.quarantine.maxShare.map { .number("\($0)") }),
            ])
        ),
        // Left out at their defaults (false), so that the definitions of earlier steps stay.
        ("allow_empty", load.allowEmpty ? .bool(true) : nil),
        ("delete_missing", load.deleteMissing ? .bool(true) : nil),
      ])
    }
    let incremental: JSONValue? = self.incremental.map { i in
      object([
        ("cursor", .string(i.cursor.description)), ("param", .string(i.param)), ("initial", i.initial.json),
        // In hours at most (`48h`), as before durations took days, so that fingerprints stay.
        ("lag", i.lag.map { .string($0.formatted(days: false)) }),
        // Only when not the default, so that fingerprints of earlier steps stay.
        ("boundary", i.boundary == .inclusive ? nil : .string(i.boundary.rawValue)),
      ])
    }
    return object([
      ("method", .string(method.rawValue)), ("base_url", .string(baseURL)), ("path", path.map { .string($0) }),
      ("query", items(query)),
      (
        "headers",
        .array(
          headers.map {
            .array([.string($0.name), .string($0.isSecret ? Redactor.mask : $0.value)])
          })
      ),
      ("body", body), ("auth", auth),
      ("tls", object([("verify", .bool(tls.verify)), ("ca_file", tls.caFile.map { .string($0) })])),
      ("format", .string(format.rawValue)), ("output", output.map { .string($0) }), ("load", load), ("paginate", paginate),
      ("max_pages", maxPages.map { .integer(Int64($0)) }),
      ("more", more.map { .string($0.description) }),
      ("on_status", object(onStatus.map { ($0.key, .string($0.outcome.rawValue)) })),
      ("incremental", incremental),
    ])
  }
}
