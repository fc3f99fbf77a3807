internal import DrayJSON
internal import DrayModel
internal import DrayRecords
internal import DrayTransport
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// One page's answer: its file (nil for a status treated as empty), the empty status,
  /// and its head.
  struct FetchedPage {
    var file: String?
    /// The status that made an empty page: one `on_status` names `empty`, or a 204 to a
    /// step that reads its answers.
    var status: Int?
    var headers: HTTPHeaders
    var contentType: String?
    var bytes: Int64
    /// `bytes` as they came over the network, before content decoding.
    var wireBytes: Int64
  }

  /// Sends the request for one page under the retry policy and `on_status`.
  /// - Throws: `TransportError`; `HTTPStepError.badAnswer` for a 2xx answer with a blank
  ///   body (`BlankAnswer`) that the step would read (`load`, `paginate`), not retried.
  /// - Parameter conditions: preconditions to send (`AnswerValidators`); with them, a
  ///   `304 Not Modified` is an answer (status 304, no file), not an error.
  /// - Parameters:
  ///   - path: where the answer goes (its part beside it).
  ///   - growing: told of the part as it grows, for a load that reads it as it arrives.
  func fetchPage(
    _ options: HTTPStep, next: PageLedger.Next, page: Int, path: String, growing: GrowingFile?, client: HTTPClient,
    conditions: [HTTPHeader], record: (Attempt) -> Void
  ) throws -> FetchedPage {
    let url = next.url
    let download = Download(path: path, style: .standard, resume: manifest.download.resume)
    download.growing = growing
    // The sidecar names the page by its URL with every secret masked.
    let redactor = urlRedactor
    download.storedURL = { redactor.redact(Redactor.maskingURLPasswords($0)) }
    var request = makeRequest(options, url: url, cursor: next.cursor)
    for field in conditions { request.headers.set(field.name, field.value) }
    let runner = RetryRunner(policy: step.retry, cancellation: context.cancellation, budget: context.retryBudget)
    download.endsWhole = options.format == .json ? { JSONEvents.endsWhole(path: $0) } : { XMLRecordReader.endsWhole(path: $0) }
    let signIn = context.signIn(options.auth)
    let tokenAttempts = Mutex<[Attempt]>([])
    defer { tokenAttempts.withLock { $0 }.forEach(record) }
    let caller = tokenCaller(options) { attempt in tokenAttempts.withLock { $0.append(attempt) } }
    let response = try runner.run(
      { _ in
        let response = try attemptSigned(request, signIn: signIn, caller: caller, url: url) { signed in
          try withinBudget(options, url: signed.url) { try download.attempt(signed, client: client, transactionID: nil) }
        }
        if (200..<300).contains(response.status) || options.outcome(for: response.status) == .empty
          || (response.status == 304 && !conditions.isEmpty)
        {
          return response
        }
        throw TransportError.httpStatus(StepRunner.statusError(response, url: url))
      },
      classify: { error in
        guard let transport = error as? TransportError else { return .fail(reason: nil) }
        var status: Int?
        if case .httpStatus(let e) = transport.underlying { status = e.status }
        // on_status decides for statuses; the transport's classes for everything else.
        let transient = status.map { options.outcome(for: $0) == .retry } ?? transport.isTransient
        guard transient else { return .fail(reason: nil) }
        // A POST or PATCH is sent again only when the server cannot have acted on it.
        if request.repeatable || client.bytesSent == 0 { return .retry }
        guard let status else {
          // A timeout or a broken connection has no status for on_status to name.
          return .fail(
            reason: "not retried: a \(request.method.rawValue) may change data on the server and part of it was sent; "
              + "make the request safe to repeat (an idempotency key the server honours) and use a method such as PUT")
        }
        if options.declaresRetry(status) || [429, 503].contains(status) { return .retry }
        return .fail(
          reason: "not retried: a \(request.method.rawValue) may change data on the server and part of it was sent; "
            + "name the status with retry in on_status to retry it")
      },
      record: { attempt in
        var entry = attempt
        if entry.status == nil { entry.status = client.lastStatus }
        if options.paginate != nil { entry.message = entry.message.map { "page \(page): \($0)" } }
        record(entry)
        logAttempt(entry)
      })
    // An answer the step reads must be a document: a blank one is not "no records" (a
    // server with none says so with a document, `204 No Content`, or a status `on_status`
    // names empty). One only saved is kept as is: a DELETE may well answer 204 with nothing.
    let reads = options.load != nil || options.paginate != nil
    guard (200..<300).contains(response.status) && !(reads && response.status == 204) else {
      download.discard()
      return FetchedPage(
        file: nil, status: response.status, headers: response.headers, contentType: nil, bytes: download.bytesReceived,
        wireBytes: download.wireBytesReceived)
    }
    try download.complete()
    if reads, let blank = BlankAnswer.size(ofFile: download.path) {
      download.removeFinished()
      throw HTTPStepError.badAnswer(
        page: options.paginate == nil ? nil : page, url: url,
        message:
          "\(BlankAnswer.describe(bytes: blank)) (HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none")); "
          + "an empty body is not \(options.format == .json ? "a JSON" : "an XML") document, so it was refused and nothing was loaded or saved; "
          + "a server with no records answers with a document (such as [] or {\"data\": []}), 204 No Content, or a status that on_status names empty"
      )
    }
    if download.bytesResumed > 0 { console.info("resumed page \(page) at byte \(download.bytesResumed)", step: step.id) }
    return FetchedPage(
      file: download.path, status: nil, headers: response.headers, contentType: response.headers["Content-Type"],
      bytes: download.bytesReceived, wireBytes: download.wireBytesReceived)
  }

  /// Sends the request to `url` with `send` once it fits its host's budget (`rate_limit`,
  /// shared by the run's steps: `RunContext.budgets`), and adds the wait to the step's. An
  /// answer whose rate limit fields say nothing is left pauses the host until their reset
  /// (`RequestBudgets.observe`). Token endpoint requests do not come here, so they are not
  /// counted.
  /// - Throws: `TransportError.cancelled` when the run is cancelled during the wait; what
  ///   `send` throws.
  func withinBudget(_ options: HTTPStep, url: String, _ send: () throws -> HTTPResponse) throws -> HTTPResponse {
    let limit = options.rateLimit.map { (requests: $0.requests, per: $0.per) }
    let (response, waited) = try context.budgets.send(url: url, limit: limit, cancellation: context.cancellation, send)
    if waited > .zero { budgetWaits.add(waited) }
    if let pause = context.budgets.observe(url: url, headers: response.headers, maxPause: step.retry.maxRetryAfter) {
      console.info("the server's rate limit fields say none is left: no request to its host for \(pause.formatted)", step: step.id)
    }
    return response
  }

  /// What the token requests of `auth.oauth2` and `auth.login` need from this step: its TLS
  /// settings, time limits and retry policy; their attempts go to `record` and the log.
  func tokenCaller(_ options: HTTPStep, record: @escaping (Attempt) -> Void) -> TokenSession.Caller {
    var tls = options.tls
    tls.caFile = tls.caFile.map { manifest.resolve($0) }
    return TokenSession.Caller(
      tls: tls, timeouts: step.timeouts, retry: step.retry, cancellation: context.cancellation, budget: context.retryBudget,
      record: { [self] attempt in
        record(attempt)
        if attempt.outcome != .ok { logAttempt(attempt) }
      },
      log: { [self] line in console.info(line, step: step.id) })
  }

  /// Sends `request` through `send` with the token of `signIn` (none: as it is) in its
  /// header. A 401 renews the token once (`TokenSession.renew(stale:)`) and sends the
  /// request again; a second 401 fails with `signIn.refused`. A token that cannot be had
  /// fails the attempt as unsent (its own attempts are recorded).
  func attemptSigned(
    _ request: HTTPRequest, signIn: SignIn?, caller: TokenSession.Caller, url: String,
    _ send: (HTTPRequest) throws -> HTTPResponse
  ) throws -> HTTPResponse {
    guard let signIn else { return try send(request) }
    var signed = request
    let token: String
    do {
      token = try signIn.session.token(caller)
    } catch {
      throw UnsentAttempt(error)
    }
    signed.headers.set(signIn.field(token))
    let response = try send(signed)
    guard response.status == 401 else { return response }
    let fresh: String
    do {
      fresh = try signIn.session.renew(stale: token, because: "the server answered 401 to \(HTTPClient.displayURL(url))", caller)
    } catch {
      throw UnsentAttempt(error)
    }
    signed.headers.set(signIn.field(fresh))
    let again = try send(signed)
    guard again.status == 401 else { return again }
    throw signIn.refused(StepRunner.statusError(again, url: url))
  }

  /// The request for `url`: method, headers (Accept by format, Content-Type by body, the
  /// Authorization of `auth`), body, time limits and TLS.
  /// With `paginate.cursor.body`, `cursor` goes into the JSON body at that pointer.
  private func makeRequest(_ options: HTTPStep, url: String, cursor: String?) -> HTTPRequest {
    var headers = HTTPHeaders(options.headers)
    if headers["Accept"] == nil {
      headers.set("Accept", options.format == .json ? "application/json" : "application/xml, text/xml;q=0.9")
    }
    var body = HTTPBody.none
    switch options.body {
    case .json(let value)?:
      var sent = value
      if case .bodyCursor(_, let pointer)? = options.paginate, let cursor { sent = value.setting(pointer.tokens[...], to: .string(cursor)) }
      body = .bytes(Array(sent.json.utf8))
      if headers["Content-Type"] == nil { headers.set("Content-Type", "application/json") }
    case .form(let fields)?:
      body = .bytes(Array(QueryItem.encode(fields).utf8))
      if headers["Content-Type"] == nil { headers.set("Content-Type", "application/x-www-form-urlencoded") }
    case nil:
      break
    }
    if let authorization = options.auth?.authorization { headers.set("Authorization", authorization) }
    var url = url
    if case .apiKey(let key)? = options.auth {
      switch key.place {
      // Held back from other origins after a redirect, whatever its name.
      case .header(let name): headers.set(HTTPHeader(name, key.value, secret: true))
      // Into every request, after the step's own parameters and those of pagination: a next
      // link the server gives does not carry it.
      case .query(let name): url += (url.contains("?") ? "&" : "?") + QueryItem.encode([QueryItem(name, key.value)])
      }
    }
    var tls = options.tls
    tls.caFile = tls.caFile.map { manifest.resolve($0) }
    var request = HTTPRequest(
      method: HTTPMethod(rawValue: options.method.rawValue) ?? .get, url: url, headers: headers, body: body,
      timeouts: step.timeouts, tls: tls, acceptEncoding: headers["Accept-Encoding"] ?? StepRunner.defaultAcceptEncoding)
    // A body that holds one of the job's secrets is never sent on to another origin.
    if case .bytes(let bytes) = body {
      let text = String(decoding: bytes, as: UTF8.self)
      if manifest.redactor.redact(text) != text { request.secretBody = "base_url" }
    }
    return request
  }

  /// What an `http` step asks for without an `Accept-Encoding` of its own: `gzip`. A
  /// compressed answer is decoded as it arrives and is not resumed (a standard `Range`
  /// counts the compressed bytes, which the part does not hold; `Download`): a page broken
  /// mid-answer is asked again from byte 0, and a resume of an uncompressed one asks for
  /// `identity`.
  static let defaultAcceptEncoding = "gzip"

  /// A non-2xx answer as an error whose message ends with the answer's body.
  static func statusError(_ response: HTTPResponse, url: String) -> HTTPStatusError {
    // One line without control characters: the server's text must not pass for log lines.
    var error = HTTPStatusError(status: response.status, url: url, bodyExcerpt: HTTPStatusError.excerpt(of: response, limit: 4000))
    error.readRetryAfter(response.headers["Retry-After"])
    return error
  }
}
