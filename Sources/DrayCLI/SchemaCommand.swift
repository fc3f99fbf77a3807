internal import DrayEngine
internal import DrayManifest

/// `dray schema`: the manifest's JSON Schema, for editors (the YAML language server reads it
/// through a `# yaml-language-server: $schema=...` modeline; see the README).
enum SchemaCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments)
    guard args.positional.isEmpty else { throw UsageError("schema takes no arguments: dray schema > dray.schema.json") }
    print(ManifestSchema.jsonSchemaText, terminator: "")
    return ExitCode.success
  }
}
