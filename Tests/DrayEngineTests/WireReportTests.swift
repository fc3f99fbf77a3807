import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// The report tells exactly what happened on the wire: for every fault the emulator injects
/// (Emulator/faults.py), the step's `attempts` and the emulator's request log list the same
/// requests, in the same order, with the same statuses.
@Suite struct WireReportTests {
  static let rpc = "/api/v1/rpc/COUNTRIES/"

  struct Fault: Sendable, CustomStringConvertible {
    var name: String
    /// The fault rules, a JSON list.
    var rules: String
    var description: String { name }
  }

  /// One fault per key of Emulator/faults.py (those that take effect on a resumed request
  /// follow a cut), `redirect` aside: a redirect is one attempt of two requests.
  static let faults = [
    Fault(name: "status", rules: #"[{"path": "\#(rpc)", "times": 1, "status": 503}]"#),
    Fault(name: "retry_after", rules: #"[{"path": "\#(rpc)", "times": 1, "status": 429, "retry_after": "0"}]"#),
    Fault(name: "echo", rules: #"[{"path": "\#(rpc)", "times": 1, "status": 500, "echo_authorization": true, "echo_body": true}]"#),
    Fault(name: "delay", rules: #"[{"path": "\#(rpc)", "times": 1, "delay": 0.2}]"#),
    Fault(name: "reset", rules: #"[{"path": "\#(rpc)", "times": 1, "reset": true}]"#),
    Fault(name: "hang", rules: #"[{"path": "\#(rpc)", "times": 1, "hang": true}]"#),
    Fault(name: "close_after", rules: #"[{"path": "\#(rpc)", "times": 1, "close_after": 100}]"#),
    Fault(name: "trickle", rules: #"[{"path": "\#(rpc)", "times": 1, "trickle": 200000}]"#),
    Fault(name: "stall_after", rules: #"[{"path": "\#(rpc)", "times": 1, "stall_after": 100, "stall_for": 3}]"#),
    Fault(name: "chunked", rules: #"[{"path": "\#(rpc)", "times": 1, "chunked": true, "close_after": 100}]"#),
    Fault(name: "close_delimited", rules: #"[{"path": "\#(rpc)", "times": 1, "close_delimited": true, "close_after": 100}]"#),
    Fault(
      name: "ignore_range",
      rules: #"[{"path": "\#(rpc)", "times": 1, "close_after": 100}, {"path": "\#(rpc)", "times": 1, "ignore_range": true}]"#),
    Fault(
      name: "change_etag",
      rules: #"[{"path": "\#(rpc)", "times": 1, "close_after": 100}, {"path": "\#(rpc)", "times": 1, "change_etag": true}]"#),
    Fault(
      name: "weak_etag",
      rules: #"[{"path": "\#(rpc)", "times": 1, "close_after": 100, "weak_etag": true}]"#),
    Fault(
      name: "answer_416",
      rules: #"[{"path": "\#(rpc)", "times": 1, "close_after": 100}, {"path": "\#(rpc)", "times": 1, "answer_416": true}]"#),
    Fault(name: "garble", rules: #"[{"path": "\#(rpc)", "times": 1, "garble": true}]"#),
    Fault(name: "sign-in status", rules: #"[{"path": "/api/v1/auth/", "times": 1, "status": 502}]"#),
  ]

  /// `<call> <status>` of each attempt (`-` when no answer came), calls named by path.
  static func wire(call: String?, status: Int?) -> String {
    "\(call ?? "call") \(status.map(String.init) ?? "-")"
  }

  static func call(ofPath path: String) -> String {
    if path.hasPrefix("/api/v1/auth/") { return "sign-in" }
    if path.hasPrefix("/api/v1/schema/") { return "schema" }
    return "call"
  }

  @Test(arguments: faults)
  func theReportsAttemptsAreTheRequestsTheServerReceived(fault: Fault) throws {
    let emulator = try Emulator()
    try emulator.admin("POST", "faults", json: fault.rules)
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "wire") + """
        steps:
          - id: countries
            table_stream: { resource: COUNTRIES }
        """)
    let attempts = report.steps[0].attempts.map { WireReportTests.wire(call: $0.call, status: $0.status) }
    let logged = try emulator.requests().compactMap { entry -> String? in
      guard let path = entry["path"] as? String, !path.hasPrefix("/admin/") else { return nil }
      return WireReportTests.wire(call: WireReportTests.call(ofPath: path), status: entry["status"] as? Int)
    }
    #expect(attempts == logged, "\(report.steps[0].attempts.map(\.outcome.code))")
    var counted: [Int: Int] = [:]
    for entry in try emulator.requests() { if let status = entry["status"] as? Int { counted[status, default: 0] += 1 } }
    #expect(report.steps[0].httpStatuses == counted)
  }
}
