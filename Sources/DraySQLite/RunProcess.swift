internal import Foundation
internal import Glibc

/// Whether the process a journal row names is still running that run, on this host.
///
/// The job's lock keeps runs from one folder apart, but two folders (or two `state.path`s)
/// may share one database, and so one journal. A `running` row is taken as live when its
/// process exists (`kill(pid, 0)`), is a dray (its `/proc/PID/comm` or executable's name is
/// `dray` or this process's own), and started no later than the run did (its start time in
/// `/proc/PID/stat`, so a process id used again by a later dray does not count). Anything
/// else means the run's process is gone: it was killed, crashed, or the machine restarted.
///
/// The check sees this host only: jobs sharing a database run on one machine (SQLite over a
/// network file system is not safe anyway, https://sqlite.org/useovernet.html).
enum RunProcess {
  /// Seconds a process may seem to have started after its run: `/proc` counts in clock
  /// ticks from a boot time given in whole seconds.
  static let tolerance: TimeInterval = 2

  /// Whether process `pid` may be the dray that recorded a run starting at `startedAt`.
  static func isAlive(pid: Int, startedAt: Date?) -> Bool {
    guard pid > 0, pid != Int(getpid()), pid <= Int(Int32.max) else { return false }
    guard kill(pid_t(pid), 0) == 0 || errno == EPERM else { return false }
    // Without /proc nothing more can be told: a live process may be the run.
    guard let stat = read("/proc/\(pid)/stat") else { return true }
    if let names = ownNames(), !names.isEmpty {
      let comm = read("/proc/\(pid)/comm")?.trimmingCharacters(in: .newlines)
      let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")).map {
        ($0 as NSString).lastPathComponent
      }
      guard [comm, exe].contains(where: { $0.map(names.contains) ?? false }) else { return false }
    }
    if let startedAt, let processStart = startTime(stat: stat) {
      return processStart <= startedAt.addingTimeInterval(tolerance)
    }
    return true
  }

  /// `dray` and this process's own names (command and executable), which a run of another
  /// build or an installed copy shares.
  private static func ownNames() -> Set<String>? {
    var names: Set<String> = ["dray"]
    if let comm = read("/proc/self/comm")?.trimmingCharacters(in: .newlines) { names.insert(comm) }
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      names.insert((exe as NSString).lastPathComponent)
    }
    return names
  }

  /// When the process of `/proc/PID/stat` started: field 22, clock ticks after the boot
  /// time (`btime` in `/proc/stat`), proc(5).
  private static func startTime(stat: String) -> Date? {
    // The command name (field 2) is in parentheses and may hold spaces; fields after it
    // start at field 3.
    guard let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
    guard let boot = read("/proc/stat")?.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
      let bootTime = Double(boot.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
    else { return nil }
    let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    guard perSecond > 0 else { return nil }
    return Date(timeIntervalSince1970: bootTime + ticks / perSecond)
  }

  private static func read(_ path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return String(decoding: data, as: UTF8.self)
  }
}
