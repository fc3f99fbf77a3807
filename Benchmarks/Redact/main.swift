// Times `Redactor.redact(_:)` in one process, for docs/report.md's "Secrets" cost figures.
//
//     dray-bench-redact [RUNS]     # default 41
//
// Eight secrets of `Säcret/1 wörd+1`'s kind are registered; each case is one 64 KiB excerpt,
// masked RUNS times; the script prints the number of forms registered and, per case, the
// median CPU time of one `redact(_:)` call in milliseconds (clock_gettime(CLOCK_PROCESS_CPUTIME_ID)).
//
// - json: a JSON error body (keys, numbers, short strings, one secret near the end);
// - candidates: lines of `S...`, every `S` a candidate first byte of every secret;
// - escapes: a body with an escape every few bytes, escaped three layers deep
//   (`%2541`, `\\\\u00e4`, `&amp;`).
import DrayModel
import Foundation

let runs = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 41 : 41
let secrets = (1...8).map { "Säcret/\($0) wörd+\($0)" }
let redactor = Redactor(secrets)
let size = 64 * 1024

func filled(_ unit: String) -> String {
  var text = ""
  while text.utf8.count < size { text += unit }
  return text
}

let cases: [(String, String)] = [
  ("json", filled(#"{"error": "invalid_request", "code": 4711, "detail": "the field \"x\" is missing", "ok": false}, "#) + secrets[7]),
  ("candidates", filled("Säcret/9 wörd+0 Säcret Sä S SS Säc\n")),
  ("escapes", filled(#"%2541\\\\u00e4&amp;x%20y&#228;"#)),
]

func cpuMilliseconds() -> Double {
  var time = timespec()
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
  return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
}

print("forms: \(redactor.secrets.count) for \(secrets.count) secrets; \(runs) runs, medians")
for (name, text) in cases {
  var times: [Double] = []
  var sink = 0
  for _ in 0..<runs {
    let start = cpuMilliseconds()
    sink &+= redactor.redact(text).utf8.count
    times.append(cpuMilliseconds() - start)
  }
  times.sort()
  print(
    name.padding(toLength: 12, withPad: " ", startingAt: 0)
      + String(format: "%7.2f ms  (%d bytes out)", times[times.count / 2], sink / runs))
}
