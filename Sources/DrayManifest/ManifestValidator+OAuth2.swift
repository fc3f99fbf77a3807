internal import DrayModel

/// Reading an `http` step's `auth.oauth2` (docs/auth.md).
extension ManifestValidator {
  /// The OAuth 2.0 settings at `node`; its secrets (`client_secret`, `refresh_token`, and
  /// the Basic credentials of `client_auth: basic`) join the redactor.
  mutating func readOAuth2(_ node: YAMLNode, _ path: String) -> OAuth2? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpOAuth2) else { return nil }
    let tokenURL = f.required("token_url", &reader).flatMap { readBaseURL($0, f.path("token_url")) }
    let grant = reader.choice(f, "grant", as: OAuth2.Grant.self)
    let clientID = reader.string(f, "client_id", credential: true)
    let clientSecret = reader.string(f, "client_secret", secret: true)
    let refreshToken = reader.string(f, "refresh_token", secret: true)
    let scope = reader.string(f, "scope")
    let clientAuth = reader.choice(f, "client_auth", as: OAuth2.ClientAuth.self)
    var ok = tokenURL != nil && grant != nil && clientID != nil
    if f["client_secret"] != nil && clientSecret == nil { ok = false }
    if f["refresh_token"] != nil && refreshToken == nil { ok = false }
    if f["scope"] != nil && scope == nil { ok = false }
    if f["client_auth"] != nil && clientAuth == nil { ok = false }
    switch grant {
    case .refreshToken?:
      if f["refresh_token"] == nil {
        reader.error(
          node.location,
          "'\(path)' with grant: refresh_token needs 'refresh_token': the first refresh token a person's authorisation gave "
            + "(dray keeps each one the server rotates to)")
        ok = false
      }
    case .clientCredentials?:
      if f["client_secret"] == nil {
        reader.error(node.location, "'\(path)' with grant: client_credentials needs 'client_secret', the client's secret")
        ok = false
      }
      if let token = f["refresh_token"] {
        reader.error(
          token.location, "'\(f.path("refresh_token"))' is for grant: refresh_token; drop it, or set grant: refresh_token")
        ok = false
      }
    case nil:
      break
    }
    // A public client (RFC 6749 §2.1) has no secret: its id goes in the body.
    if clientAuth == .basic, f["client_secret"] == nil, grant == .refreshToken, let clientAuthNode = f["client_auth"] {
      reader.error(
        clientAuthNode.location,
        "'\(f.path("client_auth"))' is basic but there is no 'client_secret'; a public client sends its id in the body: client_auth: body")
      ok = false
    }
    guard ok, let tokenURL, let grant, let clientID else { return nil }
    let settings = OAuth2(
      tokenURL: tokenURL, grant: grant, clientID: clientID, clientSecret: clientSecret, refreshToken: refreshToken, scope: scope,
      clientAuth: clientAuth ?? f.defaultValue("client_auth"))
    if clientSecret != nil { reader.redactor.add(String(settings.basicCredentials.dropFirst("Basic ".count))) }
    if let earlier = oauth2Clients[settings.key], earlier.settings != settings {
      reader.error(
        node.location,
        "'\(path)' names the token_url and client_id of '\(earlier.path)' with other settings; steps that name one client share "
          + "one token, so give them the same grant, client_secret, refresh_token, scope and client_auth (a YAML anchor keeps them equal)")
      return nil
    }
    oauth2Clients[settings.key] = (settings, path)
    return settings
  }

  /// An `auth.api_key`: `header` or `query` (one of them) and the `value`, which joins the
  /// redactor.
  mutating func readAPIKey(_ node: YAMLNode, _ path: String) -> HTTPStep.APIKey? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpAPIKey) else { return nil }
    let value = reader.string(f, "value", secret: true)
    var place: HTTPStep.APIKey.Place?
    switch (f["header"], f["query"]) {
    case (let header?, nil):
      if let name = reader.string(f, "header") {
        if let problem = Self.headerNameProblem(name) {
          reader.error(header.location, problem)
        } else {
          place = .header(name)
        }
      }
    case (nil, _?):
      place = reader.string(f, "query").map { .query($0) }
    case (_?, let query?):
      reader.error(query.location, "'\(path)' sends the key in 'header' or in 'query', not both")
    case (nil, nil):
      reader.error(node.location, "'\(path)' needs 'header' (such as X-API-Key) or 'query' (such as api_key): where the key goes")
    }
    if let value, case .header? = place, let problem = Self.headerValueProblem(value, path: f.path("value")) {
      reader.error(f["value"]?.location ?? node.location, problem)
      return nil
    }
    guard let place, let value else { return nil }
    return HTTPStep.APIKey(place: place, value: value)
  }
}
