/// The one rule for a platform answer that should be JSON (platform-api.md §3–§4), shared
/// by the `table` and `request` steps (docs/steps.md, "An answer that should be JSON").
///
/// The body decides, read strictly (RFC 8259 and RFC 3629, by dray's own lexer): an HTML
/// error page, `NaN` or a blank body is no JSON document whatever its `Content-Type`, and
/// a JSON document is one whatever its `Content-Type` says. The `Content-Type` is named
/// where it does not say JSON (`AnswerHead.unexpectedKind`): in the error of an answer
/// refused, and in a note of one read as JSON. What each step reads beyond that is its
/// own: `table` a table answer (`AnswerReader`), `request` any JSON document
/// (`JSONEvents.documentProblem`).
enum JSONAnswerRule {
  /// The error of an answer refused: `expected` ("a table answer", "a JSON document"),
  /// why not, and what the server said it is (`sentAs`, nil when it said JSON).
  static func refusal(resource: String, expected: String, reason: String, sentAs: String?) -> StepError {
    .unreadableAnswer(resource: resource, expected: expected, reason: reason, sentAs: sentAs)
  }

  /// The note of an answer read as JSON though the server said it is something else
  /// (`sentAs`); nil when it said JSON.
  static func note(sentAs: String?) -> String? {
    sentAs.map { "the server sent the answer as \($0); its body is a JSON document and was read as one" }
  }
}
