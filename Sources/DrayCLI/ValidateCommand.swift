internal import DrayEngine
internal import Foundation

/// `dray validate JOB.yaml...`: exit 0 when every manifest is valid, 2 otherwise.
enum ValidateCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments)
    guard !args.positional.isEmpty else { throw UsageError("validate takes one or more manifests") }
    var valid = true
    for path in args.positional {
      if let manifest = ManifestInput.load(path) {
        print("\(path): ok (job \(manifest.job), \(HumanUnits.counted(manifest.steps.count, "step")))")
      } else {
        valid = false
      }
    }
    return valid ? ExitCode.success : ExitCode.usage
  }
}
