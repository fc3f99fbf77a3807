public import Foundation
internal import Glibc

/// A child process started with `posix_spawn(3)` and reaped with `waitpid(2)` by this object
/// alone, so that a test can signal it at a chosen instant without racing a reaper: the pid
/// stays ours (a zombie at worst) until `wait` collects it.
///
/// Standard output and error go to files (read them with `output` and `errors`); standard
/// input is `/dev/null`. The child starts with no signal blocked and SIGINT, SIGTERM, SIGHUP
/// and SIGPIPE at their defaults, whatever the test runner's mask.
public final class ChildProcess {
  /// How the child ended.
  public enum Termination: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
      switch self {
      case .exited(let code): "exit \(code)"
      case .signaled(let signal): "killed by signal \(signal)"
      }
    }
  }

  public let pid: pid_t
  public let outputPath: String
  public let errorsPath: String
  public private(set) var termination: Termination?
  /// When the child was started.
  public let startedAt = Date()

  /// Starts `executable` with `arguments` and the test process's environment merged with
  /// `environment`, writing its output to `<logPrefix>.out` and `<logPrefix>.err`.
  /// - Throws: `TestSupportError` when `posix_spawn` fails.
  public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], logPrefix: String) throws {
    outputPath = logPrefix + ".out"
    errorsPath = logPrefix + ".err"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    // No other descriptor of the test process: an inherited pipe end would keep another
    // test's reader waiting for this child. glibc ignores closing a descriptor that is
    // closed meanwhile (spawni.c: "Signal errors only for file descriptors out of range").
    for fd in ChildProcess.openDescriptors() where fd > 2 {
      posix_spawn_file_actions_addclose(&actions, fd)
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { $1 }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for p in argv { free(p) }
      for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard rc == 0 else { throw TestSupportError("cannot start \(executable): \(String(cString: strerror(rc)))") }
    self.pid = pid
  }

  /// Starts the built `dray` with `arguments`.
  public static func dray(_ arguments: [String], environment: [String: String] = [:], logPrefix: String) throws -> ChildProcess {
    try ChildProcess(Repository.drayBinary, arguments, environment: environment, logPrefix: logPrefix)
  }

  deinit {
    if termination == nil {
      kill(pid, SIGKILL)
      _ = wait()
    }
  }

  /// Collects the child's end when it has ended, without waiting.
  @discardableResult
  public func poll() -> Termination? {
    if let termination { return termination }
    var status: Int32 = 0
    let rc = waitpid(pid, &status, WNOHANG)
    if rc == pid { termination = ChildProcess.decode(status) }
    return termination
  }

  /// True until the child has ended.
  public var isRunning: Bool { poll() == nil }

  /// Waits for the child to end.
  @discardableResult
  public func wait() -> Termination {
    if let termination { return termination }
    var status: Int32 = 0
    var rc: pid_t
    repeat { rc = waitpid(pid, &status, 0) } while rc == -1 && errno == EINTR
    // -1: collected by someone else (it should never be), so its end is unknown.
    let ended = rc == pid ? ChildProcess.decode(status) : .exited(-1)
    termination = ended
    return ended
  }

  /// Waits up to `seconds` for the child to end.
  /// - Returns: its end, or nil when it is still running.
  public func wait(timeout seconds: Double) -> Termination? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if let ended = poll() { return ended }
      usleep(2_000)
    }
    return poll()
  }

  /// Waits while the child runs until `condition` holds, checking every 5 ms.
  /// - Returns: true when the condition held before the child ended and within `timeout`.
  public func waitUntil(timeout seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      if poll() != nil { return condition() }
      usleep(5_000)
    }
    return false
  }

  /// Sends `signal` to the child, when it has not been collected yet.
  public func send(_ signal: Int32) {
    if termination == nil { kill(pid, signal) }
  }

  /// What the child wrote to standard output so far.
  public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
  /// What the child wrote to standard error so far.
  public var errors: String { (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "" }

  /// The descriptors open in this process, from `/proc/self/fd`.
  static func openDescriptors() -> [Int32] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
  }

  private static func decode(_ status: Int32) -> Termination {
    // The <sys/wait.h> macros are not imported into Swift; this is their glibc definition.
    let signal = status & 0x7f
    return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
  }
}
