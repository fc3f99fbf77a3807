/// A call to any HTTP API (step `http`): one request, or one per page, whose answer is saved
/// as is or turned into rows (docs/http.md).
///
/// ```yaml
/// - id: items
///   http:
///     base_url: https://api.example.com/v2/
///     path: items
///     query: { status: active }
///     auth: { bearer: "${API_TOKEN}" }
///     load: { table: items, records: /data }
///     paginate: { next: /links/next }
///     on_status: { 404: empty }
/// ```
public struct HTTPStep: Sendable, Hashable {
  /// Request methods the step sends.
  public enum Method: String, Sendable, Hashable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
  }

  /// A request body.
  public enum Body: Sendable, Hashable {
    /// Sent as `application/json`.
    case json(JSONValue)
    /// Sent as `application/x-www-form-urlencoded`, fields in order.
    case form([QueryItem])
  }

  /// How the request proves who is calling.
  public enum Auth: Sendable, Hashable {
    /// `Authorization: Bearer <token>` (RFC 6750 §2.1).
    case bearer(token: String)
    /// `Authorization: Basic base64(username:password)` (RFC 7617).
    case basic(username: String, password: String)
    /// An OAuth 2.0 access token from a token endpoint (RFC 6749 §4.4, §6), sent as
    /// `Authorization: Bearer <token>`; see `OAuth2`.
    case oauth2(OAuth2)
    /// A key sent in a request header or a query parameter of every request; see `APIKey`.
    case apiKey(APIKey)
    /// A session token a login endpoint hands out for a user and password, sent in a header
    /// of every request; see `Login`.
    case login(Login)
  }

  /// An `auth.api_key`: a key the API gave, sent with every request.
  public struct APIKey: Sendable, Hashable {
    /// Where the key goes.
    public enum Place: Sendable, Hashable {
      /// A request header field of this name (`X-API-Key`).
      case header(String)
      /// A query parameter of this name (`api_key`), after the step's own.
      case query(String)
    }

    public var place: Place
    public var value: String

    public init(place: Place, value: String) {
      self.place = place
      self.value = value
    }
  }

  /// Where the rows of an answer go.
  public struct Load: Sendable, Hashable {
    /// The table to fill; replaced whole when the step finishes.
    public var table: String
    /// Where the records are in each answer: a JSON Pointer (RFC 6901) or an XML element
    /// path. The empty pointer is the whole document.
    public var records: RecordSelector
    /// Declared columns, in order; nil to infer them from the records.
    public var columns: [Column]?
    /// Conditions the loaded table must meet before it replaces the old one (`rows`, or a
    /// column's values); see `Expectation`.
    public var expect: [Expectation]
    /// How the loaded records meet the table's rows.
    public var write: WriteMode
    /// The record fields that identify a row (`merge`), in order.
    public var primaryKey: [String]
    /// A JSON Pointer to a boolean in each record: true deletes the row with that key
    /// (`merge` only).
    public var deleted: JSONPointer?
    /// What a record that does not fit the table does: a field without a column, a value
    /// its column's type does not hold (`load.contract`, docs/http.md "Contract").
    public var contract: Contract
    /// Where records the contract sets aside or trims are noted (`load.quarantine`).
    public var quarantine: Quarantine
    /// Whether an answer without records is valid where it would empty a table holding rows
    /// (`replace` of a full answer, or an incremental step's `--fresh` start); otherwise such
    /// a load fails and keeps the table (docs/http.md, "No records never empties a table
    /// unasked").
    public var allowEmpty: Bool
    /// Whether a full `merge` pull deletes the rows of the table whose primary key none of
    /// its records held, in the transaction that publishes it, once every page arrived
    /// (`load.delete_missing`, docs/http.md "Deleting what the API no longer lists"). Only
    /// with `write: merge` and `primary_key`, without `incremental` or `partitions`.
    public var deleteMissing: Bool

    public init(
      table: String, records: RecordSelector, columns: [Column]? = nil, expect: [Expectation] = [], write: WriteMode = .replace,
      primaryKey: [String] = [], deleted: JSONPointer? = nil, contract: Contract = Contract(), quarantine: Quarantine = Quarantine(),
      allowEmpty: Bool = false, deleteMissing: Bool = false
    ) {
      self.table = table
      self.records = records
      self.columns = columns
      self.expect = expect
      self.write = write
      self.primaryKey = primaryKey
      self.deleted = deleted
      self.contract = contract
      self.quarantine = quarantine
      self.allowEmpty = allowEmpty
      self.deleteMissing = deleteMissing
    }
  }

  /// What a load does with records that do not fit its table (`load.contract`, docs/http.md
  /// "Contract").
  ///
  /// A record's field is a new column when the table exists (or `load.columns` are declared)
  /// and has no column of its name; a value does not fit its column when the column's type
  /// (the table's, else the declared one) cannot hold it (`ColumnType.holds`). Columns first
  /// seen in this run take the type that holds all their values, as they always have.
  public struct Contract: Sendable, Hashable {
    /// A field the table has no column for. Without declared columns the default is
    /// `evolve`; with them, nil: fields the columns do not name are not read.
    public var newColumns: Rule?
    /// A value its column's type does not hold; also a record without its primary key.
    public var types: TypeRule

    public init(newColumns: Rule? = nil, types: TypeRule = .asGiven) {
      self.newColumns = newColumns
      self.types = types
    }

    /// `newColumns` as it applies to a load with or without declared columns: nil only
    /// with declared columns and no rule given (their fields are not read).
    public func newColumnsRule(declaredColumns: Bool) -> Rule? { newColumns ?? (declaredColumns ? nil : .evolve) }

    /// Whether a rule can put a record in the quarantine: `discard_row` or `discard_value`
    /// in `newColumns` or `types`.
    public var setsAside: Bool {
      [.discardRow, .discardValue].contains(newColumns) || [.discardRow, .discardValue].contains(types)
    }
  }

  /// One rule of `load.contract`.
  public enum Rule: String, Sendable, Hashable, CaseIterable {
    /// The table changes to take the record: a column is added, or widened.
    case evolve
    /// The step fails, naming the first offending record and field; nothing is published.
    case freeze
    /// The record is set aside in the quarantine, not loaded.
    case discardRow = "discard_row"
    /// The record is loaded without the field, and noted in the quarantine.
    case discardValue = "discard_value"
  }

  /// `load.contract.types`: a `Rule`, or `as_given` (the default, today's behaviour): the
  /// value goes to the database as it is, which stores it on SQLite (whose columns take any
  /// value) and refuses it on PostgreSQL (`StagedValueError`).
  public enum TypeRule: String, Sendable, Hashable, CaseIterable {
    case asGiven = "as_given"
    case evolve
    case freeze
    case discardRow = "discard_row"
    case discardValue = "discard_value"
  }

  /// `load.quarantine`: the table records set aside or trimmed are noted in, and the bounds
  /// past which the load fails.
  public struct Quarantine: Sendable, Hashable {
    /// The table's name; nil: `<load.table>_rejected` (`TableNaming.quarantine`).
    public var table: String?
    /// Most records a run may set aside or trim; past it the load fails, nothing published.
    public var maxRows: Int?
    /// Most share (0...1) of a run's records that may be set aside or trimmed.
    public var maxShare: Double?

    /// The quarantine's name for a load into `table` when `load.quarantine` names none,
    /// before a database fits it (`TableNaming.quarantine`): `<table>_rejected`.
    public static func defaultName(for table: String) -> String { table + "_rejected" }

    public init(table: String? = nil, maxRows: Int? = nil, maxShare: Double? = nil) {
      self.table = table
      self.maxRows = maxRows
      self.maxShare = maxShare
    }

    /// The bound `total` records set aside or trimmed of `records` read passes, as the
    /// manifest names it (`load.quarantine.max_rows (100)`); nil when within both bounds.
    /// `unit` names what was read ("row", "record").
    public func passedBound(total: Int, of records: Int, unit: String) -> String? {
      if let maxRows, total > maxRows { return "load.quarantine.max_rows (\(maxRows))" }
      if let maxShare, records > 0, Double(total) / Double(records) > maxShare {
        return "load.quarantine.max_share (\(maxShare) of \(records) \(unit)s)"
      }
      return nil
    }
  }

  /// How a load's records meet the rows already in its table (`load.write`).
  public enum WriteMode: String, Sendable, Hashable, CaseIterable {
    /// The records replace every row.
    case replace
    /// The records are added to the rows.
    case append
    /// A record whose primary key is in the table updates that row; any other is added.
    case merge
  }

  /// A step that fetches only what changed since its last run (`incremental`).
  ///
  /// dray keeps the highest value of `cursor` among the records it has published, per job
  /// and step, and sends it (less `lag` for RFC 3339 instants) as the query parameter
  /// `param` on the first page; `initial` is sent before any value is kept.
  public struct Incremental: Sendable, Hashable {
    /// Where the growing value is in each record (JSON Pointer, RFC 6901).
    public var cursor: JSONPointer
    /// The query parameter that sends the value.
    public var param: String
    /// The value of the first run: a string or a number, as the records give it.
    public var initial: IncrementalCursor.Value
    /// A window re-read before the kept value, for records that arrive late; instants only.
    public var lag: Duration?
    /// Whether the API's parameter answers the records at the value sent (docs/http.md,
    /// "Cursor boundaries").
    public var boundary: IncrementalCursor.Boundary

    public init(
      cursor: JSONPointer, param: String, initial: IncrementalCursor.Value, lag: Duration? = nil,
      boundary: IncrementalCursor.Boundary = .inclusive
    ) {
      self.cursor = cursor
      self.param = param
      self.initial = initial
      self.lag = lag
      self.boundary = boundary
    }

    /// The value a run sends when `kept` is kept (docs/http.md, "Cursor boundaries"): `kept`
    /// less `lag` (instants only), and for an `exclusive` API the predecessor of that, so
    /// that the records at the kept value come back (the lagged value itself when it has no
    /// predecessor but is below the kept one). Nil for an `exclusive` API when the kept
    /// value has no predecessor (`IncrementalCursor.Value.predecessor`): sending the value
    /// itself would lose the records arriving later at it, so the run fails instead.
    public func sent(kept: IncrementalCursor.Value) -> IncrementalCursor.Value? {
      let moved = kept.moved(back: lag)
      guard boundary == .exclusive else { return moved }
      // A lag that reached 0000-01-01T00:00:00Z is below the kept value already.
      return moved.predecessor ?? (moved.compare(kept) == -1 ? moved : nil)
    }

    /// Why a run cannot send anything for `kept` (`sent(kept:)` is nil), for messages:
    /// what, where, and what to do.
    public func noValueBelow(kept: IncrementalCursor.Value) -> String {
      let what =
        kept.isText
        ? "text, which has no value just below it"
        : kept.isNumber
          ? "a number a double cannot hold (beyond about 1.8e308, or below about 4.9e-324), so dray computes no value just below it that an API could tell apart from it"
          : "at or before 0000-01-01T00:00:00Z, the first instant RFC 3339 writes, so no value just below it has a form"
      return "the kept cursor \(kept.text) (incremental.cursor '\(cursor)') is \(what); incremental.boundary exclusive sends the value "
        + "just below the kept one, and sending the kept value itself would lose the records that arrive later at it, so nothing was "
        + "sent. Use boundary: inclusive if the API answers the records at the value sent (>=), or run with --fresh to start again from 'initial'"
    }
  }

  /// A declared column.
  public struct Column: Sendable, Hashable {
    public var name: String
    public var type: ColumnType
    /// Where the value is inside a record; nil for the member (JSON) or the child element or
    /// attribute (XML) named like the column.
    public var from: RecordSelector?

    public init(name: String, type: ColumnType, from: RecordSelector? = nil) {
      self.name = name
      self.type = type
      self.from = from
    }
  }

  /// How the step finds the next page.
  public enum Pagination: Sendable, Hashable {
    /// The next page's URL is in the answer, at `selector`; a missing, null or empty value ends.
    case next(RecordSelector)
    /// The next page's URL is the `rel="next"` target of the `Link` header (RFC 8288).
    case linkHeader
    /// `param` counts records from `start`; pages hold `limit` records, sent as `limitParam`;
    /// a page with fewer records is the last.
    case offset(param: String, limitParam: String, limit: Int, start: Int)
    /// The answer holds the next page's cursor at `from`, sent back as `param`; a missing,
    /// null or empty cursor ends.
    case cursor(param: String, from: RecordSelector)
    /// The next page's cursor is the value at `field` in the page's last record (Stripe's
    /// `starting_after`), sent as `param`; a page without records is the last.
    case lastRecord(param: String, field: JSONPointer)
    /// The answer holds the next page's cursor at `from`, sent inside the JSON body at
    /// `body` (GraphQL's `pageInfo.endCursor` into `variables.after`); a missing, null or
    /// empty cursor ends.
    case bodyCursor(from: RecordSelector, body: JSONPointer)
    /// Pages are numbered from `start`, sent as `param`; an empty page is the last.
    case page(param: String, start: Int)

    /// The ways to find the next page, by their manifest keys under `paginate`; a step gives
    /// exactly one.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
      case next
      case linkHeader = "link_header"
      case offset, cursor, page
    }
  }

  /// What a status that is not 2xx does.
  public enum StatusOutcome: String, Sendable, Hashable, CaseIterable {
    /// Fail the step; the answer's body becomes the error message.
    case fail
    /// Treat the answer as an empty page: no rows, no next page.
    case empty
    /// Try again under the step's retry policy.
    case retry
  }

  /// One `on_status` entry: a status (`404`) or a class (`4xx`, `5xx`).
  public struct StatusRule: Sendable, Hashable {
    /// The statuses a rule covers.
    public enum Match: Sendable, Hashable {
      /// One status: `404`.
      case status(Int)
      /// A class of statuses by its hundreds: 4 for `4xx`.
      case statusClass(Int)

      /// `404` or `4xx`, as the manifest writes it.
      public var key: String {
        switch self {
        case .status(let status): "\(status)"
        case .statusClass(let hundreds): "\(hundreds)xx"
        }
      }
    }

    public var match: Match
    public var outcome: StatusOutcome

    public init(_ match: Match, outcome: StatusOutcome) {
      self.match = match
      self.outcome = outcome
    }

    /// `404` or `4xx`.
    public var key: String { match.key }
  }

  public var method: Method
  /// `http://` or `https://` address; `path` is appended to it.
  public var baseURL: String
  public var path: String?
  public var query: [QueryItem]
  public var headers: [HTTPHeader]
  public var body: Body?
  public var auth: Auth?
  public var tls: TLSSettings
  /// How to read the answer: JSON or XML.
  public var format: AnswerFormat
  /// File to save the answer to, relative to the job folder; with pagination it holds
  /// `{page}`, replaced by the page number.
  public var output: String?
  public var load: Load?
  public var paginate: Pagination?
  /// Most pages fetched; nil for no bound.
  public var maxPages: Int?
  /// Where each answer says whether more pages exist (`paginate.more`): false, null or
  /// absent ends the pull, whatever the pagination kind finds.
  public var more: RecordSelector?
  public var onStatus: [StatusRule]
  public var incremental: Incremental?
  /// The request budget of the step's host (`rate_limit`); nil for none.
  public var rateLimit: RateLimit?

  /// `rate_limit`: at most `requests` requests in any window of `per`, counted per host
  /// (origin) over the whole run and shared by every step that names the host; where steps
  /// give different budgets for one host, each holds, so the lowest wins (docs/http.md,
  /// "Request budget"). Token endpoint requests are not counted.
  public struct RateLimit: Sendable, Hashable {
    /// At least 1.
    public var requests: Int
    /// Longer than zero.
    public var per: Duration

    public init(requests: Int, per: Duration) {
      self.requests = requests
      self.per = per
    }
  }

  public init(
    method: Method = .get, baseURL: String, path: String? = nil, query: [QueryItem] = [], headers: [HTTPHeader] = [],
    body: Body? = nil, auth: Auth? = nil, tls: TLSSettings = TLSSettings(), format: AnswerFormat = .json,
    output: String? = nil, load: Load? = nil, paginate: Pagination? = nil, maxPages: Int? = nil, onStatus: [StatusRule] = [],
    incremental: Incremental? = nil, more: RecordSelector? = nil, rateLimit: RateLimit? = nil
  ) {
    self.rateLimit = rateLimit
    self.more = more
    self.method = method
    self.baseURL = baseURL
    self.path = path
    self.query = query
    self.headers = headers
    self.body = body
    self.auth = auth
    self.tls = tls
    self.format = format
    self.output = output
    self.load = load
    self.paginate = paginate
    self.maxPages = maxPages
    self.onStatus = onStatus
    self.incremental = incremental
  }

  /// Statuses retried when `on_status` says nothing about them: the platform's transient
  /// statuses (RFC 9110 §15.5.9, §15.6; RFC 6585 §4).
  public static let defaultRetryStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

  /// What `status` (not 2xx) does: the exact rule, else the class rule, else the default
  /// (retry the transient statuses, fail every other).
  public func outcome(for status: Int) -> StatusOutcome {
    if let rule = onStatus.first(where: { $0.match == .status(status) }) { return rule.outcome }
    if let rule = onStatus.first(where: { $0.match == .statusClass(status / 100) }) { return rule.outcome }
    return HTTPStep.defaultRetryStatuses.contains(status) ? .retry : .fail
  }

  /// Whether `on_status` names `status` (exactly or by class) with `retry`.
  public func declaresRetry(_ status: Int) -> Bool {
    onStatus.contains { $0.outcome == .retry && ($0.match == .status(status) || $0.match == .statusClass(status / 100)) }
  }

  /// The request's URL without pagination parameters: `base_url` and `path` joined by one
  /// slash, then `query`.
  public var url: String { url(adding: []) }

  /// The request's URL with `extra` query parameters after `query` (a name in `extra`
  /// replaces the same name in `query`).
  public func url(adding extra: [QueryItem]) -> String {
    var url = baseURL
    if let path, !path.isEmpty {
      while url.hasSuffix("/") { url.removeLast() }
      var rest = Substring(path)
      while rest.hasPrefix("/") { rest = rest.dropFirst() }
      url += "/" + HTTPStep.encodePath(String(rest))
    }
    let names = Set(extra.map(\.name))
    let items = query.filter { !names.contains($0.name) } + extra
    guard !items.isEmpty else { return url }
    return url + (url.contains("?") ? "&" : "?") + QueryItem.encode(items)
  }

  /// A path with the characters a URL cannot hold percent-encoded (RFC 3986 §3.3); `/`,
  /// `%`, `?`, `&`, `=` and the other reserved characters are kept as written.
  static func encodePath(_ path: String) -> String {
    var out = ""
    for byte in path.utf8 {
      let c = Unicode.Scalar(byte)
      if byte < 0x80 && byte > 0x20 && !"\"<>\\^`{|}".unicodeScalars.contains(c) && byte != 0x7F {
        out.unicodeScalars.append(c)
      } else {
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return out
  }
}

/// One query parameter or form field.
public struct QueryItem: Sendable, Hashable {
  public var name: String
  public var value: String

  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }

  /// Some names of query parameters and form fields whose values are credentials
  /// (`CredentialName` holds the rule, which names these and many more).
  public static let secretNames: Set<String> = [
    "api_key", "apikey", "access_token", "token", "key", "password", "secret", "client_secret", "signature", "sig",
  ]

  /// Whether the value is a credential, by its name (`CredentialName.isCredential`): masked
  /// like a password, and left out of the step's fingerprint.
  public var isSecret: Bool { CredentialName.isCredential(name) }

  /// `a=1&b=x%20y`: names and values percent-encoded as `application/x-www-form-urlencoded`
  /// writes them, with spaces as `%20`.
  public static func encode(_ items: [QueryItem]) -> String {
    items.map { Redactor.percentEncoded($0.name) + "=" + Redactor.percentEncoded($0.value) }.joined(separator: "&")
  }
}

/// How an answer is read.
public enum AnswerFormat: String, Sendable, Hashable, CaseIterable {
  case json, xml
}

/// A declared column type (SQLite type affinity names, https://sqlite.org/datatype3.html).
public enum ColumnType: String, Sendable, Hashable, CaseIterable {
  case text = "TEXT", integer = "INTEGER", real = "REAL", numeric = "NUMERIC"
}

extension HTTPStep.Auth {
  /// The `Authorization` header's value; nil for `oauth2` and `login`, whose tokens come
  /// from their endpoints while the run goes, and for `api_key`, which names its own place.
  public var authorization: String? {
    switch self {
    case .bearer(let token): "Bearer \(token)"
    case .basic(let username, let password): "Basic " + Base64.encode(Array("\(username):\(password)".utf8))
    case .oauth2, .apiKey, .login: nil
    }
  }

  /// The header this sign-in sets, lower case: `authorization`, or `api_key`'s or
  /// `login`'s own; nil for an `api_key` sent in the query.
  public var headerName: String? {
    switch self {
    case .bearer, .basic, .oauth2: "authorization"
    case .apiKey(let key):
      if case .header(let name) = key.place { name.lowercased() } else { nil }
    case .login(let login): login.header.lowercased()
    }
  }

  /// The login settings, for `login`.
  public var login: Login? {
    if case .login(let settings) = self { return settings }
    return nil
  }

  /// The OAuth 2.0 settings, for `oauth2`.
  public var oauth2: OAuth2? {
    if case .oauth2(let settings) = self { return settings }
    return nil
  }
}

/// Base64 (RFC 4648 §4), with padding.
public enum Base64 {
  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  public static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i < bytes.count {
      let b0 = bytes[i]
      let b1 = i + 1 < bytes.count ? bytes[i + 1] : 0
      let b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
      out.append(alphabet[Int(b0 >> 2)])
      out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
      out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
      out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
      i += 3
    }
    return String(decoding: out, as: UTF8.self)
  }
}
