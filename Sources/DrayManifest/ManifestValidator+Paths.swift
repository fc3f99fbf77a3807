internal import DrayModel

extension ManifestValidator {
  /// A step's local file path (`output`, `local`): a non-empty path relative to the job
  /// folder that does not climb out of it (`JobPath.normalize`). Symbolic links are checked
  /// when the step runs.
  mutating func jobFolderPath(_ node: YAMLNode, _ path: String) -> String? {
    guard let text = reader.nonEmptyString(node, path) else { return nil }
    do {
      _ = try JobPath.normalize(text)
    } catch {
      reader.error(node.location, "'\(path)': \(error); a step reads and writes files only inside the job folder")
      return nil
    }
    return text
  }
}
