internal import DrayModel

/// A file (or, for a `files get` of a server folder, a folder) a step writes, noted while
/// the steps are read and checked against the files dray keeps once the whole manifest is.
struct StepOutput {
  /// The value's node, where a problem is reported.
  var node: YAMLNode
  /// `steps.check.query.output`.
  var key: String
  /// As written, for messages: `out/rows.csv`, `./d.sqlite`.
  var shown: String
  /// Relative to the job folder, as checked (`{page}` filled in as 1).
  var path: String
  /// A `files get` of a server folder: `path` names the local folder it fills.
  var isFolder = false
}

extension ManifestValidator {
  /// A step's local file path (`output`, `local`): a non-empty path relative to the job
  /// folder that does not climb out of it (`JobPath.normalize`). Symbolic links are checked
  /// when the step runs.
  ///
  /// - Parameter folder: whether the path may name a folder (end in `/`); otherwise it must
  ///   name a file: neither `out/` nor the job folder itself.
  mutating func jobFolderPath(_ node: YAMLNode, _ path: String, folder: Bool = false) -> String? {
    guard let text = reader.nonEmptyString(node, path) else { return nil }
    let normalized: String
    do {
      normalized = try JobPath.normalize(text)
    } catch {
      reader.error(node.location, "'\(path)': \(error); a step reads and writes files only inside the job folder")
      return nil
    }
    if !folder && text.hasSuffix("/") && !fileShaped(node, path, text, what: "file to write", example: "rows.json") { return nil }
    if !folder && normalized == "." {
      reader.error(node.location, "'\(path)': '\(text)' names the job folder itself; name the file to write, such as 'out/rows.json'")
      return nil
    }
    if !folder && !fileShaped(node, path, text, what: "file to write", example: "rows.json") { return nil }
    return text
  }

  /// Whether `text`, where dray creates a file, has the form of a file path: a path that
  /// ends in `/`, or whose last part is `.` or `..`, names a folder, which a run could only
  /// fail to open or write. Otherwise reports it, suggesting `example` inside it.
  mutating func fileShaped(_ node: YAMLNode, _ key: String, _ text: String, what: String, example: String) -> Bool {
    let ending: String? =
      if text.hasSuffix("/") {
        "/"
      } else if let last = text.split(separator: "/").last, last == "." || last == ".." {
        String(last)
      } else {
        nil
      }
    guard let ending else { return true }
    let inside = text.hasSuffix("/") ? text + example : text + "/" + example
    reader.error(node.location, "'\(key)': '\(text)' ends in '\(ending)', so it names a folder; name the \(what), such as '\(inside)'")
    return false
  }

  /// A step's output file, checked by `jobFolderPath` and noted for `checkKeptPaths`.
  mutating func outputPath(_ node: YAMLNode, _ path: String) -> String? {
    guard let text = jobFolderPath(node, path) else { return nil }
    noteOutput(node, path, shown: text, path: text.replacing("{page}", with: "1"))
    return text
  }

  /// The `local` of a `files` step: the file `get`, `list` and `meta` write, the file `put`
  /// reads; a `get` writes into a folder when `local` ends in `/` (the file keeps its server
  /// name) or when `path` names a server folder (every listed file, by its listed name).
  mutating func filesLocalPath(_ node: YAMLNode, _ path: String, action: FilesStep.Action?, remote: String?) -> String? {
    guard let text = jobFolderPath(node, path, folder: action == .get || action == nil) else { return nil }
    switch action {
    case .get:
      if let remote, FilesStep.folder(remote) != nil {
        noteOutput(node, path, shown: text, path: text, isFolder: true)
      } else if text.hasSuffix("/") {
        // A file path: its last part is the file's name.
        let name = remote.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? ""
        noteOutput(node, path, shown: text + name, path: text + name)
      } else {
        noteOutput(node, path, shown: text, path: text)
      }
    case .list, .meta:
      noteOutput(node, path, shown: text, path: text)
    default:
      break
    }
    return text
  }

  private mutating func noteOutput(_ node: YAMLNode, _ key: String, shown: String, path: String, isFolder: Bool = false) {
    stepOutputs.append(StepOutput(node: node, key: key, shown: shown, path: path, isFolder: isFolder))
  }

  /// The files dray keeps for the job (`KeptPaths`) against the paths the manifest names:
  ///
  /// - the download and state folders are dray's own: neither may hold the manifest or the
  ///   database (they may be anywhere else, an absolute path included);
  /// - the database is not the manifest;
  /// - no step output is a kept file or inside a kept folder;
  /// - no report file, nor `report.openlineage.path`, is the manifest, a database file, the
  ///   lock, the journal, or inside the download folder.
  mutating func checkKeptPaths(_ manifest: Manifest, top: Fields) {
    let manifestFile = manifest.file
    let database = manifest.database?.path.map { JobPath.lexical(manifest.resolve($0)) }
    if let database, database == manifestFile, let node = Self.child(top["database"], "path") {
      reader.error(node.location, "'database.path': '\(manifest.database?.path ?? "")' is the job's manifest; name the SQLite file to fill")
    }
    let folders: [(key: String, block: String, written: String, example: String)] = [
      ("download.path", "download", manifest.download.path, ".dray/downloads"),
      ("state.path", "state", manifest.state.path, ".dray"),
    ]
    var kept = KeptPaths.forOutputs(of: manifest, runID: nil)
    var keptFromReports = KeptPaths.forReports(of: manifest)
    for folder in folders {
      let path = JobPath.lexical(manifest.resolve(folder.written))
      let holds: String? =
        path == manifestFile || JobPath.isInside(manifestFile, path)
        ? "the job's manifest"
        : database.flatMap { path == $0 || JobPath.isInside($0, path) ? "the job's database (database.path)" : nil }
      guard let holds, let node = Self.child(top[folder.block], "path") else { continue }
      // Every output would be inside it too: say it once, here.
      kept = kept.dropping(path)
      keptFromReports = keptFromReports.dropping(path)
      reader.error(
        node.location,
        "'\(folder.key)': '\(folder.written)' holds \(holds); dray keeps only its own files there: give it a folder that holds neither the manifest nor the database, such as \(folder.example)"
      )
    }

    for output in stepOutputs {
      let path = JobPath.lexical(manifest.directory + "/" + output.path)
      if let conflict = kept.conflict(path) {
        reader.error(
          output.node.location, "'\(output.key)': '\(output.shown)' \(conflict); a step may not write the files dray keeps for the job")
      }
    }

    checkReportFilesApart(manifest, top: top)
    // The OpenLineage events file, by its name (a symbolic link is the engine's to follow).
    if case .path(let written)? = manifest.report.openLineage?.destination,
      let conflict = keptFromReports.conflict(JobPath.lexical(manifest.resolve(written))),
      let node = Self.child(Self.child(top["report"], "openlineage"), "path")
    {
      reader.error(
        node.location,
        "'report.openlineage.path': '\(written)' \(conflict); events may not be appended to the files dray keeps for the job: name another file, such as lineage.jsonl"
      )
    }
    checkFileKinds(manifest, top: top)

    for (format, path) in manifest.reportFiles(runID: KeptPaths.exampleRunID) {
      guard let conflict = keptFromReports.conflict(JobPath.lexical(path)) else { continue }
      let shown = path.hasPrefix(manifest.directory + "/") ? String(path.dropFirst(manifest.directory.count + 1)) : path
      let what = format == .json ? "'\(manifest.report.path)'" : "the \(format.rawValue) report '\(shown)'"
      // Without a report block the default path met the download folder: say so there.
      let node = Self.child(top["report"], "path") ?? Self.child(top["download"], "path") ?? root
      reader.error(node.location, "'report.path': \(what) \(conflict); a report may not overwrite the files dray keeps for the job")
      break
    }
  }

  /// No two report formats land on one file: the Prometheus textfile is `<job>.prom` in the
  /// JSON report's folder, so a `report.path` named `<job>.prom` (or `{job}.prom`) would have
  /// the JSON report overwritten by it (docs/report.md).
  private mutating func checkReportFilesApart(_ manifest: Manifest, top: Fields) {
    let files = manifest.reportFiles(runID: KeptPaths.exampleRunID)
    for (index, file) in files.enumerated() {
      guard let first = files[..<index].first(where: { JobPath.lexical($0.path) == JobPath.lexical(file.path) }) else { continue }
      let node = Self.child(top["report"], "path") ?? Self.child(top["report"], "formats") ?? root
      reader.error(
        node.location,
        "'report.path': '\(manifest.report.path)' is also the file of the \(file.format.rawValue) report (\(Self.reportRule(file.format, manifest.job))), which would overwrite the \(first.format.rawValue) report; give the \(first.format.rawValue) report another name, such as '\(manifest.job).json'"
      )
      return
    }
  }

  private static func reportRule(_ format: ReportSettings.Format, _ job: String) -> String {
    switch format {
    case .json: "report.path"
    case .junit: "report.path with .json replaced by .junit.xml"
    case .prometheus: "'\(job).prom' in the JSON report's folder"
    case .html: "report.path with .json replaced by .html"
    }
  }

  /// The files dray creates or replaces at paths the manifest names, as they are on disk
  /// now: an existing one must be a regular file (`FileKind`), never a folder, a device, a
  /// FIFO or a socket, which a run would replace, or hang on. The database is looked at
  /// through a symbolic link (SQLite opens what it leads to); the others are not (a rename
  /// replaces the link). The engine checks again when it writes.
  private mutating func checkFileKinds(_ manifest: Manifest, top: Fields) {
    if let database = manifest.database?.path, let node = Self.child(top["database"], "path"),
      let kind = FileKind.refusal(at: manifest.resolve(database), followingLinks: true)
    {
      reader.error(
        node.location,
        "'database.path': '\(database)' is \(kind), not an SQLite database file; dray neither opens nor replaces it: name a regular file or a new path"
      )
    }
    checkFolders(manifest, top: top)
    for (format, path) in manifest.reportFiles(runID: KeptPaths.exampleRunID) where !path.contains(KeptPaths.exampleRunID) {
      guard let kind = FileKind.refusal(at: path) else { continue }
      let node = Self.child(top["report"], "path") ?? root
      let shown = path.hasPrefix(manifest.directory + "/") ? String(path.dropFirst(manifest.directory.count + 1)) : path
      let what = format == .json ? "'\(manifest.report.path)'" : "the \(format.rawValue) report '\(shown)'"
      reader.error(
        node.location,
        "'report.path': \(what) is \(kind), not a regular file; dray replaces only a regular file: move it aside or name another file")
    }
    for output in stepOutputs where !output.isFolder && !output.path.hasSuffix("/") {
      guard let kind = FileKind.refusal(at: JobPath.lexical(manifest.directory + "/" + output.path)) else { continue }
      // `files get` puts the file inside a folder named with a trailing `/`.
      let advice =
        output.key.hasSuffix(".files.local") && kind == "a folder"
        ? "to put the file inside the folder, end the path with a slash: local: \(output.shown)/"
        : "a step writes its output only as a new file or over a regular file: remove it or name another file"
      reader.error(output.node.location, "'\(output.key)': '\(output.shown)' is \(kind), not a regular file; \(advice)")
    }
  }

  /// The folders on the way to each path dray creates (the database, the state and download
  /// folders, reports, step outputs) as they are on disk now: one that exists must be a
  /// folder (`FileKind.blockedAncestor`), or the run could only fail to create what is in it.
  private mutating func checkFolders(_ manifest: Manifest, top: Fields) {
    func check(_ node: YAMLNode?, _ key: String, _ shown: String, _ path: String) {
      guard let blocked = FileKind.blockedAncestor(of: JobPath.lexical(path)) else { return }
      reader.error(
        (node ?? root).location,
        "'\(key)': '\(shown)' cannot be created: \(blocked), not a folder; move it aside or name another path")
    }
    if let database = manifest.database?.path {
      check(Self.child(top["database"], "path"), "database.path", database, manifest.resolve(database))
    }
    // Inside each folder: the folder itself must be one.
    check(Self.child(top["state"], "path"), "state.path", manifest.state.path, manifest.resolve(manifest.state.path) + "/lock")
    check(
      Self.child(top["download"], "path"), "download.path", manifest.download.path, manifest.resolve(manifest.download.path) + "/answer")
    if let (_, path) = manifest.reportFiles(runID: KeptPaths.exampleRunID).first {
      check(Self.child(top["report"], "path"), "report.path", manifest.report.path, path)
    }
    for output in stepOutputs {
      check(output.node, output.key, output.shown, manifest.directory + "/" + output.path + (output.isFolder ? "/file" : ""))
    }
  }

  /// The value of `key` in the mapping `node`.
  private static func child(_ node: YAMLNode?, _ key: String) -> YAMLNode? {
    guard let node, case .mapping(let pairs) = node.content else { return nil }
    return pairs.first { $0.key.scalar?.text == key }?.value
  }
}
