public import DrayModel

/// One runner's claim on one partition of a partitioned step (`dray run --join`;
/// docs/partitions.md, "Many runners"): the member id, the partition's values, the claim's
/// owner and generation. A store opened with it as a fence (`RunFences`) commits only while
/// the claim is still this one and unexpired by the database's clock.
public struct PartitionClaim: RunFence, Hashable {
  public var job: String
  public var runID: String
  public var stepID: String
  public var memberID: String
  public var partition: Partition
  public var owner: String
  public var generation: Int64
  /// The step's `lease`, in microseconds: how long a renewal or a commit extends the claim.
  public var leaseMicroseconds: Int64

  public init(
    job: String, runID: String, stepID: String, memberID: String, partition: Partition, owner: String,
    generation: Int64, leaseMicroseconds: Int64
  ) {
    self.job = job
    self.runID = runID
    self.stepID = stepID
    self.memberID = memberID
    self.partition = partition
    self.owner = owner
    self.generation = generation
    self.leaseMicroseconds = leaseMicroseconds
  }
}

/// Several fences one commit checks, each in the same transaction: the run lock and a
/// partition's claim.
public struct RunFences: RunFence {
  public var fences: [any RunFence]
  public init(_ fences: [any RunFence]) { self.fences = fences }
}

/// Where a partition of a run stands in `_dray_claims`.
public struct ClaimState: Sendable, Equatable {
  public enum State: String, Sendable {
    case pending, claimed, done, failed
  }
  public var memberID: String
  public var state: State
  public var owner: String?
  /// The failure of a `failed` partition.
  public var message: String?
  public init(memberID: String, state: State, owner: String?, message: String?) {
    self.memberID = memberID
    self.state = state
    self.owner = owner
    self.message = message
  }
}

/// One partition's claim as `dray status` shows it (`DatabaseReader.claims`).
public struct ClaimView: Sendable, Equatable {
  public var stepID: String
  public var memberID: String
  /// As stored: a `claimed` partition whose claim expired is still `claimed` here.
  public var state: ClaimState.State
  /// The runner that holds or held it (`host:pid:random`); nil for one never claimed.
  public var owner: String?
  /// Seconds from now, by the database's clock, until a `claimed` partition's claim
  /// expires (zero or less: expired, anyone's to take); nil for the other states.
  public var expiresIn: Double?
  public init(stepID: String, memberID: String, state: ClaimState.State, owner: String?, expiresIn: Double?) {
    self.stepID = stepID
    self.memberID = memberID
    self.state = state
    self.owner = owner
    self.expiresIn = expiresIn
  }
}

/// A run a `--run-key` or a joined runner follows ended: `exitCode` is its exit code.
public struct RunEnded: Error, Sendable, CustomStringConvertible {
  public var runID: String
  public var exitCode: Int32
  public init(runID: String, exitCode: Int32) {
    self.runID = runID
    self.exitCode = exitCode
  }
  public var description: String { "run \(runID) ended with exit code \(exitCode)" }
}

/// The claims of partitions shared by the runners of one run (`dray run --join`), on a
/// connection of its own: a database every runner reaches (PostgreSQL). One thread at a time.
public protocol PartitionClaims: AnyObject {
  /// Opens `members` (member id and partition, in order) of step `stepID` of run `runID`
  /// for claims: each becomes `pending` with a new generation, so that a claim taken before
  /// (under an earlier run of the chain) commits nothing more. `fingerprint` is the digest of
  /// the step's definition (`Step.definitionDigest`): a joined runner whose step has another
  /// claims nothing.
  func publish(job: String, runID: String, stepID: String, fingerprint: String, members: [(id: String, partition: Partition)])
    throws
  /// Claims the first partition of the step that is `pending`, or `claimed` with its claim
  /// expired, unless one of its partitions failed or the run is no longer `running` in the
  /// journal (it ended, or was marked abandoned): a new generation, `owner`, and an expiry
  /// `lease` from now by the database's clock. `FOR UPDATE SKIP LOCKED`: two runners never
  /// get one partition. Nil when none is left to claim.
  func claim(job: String, runID: String, stepID: String, owner: String, leaseMicroseconds: Int64) throws -> PartitionClaim?
  /// Extends each claim that is still its owner's by its lease; answers the member ids of
  /// those that are no longer (taken over, or settled).
  func renew(_ claims: [PartitionClaim]) throws -> [String]
  /// Ends `claim`: `done`, `failed` with `message`, or back to `pending` (nil) for another
  /// runner. Answers false when the claim was no longer its owner's (nothing changed).
  @discardableResult
  func settle(_ claim: PartitionClaim, as state: ClaimState.State, message: String?) throws -> Bool
  /// Whether `claim` is still its owner's (generation unchanged).
  func holds(_ claim: PartitionClaim) throws -> Bool
  /// Every partition of step `stepID` of run `runID`.
  func states(job: String, runID: String, stepID: String) throws -> [ClaimState]
  /// The first step of run `runID` with a partition left to claim (as `claim` takes them),
  /// and the fingerprint its partitions were opened under (nil when opened by a dray that
  /// did not record it), or nil.
  func openStep(job: String, runID: String) throws -> (stepID: String, fingerprint: String?)?
  /// The run `key` names and its exit code once it ended (`_dray_joins`); nil when none.
  func run(job: String, key: String) throws -> (runID: String, exitCode: Int32?)?
  /// The exit code recorded for run `runID`, nil while it runs or when none was recorded.
  func exitCode(job: String, runID: String) throws -> Int32?
  /// Whether run `runID` was started by a runner that shares it (`--join`: a row of
  /// `_dray_joins` names it); false for a run started without `--join`, whose holder opens
  /// no partitions for claims.
  func isShared(job: String, runID: String) throws -> Bool
}

/// A commit found its partition's claim no longer its runner's: another runner claimed it
/// after its lease ran out, the run opened it anew, or the claim's run is no longer
/// `running` (its holder died and another runner took the run over, or it ended). Nothing
/// was committed; the partition is another runner's (not a step failure).
public struct PartitionClaimLost: Error, Sendable, CustomStringConvertible {
  public var memberID: String
  public init(memberID: String) { self.memberID = memberID }
  public var description: String {
    "the claim on partition \(memberID) ran out (its lease passed without a renewal), another runner took it, "
      + "or its run is no longer running (another runner took the run over): "
      + "this runner committed nothing for it and dropped it"
  }
}

/// How a runner started with `--join` begins a run once it holds the job's run lock
/// (`RunJournal.begin(_:joining:)`).
public struct JoinStart: Sendable, Equatable {
  /// `--run-key`: runners given one key share one run.
  public var key: String?
  /// The run this runner followed as a joined runner, which it carries on.
  public var follows: String?
  public init(key: String?, follows: String?) {
    self.key = key
    self.follows = follows
  }

  /// Whether a run of a `--run-key` that ended with exit code `code` is tried again by the
  /// next start given the key (docs/partitions.md, "Many runners"): 69 (a service
  /// unavailable), 75 (locked) and 130 (interrupted) say "try again", so that start resumes
  /// the job under the same key; 0, 1 and 2 are final, and that start ends with the code.
  public static func retries(_ code: Int32) -> Bool { code == 69 || code == 75 || code == 130 }
}

extension RunJournal {
  /// `begin`, for a runner started with `--join` (the default: `begin(run)`, for a journal
  /// whose database cannot share a run).
  public func begin(_ run: RunRecord, joining: JoinStart) throws -> [RunRecord] { try begin(run) }
  /// Records the exit code of run `runID`, for the joined runners and the late ones of its
  /// `--run-key` (the default: nothing).
  public func recordExit(job: String, runID: String, code: Int32) throws {}
}
