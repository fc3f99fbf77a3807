/// Another run of the job is in progress on the same journal, started from another folder
/// or `state.path` (whose lock this run does not see).
public struct RunInProgress: Error, Sendable, CustomStringConvertible {
  /// The journal's path (a server database's URL, its password masked).
  public var journal: String
  public var job: String
  /// The live run; nil when the job's run lock is held but no run is recorded as
  /// `running` (a runner between taking a server database's lock and recording its run, or
  /// another program holding the lock).
  public var run: RunRecord?
  /// What is known of a lock holder without a run (`run` nil), as one phrase: "server
  /// process 4242, client 10.0.0.5, connected 2026-12-01T16:08:58Z"; nil when nothing is.
  public var holder: String?

  public init(journal: String, job: String, run: RunRecord?, holder: String? = nil) {
    self.journal = journal
    self.job = job
    self.run = run
    self.holder = holder
  }

  /// Which run holds the job: `job 'x' is already running on the run journal J (run R,
  /// process P, started T)`, without advice.
  public var holding: String {
    let who =
      run.map { "run \($0.id), process \($0.processID), started \($0.startedAt)" }
      ?? "another session holds its run lock" + (holder.map { " and has recorded no run yet: \($0)" } ?? "")
    return "job '\(job)' is already running on the run journal \(journal) (\(who))"
  }

  public var description: String {
    holding + "; this run changed nothing. Wait for it to finish, or stop it first."
  }
}
