import DrayModel
import Foundation

/// Python's `json` module (CPython's standard library: an independent, well-kept JSON
/// reader), run once as a child process and asked over pipes, one document a line: the
/// reference the table answer scanner is checked against.
///
/// Python reads strictly where dray does (UTF-8 decoded strictly, so no overlong form, encoded
/// surrogate or code point past U+10FFFF; only RFC 8259's four whitespace bytes; no comments;
/// no text after the value; no control character unescaped), keeps key order and duplicate
/// keys (`object_pairs_hook`) and every number as written (`parse_int`, `parse_float`).
/// Where it is lenient the reading counts as refused here: `NaN` and `Infinity`
/// (`parse_constant` raises), and a `\u` escape of a UTF-16 surrogate outside a pair, which it
/// reads into a string that is no text (it cannot be written as UTF-8). Nesting deeper than
/// `JSONValue.maxDepth` levels is refused, as dray refuses it.
final class PythonJSON: @unchecked Sendable {
  static let shared = PythonJSON()

  private let lock = NSLock()
  private let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private var pending: [UInt8] = []

  /// Reads hex lines; answers `x` (refused), `u` (an unpaired surrogate escape) or the value in
  /// prefix form: `z` null, `t`, `f`, `n<text>`, `s<UTF-8 in hex>`, `a<count>`, `o<count>` then
  /// its keys and values in turn; tokens end with `;`.
  private static let script = #"""
    import json, sys

    class Number(str): pass
    class Pairs(list): pass

    def constant(name): raise ValueError(name)

    def write(value, out):
        if value is None: out.append("z")
        elif value is True: out.append("t")
        elif value is False: out.append("f")
        elif isinstance(value, Number): out.append("n" + value)
        elif isinstance(value, str): out.append("s" + value.encode("utf-8").hex())
        elif isinstance(value, Pairs):
            out.append("o%d" % len(value))
            for key, item in value:
                write(key, out)
                write(item, out)
        else:
            out.append("a%d" % len(value))
            for item in value: write(item, out)

    while True:
        line = sys.stdin.buffer.readline()
        if not line: break
        try:
            text = bytes.fromhex(line.decode().strip()).decode("utf-8")
            value = json.loads(text, object_pairs_hook=Pairs, parse_int=Number, parse_float=Number, parse_constant=constant)
            out = []
            write(value, out)
            answer = ";".join(out)
        except UnicodeEncodeError:
            answer = "u"
        except (ValueError, RecursionError):
            answer = "x"
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    """#

  private init() {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", Self.script]
    process.standardInput = input
    process.standardOutput = output
    do {
      try process.run()
    } catch {
      fatalError("cannot start /usr/bin/python3, the differential tests' reference: \(error)")
    }
  }

  /// How Python reads `bytes`.
  enum Reading: Equatable {
    case value(JSONValue)
    /// Refused by Python, or nested deeper than `JSONValue.maxDepth`.
    case refused
    /// Read by Python, but holding a `\u` escape of a UTF-16 surrogate outside a pair.
    case unpairedSurrogate
  }

  func read(_ bytes: [UInt8]) -> Reading {
    lock.lock()
    defer { lock.unlock() }
    let digits = Array("0123456789abcdef".utf8)
    var hex: [UInt8] = []
    hex.reserveCapacity(bytes.count * 2 + 1)
    for byte in bytes { hex += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
    input.fileHandleForWriting.write(Data(hex + [0x0A]))
    let line = readLine()
    switch line {
    case "x": return .refused
    case "u": return .unpairedSurrogate
    default:
      var tokens = line.split(separator: ";", omittingEmptySubsequences: false)[...]
      guard let value = Self.value(&tokens, depth: 0), tokens.isEmpty else { return .refused }
      return .value(value)
    }
  }

  private func readLine() -> String {
    while true {
      if let newline = pending.firstIndex(of: 0x0A) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        return line
      }
      let data = output.fileHandleForReading.availableData
      if data.isEmpty { fatalError("the differential tests' Python reference ended") }
      pending += data
    }
  }

  /// The value the prefix form `tokens` starts with; nil past `JSONValue.maxDepth` levels.
  private static func value(_ tokens: inout ArraySlice<Substring>, depth: Int) -> JSONValue? {
    guard let token = tokens.popFirst(), let tag = token.first else { return nil }
    let rest = token.dropFirst()
    switch tag {
    case "z": return .null
    case "t": return .bool(true)
    case "f": return .bool(false)
    case "n": return .number(String(rest))
    case "s": return .string(text(hex: rest))
    case "a", "o":
      guard depth < JSONValue.maxDepth, let count = Int(rest) else { return nil }
      if tag == "a" {
        var items: [JSONValue] = []
        for _ in 0..<count {
          guard let item = value(&tokens, depth: depth + 1) else { return nil }
          items.append(item)
        }
        return .array(items)
      }
      var pairs: [(key: String, value: JSONValue)] = []
      for _ in 0..<count {
        guard case .string(let key)? = value(&tokens, depth: depth + 1), let item = value(&tokens, depth: depth + 1) else { return nil }
        pairs.append((key, item))
      }
      return .object(pairs)
    default: return nil
    }
  }

  private static func text(hex: Substring) -> String {
    func nibble(_ c: UInt8) -> UInt8 { c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10 }
    let digits = Array(hex.utf8)
    let bytes = stride(from: 0, to: digits.count - 1, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
    return String(decoding: bytes, as: UTF8.self)
  }
}
