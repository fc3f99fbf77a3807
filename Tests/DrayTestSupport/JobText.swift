/// Manifest text for tests that run jobs against the emulator.
public enum JobText {
  /// The top of a manifest: version, job, the emulator's `platform`, the demo user's
  /// `auth`, a quick retry policy, and a `database` block when `database` is given.
  /// `compression: false` asks for the answers as they are (`platform.compression`), for
  /// tests of their framing or their length.
  public static func header(
    job: String, emulator: Emulator, database: String? = nil, retry: String = "{ count: 2, interval: 100ms, backoff: fixed }",
    compression: Bool = true
  ) -> String {
    var text = """
      version: 1
      job: \(job)
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj\(compression ? "" : ", compression: false") }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      retry: \(retry)

      """
    if let database { text += "database: { path: \(database) }\n" }
    return text
  }
}
