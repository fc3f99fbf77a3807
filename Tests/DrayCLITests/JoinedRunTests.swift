import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Several `dray run --join` processes sharing one run of a fan-out on one PostgreSQL
/// database (docs/partitions.md, "Many runners"), against the REST test server's
/// `/repos/ID/issues` (12 repositories of 5 issues, 3 pages each; every answer 40 ms late):
/// every page is fetched once in a clean run, a runner killed with `kill -9` (a joined one,
/// or the lock holder itself) has its partitions finished by the others after the lease
/// (`lease: 2s`), and the table equals a lone runner's, row for row.
@Suite struct JoinedRunTests {
  static func job(_ url: String, _ target: TargetDatabase, write: String = "append") -> String {
    """
    version: 1
    job: fan
    \(target.manifestBlock)retry: { count: 2, interval: 20ms }
    steps:
      - id: repos
        http: { base_url: "\(url)", path: repos, query: { per_page: 12 }, load: { table: repos, records: /data }, paginate: { next: /links/next } }
      - id: issues
        partitions:
          rows: "SELECT id AS repo FROM repos ORDER BY id"
          concurrency: 2
          lease: 2s
        http: { base_url: "\(url)", path: "repos/{repo}/issues", query: { per_page: 2 }, load: { table: issues, records: /data, write: \(write) }, paginate: { next: /links/next } }

    """
  }

  /// A job folder with its own server and PostgreSQL database.
  struct Trial {
    let folder: String
    let server: RestServer
    let target: TargetDatabase

    init(_ folder: String, delay: String = "0.04", write: String = "append") throws {
      self.folder = folder
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      server = try RestServer(["--repos", "12", "--issues", "5", "--answer-delay", delay])
      target = try TargetDatabase(.postgres, folder: folder)
      try JoinedRunTests.job(server.url, target, write: write).write(
        toFile: folder + "/job.yaml", atomically: true, encoding: .utf8)
    }

    /// Runner `n`, with `--join --run-key KEY` (all share the job folder's state folder).
    func start(_ n: Int, key: String = "job-uid-1", extra: [String] = []) throws -> ChildProcess {
      try ChildProcess.dray(
        ["run", folder + "/job.yaml", "--join", "--run-key", key] + extra, logPrefix: folder + "/runner-\(n)")
    }

    func issues() throws -> [[String?]] { try target.rows("SELECT id, repo, title FROM issues ORDER BY id") }

    /// The issues pages asked for, with their query, in order.
    func issuePages() throws -> [String] {
      try server.requests().map(\.path).filter { $0.hasPrefix("/repos/") && $0.contains("/issues") }
    }

    /// The owners (`host:pid:random`) of the partitions' claims, by state.
    func claims(_ state: String) throws -> [String] {
      try target.rows("SELECT owner FROM _dray_claims WHERE state = '\(state)' ORDER BY member_id").compactMap { $0.first ?? nil }
    }

    /// The staging tables and page ledgers left in the job folder's staging file
    /// (`.dray/fan.staging.sqlite`, shared by the runners): a claim that ends leaves none.
    func staged() throws -> [String] {
      let path = target.stagingPath(job: "fan")
      guard FileManager.default.fileExists(atPath: path) else { return [] }
      return try SQLiteFile.rows(
        path,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND (name GLOB '_dray_http__fan__*' OR name GLOB '_dray_http_rejected__fan__*') "
          + "UNION ALL SELECT 'ledger ' || step_id FROM _dray_http_pages"
      ).compactMap { $0.first ?? nil }
    }

    /// The process id of the run lock's holder: the pid of the run recorded `running`.
    func holder() throws -> Int32? {
      try target.rows("SELECT pid FROM _dray_runs WHERE status = 'running'").first?.first?.flatMap { Int32($0) }
    }
  }

  /// A lone runner's table: the reference.
  static func reference(_ root: String) throws -> [[String?]] {
    let alone = try Trial(root + "/alone", delay: "0")
    let run = try ChildProcess.dray(["run", alone.folder + "/job.yaml"], logPrefix: alone.folder + "/run")
    try #require(run.wait() == .exited(0), "\(run.errors)")
    let rows = try alone.issues()
    #expect(rows.count == 60)
    return rows
  }

  /// With `write: replace` the partitions gather in `_dray_parts__fan__issues`, a table
  /// every runner's session sees, and the holder replaces the table from it once.
  @Test(.timeLimit(.minutes(5)), arguments: ["append", "replace"])
  func threeJoinedRunnersFetchEachPageOnce(write: String) throws {
    let root = TemporaryDirectory("dray-join")
    let expected = try JoinedRunTests.reference(root.path)
    let trial = try Trial(root.path + "/shared", write: write)
    let runners = try (1...3).map { try trial.start($0) }
    for (n, runner) in runners.enumerated() {
      #expect(runner.wait() == .exited(0), "runner \(n + 1): \(runner.errors)")
    }
    #expect(try trial.issues() == expected)
    let pages = try trial.issuePages()
    // 12 repositories x 3 pages, each asked for once.
    #expect(pages.count == 36, "\(pages)")
    #expect(Set(pages).count == pages.count, "a page was fetched twice: \(pages)")
    // Partitions were claimed by more than one runner, and all of them are done.
    let owners = try trial.claims("done")
    #expect(Set(owners).count >= 2, "\(owners)")
    #expect(try trial.claims("done").count == 12)
    // One run; the joined runners say which and how it ended.
    #expect(try trial.target.rows("SELECT status FROM _dray_runs") == [["succeeded"]])
    #expect(try trial.target.rows("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '\\_dray\\_parts%'") == [["0"]])
    // Each claim's staging was published and dropped: nothing is left in the shared file.
    #expect(try trial.staged() == [])
    let joined = runners.filter { $0.errors.contains("joined run ") }
    #expect(joined.count == 2, "\(runners.map(\.errors))")
    let holder = try #require(runners.first { !$0.errors.contains("joined run ") })
    #expect(holder.errors.contains("step issues: partitions 12/12 done by the runners of this run ("), "\(holder.errors)")
    for runner in joined {
      #expect(runner.errors.contains("ended with exit code 0; this runner joined it and ran "), "\(runner.errors)")
    }
  }

  /// Kills runner `victim` (chosen once partitions are out: `pick`) with SIGKILL while it
  /// holds a claim, then checks that the others finish the run with the exact table.
  /// `afterPages`: the kill waits until the server answered that many issues pages too.
  func killOne(
    _ pick: (Trial, [ChildProcess]) throws -> ChildProcess?, holder: Bool, write: String = "append", delay: String = "0.08",
    afterPages: Int = 0
  ) throws -> [ChildProcess] {
    let root = TemporaryDirectory("dray-join-kill")
    let expected = try JoinedRunTests.reference(root.path)
    let trial = try Trial(root.path + "/shared", delay: delay, write: write)
    let runners = try (1...3).map { try trial.start($0) }
    var victim: ChildProcess?
    // Polls until the chosen runner holds a live claim (no sleep: a condition).
    let found = runners[0].waitUntil(timeout: 60) {
      guard let chosen = try? pick(trial, runners) else { return false }
      let owners = (try? trial.claims("claimed")) ?? []
      guard owners.contains(where: { $0.contains(":\(chosen.pid):") }) else { return false }
      if afterPages > 0 && ((try? trial.issuePages().count) ?? 0) < afterPages { return false }
      victim = chosen
      return true
    }
    let killed = try #require(victim, "no runner to kill was found claiming (\(found))")
    killed.send(SIGKILL)
    #expect(killed.wait() == .signaled(SIGKILL))
    let others = runners.filter { $0.pid != killed.pid }
    for runner in others {
      #expect(runner.wait() == .exited(0), "\(runner.errors)")
    }
    #expect(try trial.issues() == expected)
    // Every partition open for claims finished (after a takeover, the new run opens only
    // those the abandoned one had not finished).
    #expect(try trial.target.rows("SELECT count(*) FROM _dray_claims WHERE state <> 'done'") == [["0"]])
    #expect(
      try trial.target.rows("SELECT count(*) FROM _dray_checkpoints WHERE step_id LIKE 'issues[%' AND status = 'succeeded'") == [["12"]])
    let runs = try trial.target.rows("SELECT status FROM _dray_runs ORDER BY seq")
    if holder {
      // The holder's run was abandoned; one of the others carried it on to success.
      #expect(runs == [["abandoned"], ["succeeded"]], "\(runs)")
      #expect(others.contains { $0.errors.contains("took the run lock over and carries the run on") })
    } else {
      #expect(runs == [["succeeded"]], "\(runs)")
    }
    // A row loaded twice is told with what explains it: whose partition, which claims, runs
    // and checkpoints, the pages asked for, and what each runner said.
    let twice = try trial.target.rows("SELECT repo, id FROM issues GROUP BY repo, id HAVING count(*) > 1 ORDER BY id")
    if !twice.isEmpty {
      let claims = try trial.target.rows("SELECT member_id, run_id, owner, generation, state FROM _dray_claims ORDER BY ordinal")
      let seqs = try trial.target.rows("SELECT run_id, pid FROM _dray_runs ORDER BY seq")
      let checkpoints = try trial.target.rows(
        "SELECT step_id, run_id, status FROM _dray_checkpoints WHERE step_id LIKE 'issues%' ORDER BY step_id")
      let pages = try trial.issuePages()
      Issue.record(
        """
        rows twice (repo, id): \(twice)
        claims: \(claims)
        runs: \(runs), \(seqs)
        checkpoints: \(checkpoints)
        pages: \(pages)
        killed \(killed.pid): \(killed.errors)
        \(others.map { "runner \($0.pid): \($0.errors)" }.joined(separator: "\n"))
        """)
    }
    return others
  }

  @Test(.timeLimit(.minutes(5))) func aJoinedRunnerKilledHasItsPartitionsFinishedByTheOthers() throws {
    _ = try killOne(
      { trial, runners in
        let holder = try trial.holder()
        return runners.first { $0.pid != holder && holder != nil }
      }, holder: false)
  }

  @Test(.timeLimit(.minutes(5))) func theHolderKilledIsTakenOverByAJoinedRunner() throws {
    _ = try killOne(
      { trial, runners in
        let holder = try trial.holder()
        return runners.first { $0.pid == holder }
      }, holder: true)
  }

  /// The runners share one job folder (one local staging file): the holder killed with
  /// `kill -9` mid-partition, with slow pages, leaves each row loaded once, with `replace`
  /// (the partitions gather in `_dray_parts__fan__issues`) as with `append`.
  ///
  /// The joined runners go on committing partitions of the dead holder's run while another
  /// takes the run over; a commit checks in its transaction that its run is still `running`
  /// (`PostgresClaims.check`, the run's row locked), so each partition is either committed
  /// before the takeover marks the run abandoned (and the new run, reading the checkpoints
  /// after, skips it) or not at all. Before, a partition committed between the new holder's
  /// reading of the checkpoints and its opening of the partitions anew was loaded twice.
  /// Each claim stages apart (`StepRunner.stagingName`), so a partition taken over is
  /// fetched from its start, never resumed from pages another claim staged.
  @Test(.timeLimit(.minutes(5)), arguments: ["replace", "append"])
  func theHolderKilledInASharedFolderLeavesEachRowOnce(write: String) throws {
    let others = try killOne(
      { trial, runners in
        let holder = try trial.holder()
        return runners.first { $0.pid == holder }
      }, holder: true, write: write, delay: "0.4", afterPages: 8)
    for runner in others {
      #expect(!runner.errors.contains("resuming after page"), "\(runner.errors)")
    }
  }

  /// A joined runner stopped (SIGSTOP) past its lease while it holds claims: the others
  /// take its partitions and finish them; continued (SIGCONT), it commits nothing for them
  /// (each commit checks the claim's generation) and drops them, not failing, and the table
  /// is exact.
  @Test(.timeLimit(.minutes(5))) func aRunnerPausedPastItsLeaseCommitsNothingForItsPartitions() throws {
    let root = TemporaryDirectory("dray-join-pause")
    let expected = try JoinedRunTests.reference(root.path)
    let trial = try Trial(root.path + "/shared", delay: "0.3")
    // Each runner's sessions named (`application_name=runner-N`, the same job otherwise), so
    // that the test sees whether a stopped runner is inside a transaction.
    let job = try String(contentsOfFile: trial.folder + "/job.yaml", encoding: .utf8)
    let url = try #require(trial.target.url)
    let runners = try (1...3).map { n in
      try job.replacingOccurrences(of: url, with: url + (url.contains("?") ? "&" : "?") + "application_name=runner-\(n)").write(
        toFile: trial.folder + "/job-\(n).yaml", atomically: true, encoding: .utf8)
      return try ChildProcess.dray(
        ["run", trial.folder + "/job-\(n).yaml", "--join", "--run-key", "job-uid-1"], logPrefix: trial.folder + "/runner-\(n)")
    }
    /// The states of runner `n`'s sessions.
    func sessions(_ n: Int) -> [String] {
      ((try? trial.target.rows("SELECT state FROM pg_stat_activity WHERE application_name = 'runner-\(n)'")) ?? [])
        .compactMap { $0.first ?? nil }
    }
    var paused: (runner: ChildProcess, members: [String])?
    var seen: [[String]] = []
    _ = runners[0].waitUntil(timeout: 120) {
      guard let holder = try? trial.holder() else { return false }
      for (index, runner) in runners.enumerated() where runner.pid != holder {
        let held =
          (try? trial.target.rows("SELECT member_id FROM _dray_claims WHERE state = 'claimed' AND owner LIKE '%:\(runner.pid):%'"))?
          .compactMap { $0.first ?? nil } ?? []
        guard !held.isEmpty else { continue }
        runner.send(SIGSTOP)
        // Stopped inside a transaction, it would hold its claim's row lock (the others skip
        // a locked claim) until the server's idle timeout: continue it and try again. A
        // statement in flight when it stopped ends on the server: wait for it (bounded).
        var states = sessions(index + 1)
        for _ in 0..<2000 where states.contains(where: { $0 != "idle" && $0 != "idle in transaction" }) {
          usleep(5_000)
          states = sessions(index + 1)
        }
        seen.append(states)
        guard states.allSatisfy({ $0 == "idle" }) else {
          runner.send(SIGCONT)
          continue
        }
        // Its claims as they stand now that it is stopped.
        let now =
          (try? trial.target.rows("SELECT member_id FROM _dray_claims WHERE state = 'claimed' AND owner LIKE '%:\(runner.pid):%'"))?
          .compactMap { $0.first ?? nil } ?? []
        guard !now.isEmpty else {
          runner.send(SIGCONT)
          continue
        }
        paused = (runner, now)
        return true
      }
      return false
    }
    let (stopped, members) = try #require(
      paused,
      "no joined runner was seen holding claims outside a transaction: its sessions' states \(seen.suffix(5)); \(runners.map(\.errors))")
    // Its partitions finished by the others while it is stopped (a condition, no sleep;
    // polled from the test, not tied to one runner's life).
    let list = members.map { "'\($0)'" }.joined(separator: ", ")
    var takenOver = false
    for _ in 0..<24_000 {
      let done = try? trial.target.rows("SELECT count(*) FROM _dray_claims WHERE state = 'done' AND member_id IN (\(list))")
      if done == [["\(members.count)"]] {
        takenOver = true
        break
      }
      usleep(5_000)
    }
    #expect(takenOver, "\(members) not done by the others: \(runners.map(\.errors))")
    stopped.send(SIGCONT)
    for runner in runners {
      #expect(runner.wait() == .exited(0), "\(runner.errors)")
    }
    #expect(try trial.issues() == expected)
    #expect(
      stopped.errors.contains("dropped: the claim on partition") || stopped.errors.contains("ran out before this runner renewed it"),
      "\(stopped.errors)")
    // The stopped runner's claims staged pages it could not publish: dropped, not left behind.
    #expect(try trial.staged() == [])
    // A claim lost is a warning, not an error, in a run that succeeds.
    #expect(!stopped.errors.split(separator: "\n").contains { $0.hasPrefix("error") && $0.contains("ran out") }, "\(stopped.errors)")
  }

  /// A partition that fails for good in any runner fails the run, and every runner exits
  /// with the run's code (1); the holder's report names the partition.
  @Test(.timeLimit(.minutes(5))) func aPartitionFailingForGoodEndsEveryRunnerWithTheRunsCode() throws {
    let root = TemporaryDirectory("dray-join-fail")
    let trial = try Trial(root.path + "/shared")
    try trial.server.setRules(#"[{"path": "/repos/9/issues", "status": 404, "body": "no such repository"}]"#)
    let runners = try (1...3).map { try trial.start($0) }
    for (n, runner) in runners.enumerated() {
      #expect(runner.wait() == .exited(1), "runner \(n + 1): \(runner.errors)")
    }
    #expect(try trial.target.rows("SELECT status FROM _dray_runs") == [["failed"]])
    #expect(try trial.target.rows("SELECT member_id FROM _dray_claims WHERE state = 'failed'") == [["issues[repo=9]"]])
    let holder = try #require(runners.first { !$0.errors.contains("joined run ") })
    #expect(holder.errors.contains("of 12 partitions failed for good (the first, repo=9: "), "\(holder.errors)")
    for runner in runners where runner.pid != holder.pid {
      #expect(runner.errors.contains("ended with exit code 1; this runner joined it and ran "), "\(runner.errors)")
    }
  }

  /// A key whose run ended with a code that says "try again" (69 here) is resumed by the
  /// next start given it (a retry, as a Kubernetes Job's replacement pod is); a key whose
  /// run ended 0 or 1 ends a late start with that code, starting nothing.
  @Test func aKeyWhoseRunEndedRetriesOnlyTheCodesThatSayTryAgain() throws {
    let root = TemporaryDirectory("dray-join-key")
    let trial = try Trial(root.path + "/job", delay: "0")
    // A run that fails: its server is gone (connection refused), so exit 69.
    let broken = try String(contentsOfFile: trial.folder + "/job.yaml", encoding: .utf8)
    try broken.replacingOccurrences(of: trial.server.url, with: "http://127.0.0.1:9/").write(
      toFile: trial.folder + "/broken.yaml", atomically: true, encoding: .utf8)
    let failed = try ChildProcess.dray(
      ["run", trial.folder + "/broken.yaml", "--join", "--run-key", "uid-7"], logPrefix: trial.folder + "/failed")
    #expect(failed.wait() == .exited(69), "\(failed.errors)")
    // The key's run ended 69: the next start of the key resumes the job, and succeeds.
    let retry = try ChildProcess.dray(
      ["run", trial.folder + "/job.yaml", "--join", "--run-key", "uid-7"], logPrefix: trial.folder + "/retry")
    #expect(retry.wait() == .exited(0), "\(retry.errors)")
    #expect(!retry.errors.contains("already ended"), "\(retry.errors)")
    #expect(try !trial.server.requests().isEmpty)
    #expect(try trial.target.rows("SELECT status FROM _dray_runs ORDER BY seq") == [["failed"], ["succeeded"]])
    #expect(try trial.issues().count == 60)
    // Now its run ended 0: a late start ends so too, sending nothing.
    try trial.server.reset()
    let late = try ChildProcess.dray(
      ["run", trial.folder + "/job.yaml", "--join", "--run-key", "uid-7"], logPrefix: trial.folder + "/late")
    #expect(late.wait() == .exited(0), "\(late.errors)")
    #expect(late.errors.contains("already ended with exit code 0: this start changed nothing and ends with that code"), "\(late.errors)")
    #expect(try trial.server.requests().isEmpty)
    // A run that fails for good (a partition answered 404) ends 1: final, not retried.
    try trial.server.setRules(#"[{"path": "/repos/9/issues", "status": 404, "body": "no such repository"}]"#)
    let fresh = try trial.start(1, key: "uid-8", extra: ["--fresh"])
    #expect(fresh.wait() == .exited(1), "\(fresh.errors)")
    try trial.server.reset()
    let again = try trial.start(2, key: "uid-8")
    #expect(again.wait() == .exited(1), "\(again.errors)")
    #expect(again.errors.contains("already ended with exit code 1: this start changed nothing"), "\(again.errors)")
    #expect(try trial.server.requests().isEmpty)
    #expect(try trial.target.rows("SELECT count(*) FROM _dray_runs") == [["3"]])
  }

  /// A runner started with `--join` while a runner started without it holds the run: it
  /// says at once that the holder does not share its partitions and that it waits for the
  /// run to end (and that its `--only` applies only if it takes the lock), then ends with the
  /// run's code, having run nothing.
  @Test(.timeLimit(.minutes(5))) func aJoinerOfAHolderStartedWithoutJoinSaysItWaits() throws {
    let root = TemporaryDirectory("dray-join-unshared")
    let trial = try Trial(root.path + "/job", delay: "0.5")
    let holder = try ChildProcess.dray(["run", trial.folder + "/job.yaml", "--fresh"], logPrefix: trial.folder + "/holder")
    #expect(holder.waitUntil(timeout: 120) { (try? trial.holder()) != nil })
    let joiner = try ChildProcess.dray(
      ["run", trial.folder + "/job.yaml", "--join", "--only", "repos"], logPrefix: trial.folder + "/joiner")
    #expect(holder.wait() == .exited(0), "\(holder.errors)")
    #expect(joiner.wait() == .exited(0), "\(joiner.errors)")
    #expect(
      joiner.errors.contains("started without --join: it does not share its partitions, so this runner waits for that run to end"),
      "\(joiner.errors)")
    #expect(joiner.errors.contains("(--only repos applies only if this runner takes the run lock)"), "\(joiner.errors)")
    #expect(joiner.errors.contains("this runner joined it and ran 0 partitions"), "\(joiner.errors)")
  }

  /// A runner whose manifest defines the shared step otherwise (a rolling update: another
  /// table here) claims none of its partitions and ends with 75, naming why; the holder
  /// loads every partition as its own manifest says.
  @Test(.timeLimit(.minutes(5))) func aJoinerWithAnotherDefinitionClaimsNothing() throws {
    let root = TemporaryDirectory("dray-join-other")
    let trial = try Trial(root.path + "/job", delay: "0.3")
    let other = try JoinedRunTests.job(trial.server.url, trial.target).replacingOccurrences(
      of: "load: { table: issues,", with: "load: { table: issues_other,")
    try FileManager.default.createDirectory(atPath: trial.folder + "/other", withIntermediateDirectories: true)
    try other.write(toFile: trial.folder + "/other/job.yaml", atomically: true, encoding: .utf8)
    let holder = try trial.start(1)
    // The holder has opened the partitions for claims, and most are still to claim.
    let open = "SELECT count(*) FROM _dray_claims WHERE state = 'pending'"
    #expect(holder.waitUntil(timeout: 120) { ((try? trial.target.rows(open).first?.first ?? nil).flatMap { Int($0) } ?? 0) > 4 })
    let joiner = try ChildProcess.dray(
      ["run", trial.folder + "/other/job.yaml", "--join", "--run-key", "job-uid-1"], logPrefix: trial.folder + "/joiner")
    #expect(joiner.wait() == .exited(75), "\(joiner.errors)")
    #expect(
      joiner.errors.contains("was opened for claims with another definition than this runner's manifest gives it"), "\(joiner.errors)")
    #expect(holder.wait() == .exited(0), "\(holder.errors)")
    #expect(try trial.issues().count == 60)
    #expect(try trial.target.columnNames("issues_other").isEmpty)
  }

  /// A `--fresh` start of a key that ends with 69 is started again with the same arguments
  /// (a pod's restart): the second start continues the key's run, fresh as it began, and
  /// does not append again the partitions the first one published.
  @Test(.timeLimit(.minutes(5))) func aRetriedFreshStartOfAKeyContinuesItsRun() throws {
    let root = TemporaryDirectory("dray-join-fresh")
    let trial = try Trial(root.path + "/job", delay: "0")
    try trial.server.setRules(#"[{"path": "/repos/7/issues", "status": 503, "times": 1000}]"#)
    let first = try trial.start(1, key: "backfill-1", extra: ["--fresh"])
    #expect(first.wait() == .exited(69), "\(first.errors)")
    #expect(try !trial.issues().isEmpty)
    try trial.server.setRules("[]")
    let second = try trial.start(2, key: "backfill-1", extra: ["--fresh"])
    #expect(second.wait() == .exited(0), "\(second.errors)")
    #expect(second.errors.contains("already started run"), "\(second.errors)")
    #expect(try trial.issues() == JoinedRunTests.reference(root.path))
  }

  /// `dray status` on a run in progress that runners share tells its claims: per partitioned
  /// step, how many partitions are open for claims, done, waiting and claimed, by which
  /// runner and until when (by the database's clock).
  @Test(.timeLimit(.minutes(5))) func statusTellsTheClaimsOfARunInProgress() throws {
    let root = TemporaryDirectory("dray-join-status")
    let trial = try Trial(root.path + "/job", delay: "0.3")
    let runner = try trial.start(1)
    var line: String?
    _ = runner.waitUntil(timeout: 120) {
      guard (try? trial.claims("claimed"))?.isEmpty == false,
        let status = try? Command.dray(["status", trial.folder + "/job.yaml"])
      else { return false }
      line = status.stdout.split(separator: "\n").first { $0.hasPrefix("    claims of step issues: ") }.map(String.init)
      return line?.contains(" claimed (") == true
    }
    #expect(runner.wait() == .exited(0), "\(runner.errors)")
    let text = try #require(line, "no claims line seen while the run was in progress")
    #expect(text.hasPrefix("    claims of step issues: 12 partitions, "), "\(text)")
    #expect(text.contains(" waiting, "), "\(text)")
    #expect(text.contains(":\(runner.pid):"), "\(text)")
    #expect(text.contains(", expiring in "), "\(text)")
    // Once the run ended, its claims are no longer told.
    let after = try Command.dray(["status", trial.folder + "/job.yaml"])
    #expect(!after.stdout.contains("claims of step"), "\(after.stdout)")
  }

  @Test func joinOnSQLiteIsRefusedAtStart() throws {
    let folder = TemporaryDirectory("dray-join-sqlite")
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let manifest = try folder.write("job.yaml", JoinedRunTests.job("http://127.0.0.1:9/", target))
    for arguments in [["--join"], ["--when-locked", "join"], ["--join", "--run-key", "k"]] {
      let result = try Command.dray(["run", manifest] + arguments)
      #expect(result.status == 2, "\(result.output)")
      #expect(
        result.stderr.hasPrefix(
          "dray: --join needs a job whose database is PostgreSQL (database.url): runners share a run through it, and this job's database is the SQLite file data/db.sqlite, which serves one machine; run it without --join\n"
        ), "\(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: folder.path + "/data"))
    }
    let keyAlone = try Command.dray(["run", manifest, "--run-key", "k"])
    #expect(keyAlone.status == 2)
    #expect(keyAlone.stderr.hasPrefix("dray: --run-key goes with --join: runners given one key share one run\n"))
  }
}
