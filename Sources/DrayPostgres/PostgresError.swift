internal import DrayModel
internal import Foundation

/// A failure reported by libpq or by the PostgreSQL server, with everything needed to act
/// on it and nothing secret.
///
/// Built on one checked path (`PostgresConnection`) for every libpq return. The fields are
/// the server's error report (PostgreSQL 15 documentation, §55.8 "Error and Notice Message
/// Fields"): `sqlState` (code `C`, Appendix A "PostgreSQL Error Codes"), `message` (`M`),
/// `detail` (`D`), `hint` (`H`). A connection that fails before the server answers
/// (refused, unreachable, closed) has no report; libpq's message is kept and `sqlState` is
/// the client-side class `08001` (could not connect) or `08006` (connection lost), see
/// `PostgresError.connectionFailure`.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Five characters, e.g. `28P01`; class `08` for connection failures.
  public var sqlState: String?
  /// The primary message, one line, as the server or libpq wrote it.
  public var message: String
  public var detail: String?
  public var hint: String?
  /// The SQL statement that failed; nil for a connection attempt.
  public var statement: String?
  /// `PostgresURL.redacted` of the connection: the password never appears.
  public var url: String
  /// The time limit of `database.timeouts` that ended the statement, when one did.
  public var timeout: PostgresTimeout?

  public init(
    sqlState: String?, message: String, detail: String? = nil, hint: String? = nil, statement: String? = nil,
    url: String
  ) {
    self.sqlState = sqlState
    self.message = message
    self.detail = detail
    self.hint = hint
    self.statement = statement
    self.url = url
  }

  /// True when trying again later may succeed, so the job's `retry` policy applies:
  ///
  /// | SQLSTATE | meaning (Appendix A) |
  /// |---|---|
  /// | class `08` but `08004` | connection exception: refused, reset, lost (also libpq's own failures) |
  /// | `57P01`, `57P02`, `57P03` | admin shutdown, crash shutdown, cannot connect now (starting up, restarting, in recovery) |
  /// | `53300` | too many connections |
  /// | `40001`, `40P01` | serialization failure, deadlock detected |
  /// | `55P03` | lock not available |
  ///
  /// Every other code is permanent: `08004` (the TLS `sslmode` asks for and the server's
  /// disagree), `28P01` (bad password), `28000` (no such role or no
  /// `pg_hba.conf` entry), `3D000` (no such database), `42501` (no privilege), `42P01`
  /// (no such table), `22xxx` (bad data), and so on. Running again would fail the same way.
  public var isTransient: Bool {
    guard let code = sqlState else { return false }
    if code.hasPrefix("08") { return code != "08004" }
    return ["57P01", "57P02", "57P03", "53300", "40001", "40P01", "55P03"].contains(code)
  }

  /// One line for people: what happened at which server, and what to do.
  ///
  /// ```
  /// PostgreSQL at postgresql://loader:***@127.0.0.1:5432/warehouse refused the password for user "loader": check database.password, PGPASSWORD or ~/.pgpass
  /// ```
  public var userMessage: String {
    let at = "PostgreSQL at \(url)"
    if let timeout { return timeout.message(at: at) }
    if sqlState == "42P01", let foldedName {
      // `relation "big__output_table" does not exist` for `BIG__output_table` written unquoted.
      return
        "\(at): \(message) (SQLSTATE 42P01); PostgreSQL folds a name written without quotes to lower case: write \"\(foldedName)\" in double quotes"
    }
    switch sqlState {
    case "28P01" where message.contains("no password supplied"):
      return "\(at) asks for a password and none was given: set database.password (or PGPASSWORD, PGPASSFILE, ~/.pgpass)"
    case "28P01":
      return
        "\(at) refused the password\(Self.quotedUser(in: message).map { " for user \($0)" } ?? ""): check database.password (or PGPASSWORD, PGPASSFILE, ~/.pgpass)"
    case "3D000":
      return "\(at): \(message); create it (createdb) or name an existing database in database.url"
    case "28000":
      return "\(at) refused the connection: \(message); ask the database administrator for a role and a pg_hba.conf entry"
    case "42501":
      return
        "\(at): \(message); grant the role the privilege (for a schema: GRANT USAGE, CREATE ON SCHEMA ... TO ...) or choose another database.schema"
    case "3F000":
      return "\(at): \(message); create the schema (CREATE SCHEMA ... AUTHORIZATION the role) or choose another database.schema"
    case "08004":
      return "cannot connect securely to \(at): \(message); check sslmode (and sslrootcert) in database.url against the server's TLS setup"
    case "08001":
      return "cannot reach \(at): \(message); check the host and port in database.url and that the server runs and accepts TCP connections"
    case "53300":
      return "\(at) has no free connection slot: \(message); run again later or raise max_connections"
    case "57P01", "57P02", "57P03", "08006", "08003", "08000", "08P01":
      return "\(at) closed the connection: \(message); run again to resume from the last commit"
    default:
      return "\(at): \(message)\(sqlState.map { " (SQLSTATE \($0))" } ?? "")"
    }
  }

  /// `userMessage`, then the detail, the hint and the statement on lines of their own.
  public var description: String {
    var text = userMessage
    if let detail { text += "\n  detail: \(detail)" }
    if let hint { text += "\n  hint: \(hint)" }
    if let statement { text += "\n  statement: \(statement)" }
    return text
  }

  /// For `relation "x" does not exist`: the name as the statement wrote it, unquoted and
  /// with capitals, when that is what PostgreSQL folded to `x`; nil otherwise.
  var foldedName: String? {
    guard let statement, let range = message.range(of: "relation \""),
      let end = message[range.upperBound...].firstIndex(of: "\"")
    else { return nil }
    let folded = String(message[range.upperBound..<end])
    // The statement's words, split where an identifier cannot go on.
    let words = statement.split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" || $0 == "\"") }
    return words.first { $0.lowercased() == folded && $0 != folded && !$0.contains("\"") }.map(String.init)
  }

  /// `"loader"` from `password authentication failed for user "loader"`.
  private static func quotedUser(in message: String) -> String? {
    guard let range = message.range(of: "for user \"") else { return nil }
    let rest = message[range.upperBound...]
    guard let end = rest.firstIndex(of: "\"") else { return nil }
    return "\"\(rest[..<end])\""
  }

  /// A connection attempt that failed, from libpq's message (`PQerrorMessage`).
  ///
  /// libpq 15 has no SQLSTATE for a failed connection attempt, only text, so the server's
  /// (English) `FATAL` messages are recognised by their wording: `password authentication
  /// failed` (28P01), `no password supplied` (28P01), `database "..." does not exist`
  /// (3D000), `role "..." does not exist` and `no pg_hba.conf entry` (28000), `too many
  /// clients` (53300), `the database system is starting up / shutting down / in recovery
  /// mode` (57P03), TLS refusals (`SSL was required`, a `certificate` that does not verify:
  /// 08004). Anything else is `08001`: transient, as a refused or unreachable host is.
  static func connectionFailure(_ libpqMessage: String, url: PostgresURL) -> PostgresError {
    let text = libpqMessage.split(whereSeparator: \.isNewline).first.map { oneLine(String($0)) } ?? ""
    let rules: [(String, String)] = [
      ("password authentication failed", "28P01"), ("no password supplied", "28P01"),
      ("does not exist", "3D000"), ("no pg_hba.conf entry", "28000"),
      ("too many clients", "53300"), ("the database system is", "57P03"),
    ]
    var state = rules.first { text.contains($0.0) }?.1 ?? "08001"
    // libpq's own TLS refusals (`server does not support SSL, but SSL was required`, a
    // certificate that does not verify): running again fails the same way.
    if state == "08001" && (text.contains("SSL was required") || text.contains("certificate")) { state = "08004" }
    if state == "3D000" && text.contains("role \"") { state = "28000" }
    return PostgresError(sqlState: state, message: serverPart(text), url: url.redacted)
  }

  /// The server's own words from `connection to server at "h" (1.2.3.4), port 5432 failed:
  /// FATAL:  database "x" does not exist`, or libpq's message when the server said nothing.
  static func serverPart(_ text: String) -> String {
    for marker in ["FATAL:  ", "ERROR:  "] {
      if let r = text.range(of: marker, options: .backwards) { return String(text[r.upperBound...]) }
    }
    return text
  }

  /// libpq's messages end with a newline and may span lines; one line, trimmed.
  static func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty }.joined(separator: " ")
  }
}

/// How a time limit of `database.timeouts` ended a statement (docs/postgres.md, "Time
/// limits"). None is transient: a statement run again would wait behind the stalled
/// session's locks, so the step fails and the next run resumes from the last commit.
public enum PostgresTimeout: Sendable, Equatable {
  /// The server took none of what dray sent (a statement, a `COPY`'s rows) for `idle`:
  /// its process `backendPID` stopped reading. dray cancelled the statement and closed the
  /// connection.
  case sending(idle: Duration, backendPID: Int32)
  /// The server sent no answer within `after`, the `limits` named (`database.timeouts.statement
  /// 1h, then database.timeouts.idle 1m`). dray cancelled the statement and closed the
  /// connection.
  case answer(limits: String, after: Duration, backendPID: Int32)
  /// The server ended the statement itself after `limit`, its `statement_timeout`
  /// (SQLSTATE 57014).
  case statement(limit: Duration)

  /// What happened at `at` (`PostgreSQL at <url>`) and what to do.
  func message(at: String) -> String {
    let closed =
      "dray cancelled the statement and closed the connection, so nothing of it is kept; check that process on the server (pg_stat_activity: stopped, blocked, out of disk?), then run again to resume from the last commit"
    switch self {
    case .sending(let idle, let pid):
      return
        "\(at) took nothing dray sent for \(idle.formatted) (database.timeouts.idle): its server process \(pid) stalled; \(closed)"
    case .answer(let limits, let after, let pid):
      return "\(at) gave no answer for \(after.formatted) (\(limits)): its server process \(pid) stalled; \(closed)"
    case .statement(let limit):
      return
        "\(at) ended the statement after \(limit.formatted) (database.timeouts.statement, its statement_timeout); nothing of it is kept: raise database.timeouts.statement if the statement is meant to run longer"
    }
  }
}
