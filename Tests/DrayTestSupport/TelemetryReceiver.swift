import Foundation

/// The OpenLineage and OTLP test receiver (`Emulator/telemetry_receiver.py`) as a child
/// process on 127.0.0.1: it keeps every POST and answers it `--status` (200 by default).
public final class TelemetryReceiver: Sendable {
  private let server: ServerProcess
  /// The receiver's address, ending with `/`.
  public var url: String { server.url }

  /// - Parameter status: what every POST is answered; 0: it is kept and never answered.
  /// - Throws: when python3 cannot start or the receiver prints no address within 10 s.
  public init(status: Int = 200) throws {
    server = try ServerProcess(script: "telemetry_receiver.py", name: "telemetry receiver", ["--status", String(status)])
  }

  /// What the receiver kept, as its `/_received` JSON text: `[{"path", "headers", "body"}]`.
  public func receivedText() throws -> String {
    String(decoding: try Curl.send("GET", url + "_received"), as: UTF8.self)
  }

  /// The POSTs received, oldest first.
  public func received() throws -> [[String: Any]] {
    (try JSONSerialization.jsonObject(with: Data(try receivedText().utf8)) as? [[String: Any]]) ?? []
  }
}

/// `scripts/check-telemetry.py`, run in a virtualenv under `.build/telemetry-tools` holding
/// the packages `scripts/telemetry-requirements.txt` pins (`opentelemetry-proto`,
/// `openlineage-python`), installed from PyPI the first time and whenever the file changes.
public enum TelemetryCheck {
  static let venv = Repository.root + "/.build/telemetry-tools/venv"

  /// The virtualenv's python, made once per test process.
  static let python: Result<String, TestSupportError> = {
    let requirements = Repository.root + "/scripts/telemetry-requirements.txt"
    let marker = venv + "/pinned"
    let python = venv + "/bin/python3"
    let wanted = (try? String(contentsOfFile: requirements, encoding: .utf8)) ?? ""
    if (try? String(contentsOfFile: marker, encoding: .utf8)) == wanted, FileManager.default.isExecutableFile(atPath: python) {
      return .success(python)
    }
    do {
      let made = try Command.run("/usr/bin/python3", ["-m", "venv", "--clear", venv])
      guard made.status == 0 else { return .failure(TestSupportError("python3 -m venv failed: \(made.output)")) }
      let installed = try Command.run(venv + "/bin/pip", ["install", "-q", "-r", requirements])
      guard installed.status == 0 else { return .failure(TestSupportError("pip install -r \(requirements) failed: \(installed.output)")) }
      try wanted.write(toFile: marker, atomically: true, encoding: .utf8)
      return .success(python)
    } catch {
      return .failure(TestSupportError("cannot make the virtualenv \(venv): \(error)"))
    }
  }()

  /// Runs the checker on `path` (`mode`: `otlp` or `openlineage`).
  /// - Returns: what it printed (JSON) and its problems (standard error; empty when none).
  public static func check(_ mode: String, _ path: String) throws -> (json: Any, problems: String) {
    let python = try python.get()
    let result = try Command.run(python, [Repository.root + "/scripts/check-telemetry.py", mode, path])
    let json = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) ?? []
    return (json, result.status == 0 ? "" : result.stderr + result.stdout)
  }
}
