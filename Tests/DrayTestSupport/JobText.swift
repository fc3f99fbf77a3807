/// Manifest text for tests that run jobs against the emulator.
public enum JobText {
  /// The top of a manifest: version, job, the emulator's `platform`, the demo user's
  /// `auth`, a quick retry policy, and a `database` block when `database` is given.
  public static func header(
    job: String, emulator: Emulator, database: String? = nil, retry: String = "{ count: 2, interval: 100ms, backoff: fixed }"
  ) -> String {
    var text = """
      version: 1
      job: \(job)
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      retry: \(retry)

      """
    if let database { text += "database: { path: \(database) }\n" }
    return text
  }
}
