internal import DrayModel

/// Placeholders and credentials (docs/partitions.md: "A credential is sent as written and
/// takes no placeholder").
extension ManifestValidator {
  /// The keys under an `http` step's `auth` whose values are credentials, besides the names
  /// `CredentialName` gives (`password`, `client_secret`, `refresh_token`, ...).
  static let credentialAuthKeys: Set<String> = ["bearer", "value"]

  /// Refuses a placeholder the step's partitions give (`{region}`, `{window_start}`) written
  /// in a credential of a partitioned `http` step: a credential is sent as written, so the
  /// text `{region}` would go out as it is, and, being a secret, mask the placeholder's name
  /// in every message. Only what the manifest itself writes is read: a `${...}` reference is
  /// left out, so a password that holds braces (from a variable or a file) is no placeholder.
  /// - Parameters:
  ///   - kind: the step's `http` mapping; `path`: its dotted path, for messages.
  ///   - given: the names the partitions give; nil: not known before the run (`rows`), any.
  mutating func checkCredentialPlaceholders(_ kind: YAMLNode, _ path: String, given: [String]?) {
    func walk(_ node: YAMLNode, _ at: String, credential: Bool) {
      switch node.content {
      case .mapping(let pairs):
        for pair in pairs {
          let key = pair.key.scalar?.text ?? ""
          let inAuth = at.hasPrefix("auth")
          let isCredential =
            credential || CredentialName.isCredential(key) || (inAuth && Self.credentialAuthKeys.contains(key))
            || (at == "headers" && HTTPHeader.isSecretName(key))
          walk(pair.value, at.isEmpty ? key : "\(at).\(key)", credential: isCredential)
        }
      case .sequence(let items):
        for (i, item) in items.enumerated() { walk(item, "\(at)[\(i)]", credential: credential) }
      case .scalar(let scalar):
        guard credential, let names = try? Placeholders.names(in: Self.withoutReferences(scalar.text)) else { return }
        let found = names.filter { given?.contains($0) ?? true }
        guard let name = found.first else { return }
        reader.error(
          node.location,
          "'\(path).\(at)': a credential is sent as written and takes no placeholder; {\(name)} would be sent as the text {\(name)}. "
            + "Give each partition's value in a setting that is no credential (path, query, headers, body), or one credential for all")
      }
    }
    guard case .mapping(let pairs) = kind.content else { return }
    for pair in pairs where ["query", "headers", "body", "auth"].contains(pair.key.scalar?.text ?? "") {
      walk(pair.value, pair.key.scalar?.text ?? "", credential: false)
    }
  }

  /// `text` without its `${...}` references and `$$` escapes (`Interpolator`): what the
  /// manifest writes itself.
  static func withoutReferences(_ text: String) -> String {
    guard text.contains("$") else { return text }
    var out = ""
    var rest = Substring(text)
    while let dollar = rest.firstIndex(of: "$") {
      out += rest[..<dollar]
      let after = rest.index(after: dollar)
      if after < rest.endIndex, rest[after] == "$" {
        rest = rest[rest.index(after: after)...]
      } else if after < rest.endIndex, rest[after] == "{", let close = Interpolator.closingBrace(rest[rest.index(after: after)...]) {
        rest = rest[rest.index(after: close)...]
      } else {
        out += "$"
        rest = rest[after...]
      }
    }
    return out + rest
  }

  /// The placeholders of every partitioned step as dray writes them (`{region}`,
  /// `{window_start}`), and `{page}`: dray's own words, which masking never alters
  /// (`Redactor.keep(_:)`), even when a secret's value is one of them.
  static func placeholderWords(_ steps: [Step]) -> [String] {
    var names: Set<String> = ["page"]
    for step in steps {
      switch step.partitions?.source {
      case .list(let list)?: for partition in list { names.formUnion(partition.values.map(\.name)) }
      case .window?: names.formUnion(Partitions.Window.names)
      case .rows?, nil: break
      }
    }
    return names.sorted().map { "{\($0)}" }
  }
}
