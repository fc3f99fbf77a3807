internal import Foundation

/// A reproducible random source (SplitMix64, https://prng.di.unimi.it/splitmix64.c): the
/// same seed gives the same numbers, so a failing randomised test can be run again exactly.
public struct SeededRandom: RandomNumberGenerator, Sendable {
  public let seed: UInt64
  private var state: UInt64

  public init(seed: UInt64) {
    self.seed = seed
    state = seed
  }

  /// A seed from `$name` when set (decimal), otherwise `fallback`, or a fresh one without it.
  public static func seed(fromEnvironment name: String, fallback: UInt64? = nil) -> UInt64 {
    if let text = ProcessInfo.processInfo.environment[name], let seed = UInt64(text) { return seed }
    return fallback ?? UInt64.random(in: 1...UInt64(UInt32.max))
  }

  /// A number in `0..<bound` (with a bias below 2^-40 for small bounds): cheaper than
  /// `Int.random(in:using:)`, whose generic path dominates a debug build's loops.
  public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

  /// A number in `range`, as `below(_:)`.
  public mutating func int(in range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }

  /// An element of `items` (not empty), as `below(_:)`.
  public mutating func element<Item>(of items: [Item]) -> Item { items[below(items.count)] }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
