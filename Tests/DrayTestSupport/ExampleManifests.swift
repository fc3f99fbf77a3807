import Foundation

/// The manifests shipped with the project, found by globbing (never listed by hand, so a new
/// example is checked the moment it is added).
public enum ExampleManifests {
  /// Every `*.yaml` and `*.yml` file under `folder`, recursively, sorted; empty when the
  /// folder does not exist.
  public static func find(in folder: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: folder) else { return [] }
    var out: [String] = []
    while let relative = enumerator.nextObject() as? String {
      if relative.hasSuffix(".yaml") || relative.hasSuffix(".yml") { out.append(folder + "/" + relative) }
    }
    return out.sorted()
  }

  /// Every manifest under the repository's `examples/` and `jobs/` folders.
  public static var all: [String] {
    find(in: Repository.root + "/examples") + find(in: Repository.root + "/jobs")
  }

  /// The environment the examples are validated with: the emulator's demo user, as
  /// `make demo` and the README set it.
  public static let environment = ["FMP_USER": DemoUser.name, "FMP_PASSWORD": DemoUser.password]
}
