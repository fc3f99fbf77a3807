/// Web links from `Link` header fields (RFC 8288 §3).
///
///     Link: <https://api.example.com/items?page=3>; rel="next", <...?page=9>; rel=last
///
/// Each link is a URI reference in angle brackets followed by `;`-separated parameters. The
/// `rel` parameter holds one or more space-separated relation types, compared without regard
/// to case (§2.1.1); only the first `rel` of a link counts (§3.3). Targets are returned as
/// written: resolve relative ones against the request's URL.
public struct LinkHeader: Sendable, Equatable {
  public struct Link: Sendable, Equatable {
    /// The target, as written between `<` and `>`.
    public var target: String
    /// Relation types, lower-cased.
    public var relations: [String]
  }

  public var links: [Link]

  /// Parses every `Link` field of `headers`, in order.
  public init(_ headers: HTTPHeaders) {
    links = headers.fields.filter { $0.name.lowercased() == "link" }.flatMap { LinkHeader.parse($0.value) }
  }

  /// The target of the first link with relation `relation` (e.g. `next`).
  public func target(_ relation: String) -> String? {
    let wanted = relation.lowercased()
    return links.first { $0.relations.contains(wanted) }?.target
  }

  /// Parses one field value.
  static func parse(_ value: String) -> [Link] {
    var links: [Link] = []
    var rest = Substring(value)
    while let open = rest.firstIndex(of: "<") {
      guard let close = rest[open...].firstIndex(of: ">") else { break }
      let target = String(rest[rest.index(after: open)..<close]).trimmingSpaces
      rest = rest[rest.index(after: close)...]
      var relations: [String]?
      // Parameters up to the next link: `; name=value` or `; name="quoted, value"`.
      while true {
        rest = rest.drop { $0 == " " || $0 == "\t" }
        guard rest.first == ";" else { break }
        rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        let name = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," }
        rest = rest.dropFirst(name.count)
        var parameter = ""
        if rest.first == "=" {
          rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
          if rest.first == "\"" {
            rest = rest.dropFirst()
            while let c = rest.first, c != "\"" {
              rest = rest.dropFirst()
              if c == "\\", let escaped = rest.first {
                parameter.append(escaped)
                rest = rest.dropFirst()
              } else {
                parameter.append(c)
              }
            }
            rest = rest.dropFirst()
          } else {
            let token = rest.prefix { $0 != ";" && $0 != "," }
            parameter = String(token).trimmingSpaces
            rest = rest.dropFirst(token.count)
          }
        }
        if name.trimmingSpaces.lowercased() == "rel" && relations == nil {
          relations = parameter.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        }
      }
      links.append(Link(target: target, relations: relations ?? []))
      rest = rest.drop { $0 != "," && $0 != "<" }
    }
    return links
  }
}

extension StringProtocol {
  fileprivate var trimmingSpaces: String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
