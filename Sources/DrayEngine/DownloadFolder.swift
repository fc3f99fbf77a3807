internal import DrayModel
internal import Foundation
internal import Glibc

/// The job's folder of downloads, `<download.path>/<job>/`, and the files dray keeps there.
///
/// Every download of a step is named after the step and its fingerprint
/// (`StepRunner.downloadPath`):
///
/// ```
/// <step>-<fingerprint8>.answer            a finished answer not yet used
/// <step>-<fingerprint8>.answer.json       its sidecar
/// <step>-<fingerprint8>.answer.part       a partial answer, and .answer.part.json its sidecar
/// <step>-<fingerprint8>.page-3[.part…]    a page of an http step
/// <step>-<fingerprint8>.<name8>.answer…   a file of a files get of a folder
/// ```
///
/// Cleaning up removes files with these names, for the job's steps, and nothing else: not a
/// folder, not a file of another name, not what a symbolic link points to. The folder itself
/// goes only when that leaves it empty.
struct DownloadFolder {
  /// `<download.path>/<job>`, absolute.
  let path: String
  /// The ids of every step of the job, members of groups included.
  let stepIDs: Set<String>

  init(_ manifest: Manifest) {
    path = manifest.resolve(manifest.download.path) + "/\(manifest.job)"
    stepIDs = Set(manifest.allSteps.map(\.id))
  }

  /// Removes dray's download files of the job's steps, then the folder if that left it
  /// empty. A folder that is a symbolic link is left alone.
  /// - Returns: the files removed, by name.
  @discardableResult
  func removeOwnFiles() -> [String] {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return [] }
    var removed: [String] = []
    for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where isOwnFile(name) {
      let file = path + "/" + name
      guard lstat(file, &info) == 0, info.st_mode & S_IFMT != S_IFDIR else { continue }
      if unlink(file) == 0 { removed.append(name) }
    }
    rmdir(path)
    return removed.sorted()
  }

  /// Whether `name` is a download file of one of the job's steps.
  func isOwnFile(_ name: String) -> Bool {
    stepIDs.contains { id in
      guard name.hasPrefix(id + "-") else { return false }
      return DownloadFolder.isDownloadName(name.dropFirst(id.count + 1))
    }
  }

  /// `3f2a9c01.answer`, `3f2a9c01.page-2.part.json`, `3f2a9c01.0a1b2c3d.answer.json`: a
  /// fingerprint, then a download's suffix, then what `Download` adds.
  static func isDownloadName(_ rest: Substring) -> Bool {
    guard let core = hexPrefix(rest)?.dropFirst(), rest.dropFirst(8).first == "." else { return false }
    var body = core
    for ending in [".part.json", ".part", ".json"] where body.hasSuffix(ending) {
      body = body.dropLast(ending.count)
      break
    }
    if body == "answer" { return true }
    if body.hasPrefix("page-") { return !body.dropFirst(5).isEmpty && body.dropFirst(5).allSatisfy(\.isASCIIDigit) }
    if let named = hexPrefix(body), named.dropFirst() == "answer", body.dropFirst(8).first == "." { return true }
    // A runner's own page of a claimed partition (`Joining.tag`): `3f2a9c01.0a1b2c3d.page-2`.
    if let named = hexPrefix(body), body.dropFirst(8).first == ".", named.dropFirst().hasPrefix("page-") {
      let digits = named.dropFirst().dropFirst(5)
      return !digits.isEmpty && digits.allSatisfy(\.isASCIIDigit)
    }
    return false
  }

  /// `text` after its first 8 characters when they are lowercase hexadecimal digits.
  private static func hexPrefix(_ text: Substring) -> Substring? {
    let head = text.prefix(8)
    guard head.count == 8, head.allSatisfy({ $0.isASCIIDigit || ("a"..."f").contains($0) }) else { return nil }
    return text.dropFirst(8)
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
