public import DrayModel

extension ManifestSchema {
  /// The manifest's JSON Schema (draft-07, the newest draft the YAML language server fully
  /// supports), derived from the declaration above.
  ///
  /// It accepts what `dray` accepts: string keys take any scalar (the YAML 1.2 core schema
  /// reads `0755` as a number, dray as the text `0755`), and typed keys also take a
  /// `${...}` reference, which is resolved when the manifest loads. Checks that need the
  /// environment or other keys (a missing variable, a `{{ table }}` naming a resource no
  /// step loads) are `dray validate`'s alone.
  public static var jsonSchema: JSONValue {
    .object([
      ("$schema", .string("http://json-schema.org/draft-07/schema#")),
      ("title", .string("dray manifest, version \(Manifest.supportedVersion)")),
      ("description", .string("A dray job: where the data lives, how to sign in, what to fetch, how hard to retry, which SQL to run.")),
      ("type", .string("object")),
      ("properties", properties(top)),
      ("required", .array(top.filter(\.required).map { .string($0.name) })),
      // `x-` keys hold anchors for aliases and merge keys; dray ignores them.
      ("patternProperties", .object([("^x-", .object([]))])),
      ("additionalProperties", .bool(false)),
      (
        "definitions",
        .object([
          ("step", stepSchema(kinds: stepKinds, nested: false)),
          ("parallelMember", stepSchema(kinds: stepKinds.filter { $0.name != StepKind.Name.parallel.rawValue }, nested: true)),
          (
            "interpolated",
            .object([
              ("type", .string("string")), ("pattern", .string(#"\$\{"#)),
              ("description", .string("A ${NAME}, ${NAME:-default} or ${file:PATH} reference, resolved when the manifest loads.")),
            ])
          ),
        ])
      ),
    ])
  }

  /// `jsonSchema` as indented JSON text, ending with a newline.
  public static var jsonSchemaText: String {
    jsonSchema.indentedJSON + "\n"
  }

  /// - Parameter overriding: for the keys of an override block, the block they default to;
  ///   their own defaults are then not the effective ones and are left out.
  private static func properties(_ keys: [Key], overriding: String? = nil) -> JSONValue {
    .object(keys.map { (key: $0.name, value: schema(for: $0, overriding: overriding)) })
  }

  private static func schema(for key: Key, overriding: String?) -> JSONValue {
    var summary = key.summary
    if let overriding { summary += " Default: the value of \(overriding).\(key.name)." }
    var pairs: [(key: String, value: JSONValue)] = [("description", .string(summary))]
    if let value = key.defaultValue, overriding == nil { pairs.append(("default", value)) }
    guard case .object(let own) = schema(key.value, overriding: key.overrides) else { return .object(pairs) }
    return .object(pairs + own)
  }

  private static let interpolated = JSONValue.object([("$ref", .string("#/definitions/interpolated"))])

  /// A typed value, or a `${...}` reference resolved at load time.
  private static func orInterpolated(_ pairs: [(key: String, value: JSONValue)]) -> JSONValue {
    .object([("anyOf", .array([.object(pairs), interpolated]))])
  }

  private static func schema(_ value: Value, overriding: String? = nil) -> JSONValue {
    switch value {
    case .string(let nonEmpty):
      var pairs: [(key: String, value: JSONValue)] = [("type", .array([.string("string"), .string("number"), .string("boolean")]))]
      if nonEmpty { pairs.append(("minLength", .integer(1))) }
      return .object(pairs)
    case .integer(let range):
      return orInterpolated([
        ("type", .string("integer")), ("minimum", .integer(Int64(range.lowerBound))), ("maximum", .integer(Int64(range.upperBound))),
      ])
    case .number:
      return orInterpolated([("type", .string("number"))])
    case .boolean:
      return orInterpolated([("type", .string("boolean"))])
    case .duration:
      return .object([
        ("type", .string("string")),
        ("pattern", .string(#"^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ms|s|m|h|d|w)|.*\$\{.*)$"#)),
        ("examples", .array(["500ms", "30s", "1.5s", "5m", "1h", "7d"].map { .string($0) })),
      ])
    case .period:
      return .object([
        ("type", .string("string")),
        ("pattern", .string(#"^([0-9]+(d|w|mo)|.*\$\{.*)$"#)),
        ("examples", .array(["1d", "7d", "2w", "1mo", "3mo"].map { .string($0) })),
      ])
    case .choice(let words):
      return orInterpolated([("enum", .array(words.map { .string($0) }))])
    case .list(let inner):
      return .object([("type", .string("array")), ("items", schema(inner))])
    case .mapping(let keys, let rules):
      var pairs: [(key: String, value: JSONValue)] = [
        ("type", .string("object")), ("properties", properties(keys, overriding: overriding)),
      ]
      let required = keys.filter(\.required).map { JSONValue.string($0.name) }
      if !required.isEmpty { pairs.append(("required", .array(required))) }
      pairs.append(("additionalProperties", .bool(false)))
      if !rules.isEmpty { pairs.append(("allOf", .array(rules.map(schema)))) }
      return .object(pairs)
    case .dictionary(let inner):
      return .object([("type", .string("object")), ("additionalProperties", schema(inner))])
    case .json:
      return .object([])
    case .jsonObject:
      return .object([("type", .string("object"))])
    case .steps(let nested):
      let item = JSONValue.object([("$ref", .string(nested ? "#/definitions/parallelMember" : "#/definitions/step"))])
      return .object([("type", .string("array")), ("minItems", .integer(1)), ("items", item)])
    case .optional(let inner):
      return .object([("anyOf", .array([.object([("type", .string("null"))]), schema(inner)]))])
    case .oneOf(let values):
      return .object([("anyOf", .array(values.map { schema($0) }))])
    case .nonEmpty(let inner):
      guard case .object(let pairs) = schema(inner, overriding: overriding) else { return schema(inner, overriding: overriding) }
      let least: (key: String, value: JSONValue) =
        pairs.contains { $0.key == "type" && $0.value == .string("array") } ? ("minItems", .integer(1)) : ("minProperties", .integer(1))
      return .object(pairs + [least])
    }
  }

  private static func schema(_ rule: Rule) -> JSONValue {
    func required(_ keys: [String]) -> JSONValue { .object([("required", .array(keys.map { .string($0) }))]) }
    switch rule {
    case .exactlyOne(let keys):
      return .object([("oneOf", .array(keys.map { required([$0]) }))])
    case .requiredWhen(let key, let when, let values):
      return .object([
        (
          "if",
          .object([
            ("properties", .object([(when, .object([("enum", .array(values.map { .string($0) }))]))])),
            ("required", .array([.string(when)])),
          ])
        ),
        ("then", required([key])),
      ])
    }
  }

  /// A step: `nested` for a member of a `parallel` group, which cannot have `partitions`;
  /// a step with `partitions` is of a kind that takes them (`Partitions.stepKinds`).
  private static func stepSchema(kinds: [Key], nested: Bool) -> JSONValue {
    let common = nested ? stepCommon.filter { $0.name != "partitions" } : stepCommon
    var pairs: [(key: String, value: JSONValue)] = [
      ("type", .string("object")),
      ("properties", properties(common + kinds)),
      ("additionalProperties", .bool(false)),
      ("oneOf", .array(kinds.map { .object([("required", .array([.string($0.name)]))]) })),
    ]
    if !nested {
      let partitioned = Partitions.stepKinds.map { JSONValue.object([("required", .array([.string($0.rawValue)]))]) }
      pairs.append(
        (
          "if", .object([("required", .array([.string("partitions")]))])
        ))
      pairs.append(("then", .object([("anyOf", .array(partitioned))])))
    }
    return .object(pairs)
  }
}
