internal import DrayModel

/// Reading `report.openlineage` and `report.otlp` (docs/report.md, "OpenLineage" and
/// "OpenTelemetry traces").
extension ManifestValidator {
  /// `report.openlineage`: `url` (an http:// or https:// address) or `path` (a file), and
  /// `namespace`. A password in the URL is a secret.
  mutating func readOpenLineage(_ node: YAMLNode) -> LineageSettings? {
    let key = "report.openlineage"
    guard let f = reader.fields(node, key, keys: ManifestSchema.openLineage) else { return nil }
    let namespace = f["namespace"].flatMap { reader.nonEmptyString($0, "\(key).namespace") } ?? LineageSettings.defaultNamespace
    switch (f["url"], f["path"]) {
    case (let urlNode?, nil):
      guard let url = readExportURL(urlNode, "\(key).url", example: "http://marquez:5000/api/v1/lineage") else { return nil }
      return LineageSettings(destination: .url(url), namespace: namespace)
    case (nil, let pathNode?):
      guard let path = reader.nonEmptyString(pathNode, "\(key).path"),
        fileShaped(pathNode, "\(key).path", path, what: "OpenLineage events file", example: "lineage.jsonl")
      else { return nil }
      return LineageSettings(destination: .path(path), namespace: namespace)
    case (_?, let pathNode?):
      reader.error(pathNode.location, "'\(key)' takes 'url' (a lineage server) or 'path' (a file), not both")
    case (nil, nil):
      reader.error(node.location, "missing required key 'url' (a lineage server) or 'path' (a file) in \(key)")
    }
    return nil
  }

  /// `report.otlp`: present turns export on, even empty (`otlp: {}` or `otlp:`), the
  /// environment's `OTEL_EXPORTER_OTLP_*` filling in what it leaves out. Every header value
  /// is a secret.
  mutating func readOTLP(_ node: YAMLNode) -> OTLPSettings? {
    let key = "report.otlp"
    if let s = node.scalar, s.style == .plain, CoreSchema.resolve(s.text) == .null { return OTLPSettings() }
    guard let f = reader.fields(node, key, keys: ManifestSchema.otlp) else { return nil }
    var settings = OTLPSettings()
    if let endpointNode = f["endpoint"] {
      guard let endpoint = readExportURL(endpointNode, "\(key).endpoint", example: "http://collector:4318") else { return nil }
      settings.endpoint = endpoint
    }
    if let headersNode = f["headers"] {
      guard case .mapping(let pairs) = headersNode.content else {
        reader.error(
          headersNode.location, "'\(key).headers' must be a mapping of header names to values, found \(headersNode.kindDescription)")
        return nil
      }
      for pair in pairs {
        let name = pair.key.scalar?.text ?? ""
        if let problem = Self.headerNameProblem(name) {
          reader.error(pair.key.location, problem)
          return nil
        }
        guard let value = reader.string(pair.value, "\(key).headers.\(name)", secret: true) else { return nil }
        if let problem = Self.headerValueProblem(value, path: "\(key).headers.\(name)") {
          reader.error(pair.value.location, problem)
          return nil
        }
        settings.headers.append(HTTPHeader(name, value, secret: true))
      }
    }
    return settings
  }

  /// An http:// or https:// address for an export; a password in it is a secret, and so is
  /// the value of each query parameter named as a credential (`CredentialName`:
  /// `?api_key=...`, `&token=...`), since an export takes no `auth`.
  private mutating func readExportURL(_ node: YAMLNode, _ path: String, example: String) -> String? {
    guard let url = reader.nonEmptyString(node, path) else { return nil }
    let lower = url.lowercased()
    let scheme = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
    let authority = url.dropFirst(scheme).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
      reader.redactor.add(String(authority[authority.index(after: colon)..<at]))
    }
    for value in CredentialName.queryValues(in: url) { reader.redactor.add(value) }
    guard scheme > 0, !authority.isEmpty, !url.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) else {
      reader.error(node.location, "'\(path)' must be an http:// or https:// address such as \(example), found '\(url)'")
      return nil
    }
    if let problem = Self.authorityProblem(url, path: path) {
      reader.error(node.location, problem)
      return nil
    }
    return url
  }
}
