import Testing

@testable import DrayEngine

/// The names `DownloadFolder` counts as dray's download files (what `dray clean` removes),
/// a runner's own pages of a claimed partition (`Joining.tag`) included.
@Suite struct DownloadFolderTests {
  @Test(arguments: [
    ("3f2a9c01.answer", true), ("3f2a9c01.answer.part.json", true), ("3f2a9c01.page-2", true), ("3f2a9c01.page-2.part", true),
    ("3f2a9c01.0a1b2c3d.answer", true), ("3f2a9c01.0a1b2c3d.page-12", true), ("3f2a9c01.0a1b2c3d.page-3.part.json", true),
    ("3f2a9c01.0a1b2c3d.page-", false), ("3f2a9c01.0a1b2c3d.page-x", false), ("3f2a9c01.0A1B2C3D.page-1", false),
    ("3f2a9c01.notes.txt", false), ("3f2a9c0.page-1", false),
  ])
  func downloadNames(name: String, own: Bool) {
    #expect(DownloadFolder.isDownloadName(Substring(name)) == own, "\(name)")
  }

  @Test func aRunnersTagIsEightHexDigitsOfItsOwner() {
    let tag = Joining.tag("host:42:abcdef01")
    #expect(tag.count == 8 && tag.allSatisfy { $0.isHexDigit && !$0.isUppercase })
    #expect(tag != Joining.tag("host:43:abcdef01"))
    #expect(DownloadFolder.isDownloadName(Substring("3f2a9c01.\(tag).page-1")))
  }
}
