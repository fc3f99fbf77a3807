internal import DrayModel
internal import Foundation

/// What a load read from its answer's part as it arrived came to.
struct StreamedLoad<Value> {
  /// The load's own result; nil when the download's answer was not to be loaded, or when
  /// the part was started again.
  var result: Result<Value, any Error>?
  /// The download started the part again from byte 0: what the load read rolled back, and
  /// the finished answer is loaded from its start.
  var restarted: Bool
}

/// Runs `load` on a thread of its own while `download` runs on the caller's, the two sharing
/// `growing` (docs/network.md, "Loading while downloading"): the download writes the part
/// and the load reads it (`FileChunks`), in a transaction it commits only once the reader
/// reached the answer's end, which it sees only after `growing.finish()`. That is called when
/// `download` returns true (its answer is whole, verified, and to be loaded); `fail()` when it
/// returns false or throws, so the load stops and rolls back.
///
/// A load that ends with an error after the part was started again (`GrowingFile.restarted`)
/// counts as restarted whatever the error: it may have read bytes of two answers.
///
/// - Parameters:
///   - load: runs on the new thread; until this function returns, what it captures (a
///     store's connection, the download) is used by that thread alone.
///   - download: fetches the answer into the part `growing` watches.
/// - Throws: what `download` threw, once the load has stopped.
func loadWhileDownloading<Value>(
  _ growing: GrowingFile, load: @escaping () throws -> Value, download: () throws -> Bool
) throws -> StreamedLoad<Value> {
  let thread = LoadThread(load)
  let wanted: Bool
  do {
    wanted = try download()
  } catch {
    growing.fail()
    _ = thread.wait()
    throw error
  }
  if wanted { growing.finish() } else { growing.fail() }
  let result = thread.wait()
  guard wanted else { return StreamedLoad(result: nil, restarted: false) }
  if case .failure = result, growing.restarted { return StreamedLoad(result: nil, restarted: true) }
  return StreamedLoad(result: result, restarted: false)
}

/// A download and its load that broke their hand-over (a defect in dray), reported as the
/// step's error instead of stopping the run.
struct HandOverError: Error, CustomStringConvertible {
  let description: String
}

/// A load on a thread of its own, while the step's thread downloads what it reads.
private final class LoadThread<Value>: @unchecked Sendable {
  // @unchecked: `work` and what it captures (the step's store and download) are used by the
  // load's thread alone until `wait()` returns; `result` is written before `done` is
  // signalled and read only after.
  private let work: () throws -> Value
  private var result: Result<Value, any Error>?
  private let done = DispatchSemaphore(value: 0)

  init(_ work: @escaping () throws -> Value) {
    self.work = work
    // The load's commits are spans of the step that started it (`Tracing`).
    let step = Tracing.currentStep
    let thread = Thread { [self] in
      result = Result { try step.map { step in try Tracing.withStep(step) { try self.work() } } ?? self.work() }
      done.signal()
    }
    thread.stackSize = 4 << 20
    thread.start()
  }

  /// Waits for the load to end.
  func wait() -> Result<Value, any Error> {
    done.wait()
    return result ?? .failure(HandOverError(description: "the load's thread ended without a result"))
  }
}
