internal import DrayModel

/// Reading an `http` step's `auth.login` (docs/auth.md, "Login flows").
extension ManifestValidator {
  /// The login settings at `node`; the values of the body's secret fields
  /// (`Login.isSecretField`) join the redactor.
  mutating func readLogin(_ node: YAMLNode, _ path: String) -> Login? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpLogin) else { return nil }
    var ok = true
    let url = f.required("url", &reader).flatMap { readBaseURL($0, f.path("url")) }
    let body = f.required("body", &reader).flatMap { readBody($0, f.path("body"), isSecret: Login.isSecretField) }
    let token = f.required("token", &reader).flatMap { readPointer($0, f.path("token")) }
    var header = Login.defaultHeader
    if let node = f["header"] {
      if let name = reader.string(f, "header") {
        if let problem = Self.headerNameProblem(name) {
          reader.error(node.location, problem)
          ok = false
        } else {
          header = name
        }
      } else {
        ok = false
      }
    }
    var prefix = Login.defaultPrefix
    if let node = f["prefix"] {
      if let text = reader.string(f, "prefix") {
        if let problem = Self.headerValueProblem(text, path: f.path("prefix")) {
          reader.error(node.location, problem)
          ok = false
        }
        prefix = text
      } else {
        ok = false
      }
    }
    let expiresIn = f["expires_in"].flatMap { readPointer($0, f.path("expires_in")) }
    if f["expires_in"] != nil && expiresIn == nil { ok = false }
    guard ok, let url, let body, let token else { return nil }
    let login = Login(url: url, body: body, token: token, header: header, prefix: prefix, expiresIn: expiresIn)
    for secret in login.secrets { reader.redactor.add(secret) }
    if let earlier = logins[login.key], earlier.settings != login {
      reader.error(
        node.location,
        "'\(path)' names the url and user of '\(earlier.path)' with other settings; steps that name one login share one "
          + "session token, so give them the same body, token, header, prefix and expires_in (a YAML anchor keeps them equal)")
      return nil
    }
    logins[login.key] = (login, path)
    return login
  }
}
