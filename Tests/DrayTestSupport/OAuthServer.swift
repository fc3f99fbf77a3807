import Foundation

/// The OAuth 2.0 test server (`Emulator/oauth_server.py`): a token endpoint that rotates
/// refresh tokens on every use and revokes a family when an old one comes back, and an API
/// (`/items`) that needs a live access token, and a login endpoint (`/login`) that hands out
/// session tokens for a user and password. Stopped when the value is released.
public final class OAuthServer: Sendable {
  private let server: ServerProcess
  /// The server's address, ending with `/`.
  public var url: String { server.url }

  /// Starts the server with extra command-line `arguments` (`--client`, `--client-auth`,
  /// `--refresh-token`, `--lifetime`, `--pages`, `--per-page`, `--page-delay`, `--token-delay`,
  /// `--api-key`, `--user`).
  public init(_ arguments: [String] = []) throws {
    server = try ServerProcess(script: "oauth_server.py", name: "OAuth server", arguments)
  }

  /// What the server saw (see the server's docstring, `/admin/stats`).
  public struct Stats: Sendable {
    /// Each token request: grant, how the client authenticated, the outcome
    /// (`ok`, `invalid_grant`, ...), the refresh token presented.
    public var tokenRequests: [[String: String]]
    public var apiRequests: Int
    public var api401: Int
    /// A refresh-token family was revoked (an old token came back).
    public var revoked: Bool
    public var newestRefreshToken: String?
    public var accessTokens: [String]
    /// The path and query of each API request, oldest first.
    public var apiPaths: [String]
    /// Each `/login` request: its `content_type` and `outcome` (`ok`, `invalid_credentials`,
    /// `bad_request`, `html`).
    public var loginRequests: [[String: String]]
    /// Each POST to a path the server does not serve (`path`, `body`): what a redirect sent on.
    public var otherPosts: [[String: String]]
  }

  public func stats() throws -> Stats {
    let json = (try JSONSerialization.jsonObject(with: Curl.send("GET", url + "admin/stats")) as? [String: Any]) ?? [:]
    let requests = (json["token_requests"] as? [[String: Any]] ?? []).map { entry in
      entry.compactMapValues { $0 as? String }
    }
    let logins = (json["login_requests"] as? [[String: Any]] ?? []).map { entry in entry.compactMapValues { $0 as? String } }
    return Stats(
      tokenRequests: requests, apiRequests: json["api_requests"] as? Int ?? 0, api401: json["api_401"] as? Int ?? 0,
      revoked: json["revoked"] as? Bool ?? false, newestRefreshToken: json["newest_refresh_token"] as? String,
      accessTokens: json["access_tokens"] as? [String] ?? [], apiPaths: json["api_paths"] as? [String] ?? [], loginRequests: logins,
      otherPosts: (json["other_posts"] as? [[String: Any]] ?? []).map { $0.compactMapValues { $0 as? String } })
  }

  /// Sets the token endpoint's and the login's mode (`html`, `no_access_token`,
  /// `no_expires_in`, `absurd_expires_in`, `invalid_client`, `bad_request`, `normal`) and how
  /// many API requests to refuse.
  public func setMode(_ mode: String, rejectNext: Int = 0) throws {
    _ = try Curl.send(
      "POST", url + "admin/mode", headers: ["Content-Type": "application/json"],
      body: #"{"mode": "\#(mode)", "reject_next": \#(rejectNext)}"#)
  }

  /// Makes `/token` and `/login` answer `status` (307, 308) with `Location: location`;
  /// `nil` answers them again.
  public func redirect(_ status: Int, to location: String?) throws {
    let spec = location.map { #"{"status": \#(status), "location": "\#($0)"}"# } ?? "null"
    _ = try Curl.send("POST", url + "admin/mode", headers: ["Content-Type": "application/json"], body: #"{"redirect": \#(spec)}"#)
  }

  /// A person authorised again: `token` starts a new family.
  public func newFamily(_ token: String) throws {
    _ = try Curl.send(
      "POST", url + "admin/family", headers: ["Content-Type": "application/json"], body: #"{"refresh_token": "\#(token)"}"#)
  }
}
