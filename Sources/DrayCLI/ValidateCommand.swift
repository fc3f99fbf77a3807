internal import DrayEngine
internal import Foundation

/// `dray validate JOB.yaml...`: exit 0 when every manifest is valid, 2 otherwise.
enum ValidateCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, flags: ["--no-credentials"])
    guard !args.positional.isEmpty else { throw UsageError("validate takes one or more manifests") }
    // `--no-credentials`: a CI check of manifests where the job's secrets are not set.
    let credentialsMayBeUnset = args.flags.contains("--no-credentials")
    var valid = true
    for path in args.positional {
      if let manifest = ManifestInput.load(path, secretsMayBeMissing: credentialsMayBeUnset) {
        print("\(path): ok (job \(manifest.job), \(HumanUnits.counted(manifest.steps.count, "step")))")
      } else {
        valid = false
      }
    }
    return valid ? ExitCode.success : ExitCode.usage
  }
}
