public import DrayManifest
public import DrayModel

/// Manifests given as text, loaded as `job.yaml` of a job folder (`/jobs` unless given):
/// only the files the manifest itself names are read.
public enum ManifestText {
  /// The top of a job that signs in to a platform and loads into `db.sqlite`, up to and
  /// including `steps:` (no newline after it): what a test of a step's decoding puts first.
  public static let platformJob = """
    version: 1
    job: j
    platform: { host: "http://h/", environment: e, project: p }
    auth: { username: u, password: password-1234 }
    database: { path: db.sqlite }
    steps:
    """

  /// The manifest `text` holds.
  /// - Throws: `ManifestError` with every problem found.
  public static func load(_ text: String, environment: [String: String] = [:], directory: String = "/jobs") throws(ManifestError)
    -> Manifest
  {
    try ManifestLoader(environment: environment).load(text: text, path: "job.yaml", directory: directory)
  }

  /// The problems of `text` as `dray validate` prints them (`job.yaml:3:1: error: ...`);
  /// empty when it loads.
  public static func errors(_ text: String, environment: [String: String] = [:], directory: String = "/jobs") -> [String] {
    do {
      _ = try load(text, environment: environment, directory: directory)
      return []
    } catch {
      return error.diagnostics.map(\.description)
    }
  }
}
