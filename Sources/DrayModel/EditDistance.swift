/// Edit distance for "did you mean" suggestions.
public enum EditDistance {
  /// The optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
  /// substring), case-insensitive: insertions, deletions, substitutions and swaps of two
  /// neighbours cost 1 each, so `retyr` is 1 from `retry`.
  public static func distance(_ a: String, _ b: String) -> Int {
    let a = Array(a.lowercased().unicodeScalars)
    let b = Array(b.lowercased().unicodeScalars)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var beforePrevious = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      current[0] = i
      for j in 1...b.count {
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
          current[j] = min(current[j], beforePrevious[j - 2] + 1)
        }
      }
      (beforePrevious, previous, current) = (previous, current, beforePrevious)
    }
    return previous[b.count]
  }

  /// The closest candidate within a third of the word's length (at least 1, at most 3 edits).
  public static func closest(to word: String, among candidates: [String]) -> String? {
    let limit = min(3, max(1, word.count / 3))
    let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= limit }
    return scored.min { $0.1 < $1.1 }?.0
  }
}
