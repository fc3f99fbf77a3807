internal import DrayModel
internal import DrayRecords
internal import DrayTransport
internal import Foundation

extension StepRunner {
  /// The next page's request, or nil after the last page.
  /// - Throws: `HTTPStepError` when the answer's next link or cursor cannot be followed.
  func nextPage(
    _ options: HTTPStep, current: PageLedger.Next, summary: AnswerSummary, lastRecord: Record?, headers: HTTPHeaders
  ) throws -> PageLedger.Next? {
    if let more = options.more, try !morePages(summary, more) { return nil }
    switch options.paginate {
    case nil:
      return nil
    case .next(let selector):
      guard let link = try value(summary, selector, as: .nextLink) else { return nil }
      return PageLedger.Next(url: try follow(link, from: current.url, options: options))
    case .linkHeader:
      guard let link = LinkHeader(headers).target("next"), !link.isEmpty else { return nil }
      return PageLedger.Next(url: try follow(link, from: current.url, options: options))
    case .offset(let param, let limitParam, let limit, let start):
      guard summary.records >= limit else { return nil }
      let offset = (current.offset ?? start) + limit
      return PageLedger.Next(
        url: pageURL(options, since: current.since, [QueryItem(param, String(offset)), QueryItem(limitParam, String(limit))]),
        offset: offset, since: current.since)
    case .cursor(let param, let from):
      guard let cursor = try value(summary, from, as: .cursor) else { return nil }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the server sent cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: pageURL(options, since: current.since, [QueryItem(param, cursor)]), cursor: cursor, since: current.since)
    case .lastRecord(let param, let field):
      guard let lastRecord else { return nil }
      let cursor: String
      switch RecordChecks.resolve(field, in: lastRecord) {
      case .string(let text)? where !text.isEmpty: cursor = text
      case .integer(let number)?: cursor = String(number)
      case .number(let number)?: cursor = number
      case let other:
        let near = other == nil ? RecordChecks.nearSpelling(field, in: lastRecord).map { "; did you mean '\($0)'?" } ?? "" : ""
        throw HTTPStepError.badPagination(
          "paginate.cursor.from_last_record '\(field)' is \(other.map { $0.json } ?? "missing") in record \(summary.records), "
            + "the last of the page; it must be a string or a number\(near)")
      }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the last record gave cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: pageURL(options, since: current.since, [QueryItem(param, cursor)]), cursor: cursor, since: current.since)
    case .bodyCursor(let from, _):
      guard let cursor = try value(summary, from, as: .cursor) else { return nil }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the server sent cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: current.url, cursor: cursor, since: current.since)
    case .page(let param, let start):
      guard summary.records > 0 else { return nil }
      let number = (current.offset ?? start) + 1
      return PageLedger.Next(
        url: pageURL(options, since: current.since, [QueryItem(param, String(number))]), offset: number, since: current.since)
    }
  }

  /// What `paginate.more` says: true for more pages; false for a false, null or absent
  /// value.
  /// - Throws: `HTTPStepError.badPagination` for a value that is not a boolean.
  private func morePages(_ summary: AnswerSummary, _ selector: RecordSelector) throws -> Bool {
    switch summary.values[selector] ?? .absent {
    case .absent:
      try refuseMisspelt(selector, key: "paginate.more", in: summary)
      return false
    case .null: return false
    case .scalar("true"), .text("true"): return true
    case .scalar("false"), .text("false"): return false
    case .scalar(let json):
      throw HTTPStepError.badPagination("paginate.more '\(selector)' is \(json) in the answer; it must be true or false")
    case .text(let text):
      throw HTTPStepError.badPagination(
        "paginate.more '\(selector)' is the text '\(PrintableText.oneLine(text))' in the answer; it must be true or false")
    case .structure(let kind):
      throw HTTPStepError.badPagination("paginate.more '\(selector)' is \(kind) in the answer; point it at the boolean itself")
    }
  }

  /// What a pagination selector points at in an answer.
  private enum PageValue {
    /// The next page's URL (`paginate.next`): a string.
    case nextLink
    /// The next page's cursor (`paginate.cursor.from`): a string or a number.
    case cursor

    /// The selector's manifest key, for messages.
    var key: String {
      switch self {
      case .nextLink: "paginate.next"
      case .cursor: "paginate.cursor.from"
      }
    }
  }

  /// The text a pagination selector found; nil when absent, null or empty.
  /// - Throws: `RecordError` for a selector that is absent where a near spelling is not
  ///   (`refuseMisspelt`), or a value a next link cannot be; `HTTPStepError.badPagination`
  ///   for a list or an object.
  private func value(_ summary: AnswerSummary, _ selector: RecordSelector, as role: PageValue) throws -> String? {
    switch summary.values[selector] ?? .absent {
    case .absent:
      try refuseMisspelt(selector, key: role.key, in: summary)
      return nil
    case .null: return nil
    case .text(let text): return text.isEmpty ? nil : text
    case .scalar(let json):
      switch role {
      case .cursor:
        return json
      case .nextLink:
        let kind = json == "true" || json == "false" ? "a boolean" : "a number"
        throw RecordError(
          "\(role.key) '\(selector)' is \(kind) (\(json)) in the answer; a next link must be a string holding a URL, or null or absent on the last page"
        )
      }
    case .structure(let kind):
      throw HTTPStepError.badPagination("\(role.key) '\(selector)' is \(kind) in the answer; point it at the value itself")
    }
  }

  /// Refuses a pagination selector that matched nothing where the object it looks in holds
  /// a member a small edit away (docs/http.md, "A misspelt selector"): read as absent, it
  /// would end the pull after this page, and an incremental step would keep a cursor past
  /// records it never fetched. A true last page (the member null, or absent with no near
  /// name) passes.
  /// - Throws: `RecordError` naming the near spelling.
  private func refuseMisspelt(_ selector: RecordSelector, key: String, in summary: AnswerSummary) throws {
    guard let near = summary.nearSpellings[selector] else { return }
    throw RecordError(
      "\(key) '\(selector)' matches nothing in the answer; did you mean '\(near)'? "
        + "A misspelt selector would end the pull early, so nothing was published")
  }

  /// `link` resolved against the current page's URL (RFC 3986 §5), on the step's origin.
  private func follow(_ link: String, from current: String, options: HTTPStep) throws -> String {
    guard let base = URL(string: current), let resolved = URL(string: link, relativeTo: base)?.absoluteURL,
      let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
    else {
      throw HTTPStepError.badPagination("the next page's link '\(PrintableText.oneLine(link))' is not an http:// or https:// address")
    }
    let url = resolved.absoluteString
    guard StepRunner.origin(url) == StepRunner.origin(options.baseURL) else {
      throw HTTPStepError.badPagination(
        "the next page's link \(url) leaves \(StepRunner.origin(options.baseURL) ?? options.baseURL); dray follows links on the base_url's origin only, so the step's credentials never go elsewhere"
      )
    }
    if url == current { throw HTTPStepError.paginationLoop("the next page's link is the page itself (\(url))") }
    return url
  }

  /// `scheme://host:port` of a URL, lower-cased, with the scheme's default port.
  static func origin(_ url: String) -> String? {
    Origin(url)?.description
  }
}

extension StepRunner {
  /// The first page's URL: the step's URL, with the first offset or none.
  func firstURL(_ options: HTTPStep, since: String?) -> String {
    if case .offset(let param, let limitParam, let limit, let start)? = options.paginate {
      return pageURL(options, since: since, [QueryItem(param, String(start)), QueryItem(limitParam, String(limit))])
    }
    if case .page(let param, let start)? = options.paginate { return pageURL(options, since: since, [QueryItem(param, String(start))]) }
    return pageURL(options, since: since, [])
  }

  /// The step's URL with the incremental cursor (when sent) and `extra`, the pagination's
  /// parameters of the page.
  ///
  /// One parameter is sent once, by the most specific key that sets it (docs/http.md,
  /// "Which key sets a query parameter"): a pagination parameter over `incremental.param`
  /// over `query`. So a Stripe-style pull whose page cursor and incremental cursor are both
  /// `starting_after` sends the kept value on its first page and each page's cursor in its
  /// place after it (`?starting_after=40`, never `?starting_after=0&starting_after=40`).
  func pageURL(_ options: HTTPStep, since: String?, _ extra: [QueryItem]) -> String {
    let paged = Set(extra.map(\.name))
    let cursor = zip(options.incremental.map { [$0.param] } ?? [], since.map { [$0] } ?? []).map { QueryItem($0, $1) }
    return options.url(adding: cursor.filter { !paged.contains($0.name) } + extra)
  }

  /// Whether the pagination guesses each next page by a parameter of its own (`offset`,
  /// `page`), which a server that does not know the parameter ignores: every page then
  /// holds the same records, though each URL differs (docs/http.md, "Pagination: `paginate`").
  static func guessesPages(_ options: HTTPStep) -> Bool {
    switch options.paginate {
    case .offset?, .page?: true
    default: false
    }
  }

  /// The pagination's parameter, for the message of a page that repeats the one before.
  static func pageParameter(_ options: HTTPStep) -> String {
    switch options.paginate {
    case .offset(let param, _, _, _)?: "paginate.offset.param '\(param)'"
    case .page(let param, _)?: "paginate.page.param '\(param)'"
    default: "the pagination's parameter"
    }
  }
}
