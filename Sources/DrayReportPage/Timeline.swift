internal import DrayModel
internal import Foundation

/// The run's steps on one time axis, as an inline SVG: a lane per step and one per member of
/// a `parallel` group, so members that overlap in time ran in parallel.
///
/// A step's bar spans its `started_at` and `duration_seconds`. On it, each attempt is a
/// box (green when `ok`, orange when a signal cancelled it, red for an error) and each retry wait a hatched box after the attempt
/// that waited. A report gives an attempt's start from the start of its call, so a step's
/// calls (a sign-in, the scheme fetch, its own request) are placed one after the other, each
/// starting where the previous call's last attempt and wait ended. A download that resumed
/// carries a mark at the attempt's start. A step that did not start (skipped, not run) shows
/// its status and reason in its lane.
struct Timeline {
  var run: RunView

  static let labelWidth = 220.0
  static let plotWidth = 740.0
  static let laneHeight = 24.0
  static let axisHeight = 22.0

  private struct Lane {
    var step: StepView
    var depth: Int
  }

  func write(to page: inout HTMLWriter) {
    let lanes = run.steps.flatMap { step in [Lane(step: step, depth: 0)] + step.members.map { Lane(step: $0, depth: 1) } }
    let origin = Timestamp.seconds(run.startedAt) ?? 0
    let starts = lanes.map { lane in lane.step.startedAt.flatMap(Timestamp.seconds).map { $0 - origin } }
    var span = run.duration
    for (lane, start) in zip(lanes, starts) {
      if let start { span = max(span, start + lane.step.duration) }
    }
    span = max(span, 0.001)
    let scale = Timeline.plotWidth / span
    let width = Timeline.labelWidth + Timeline.plotWidth + 10
    let height = Timeline.axisHeight + Double(lanes.count) * Timeline.laneHeight + 4
    page.raw(
      "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 \(Figures.coordinate(width)) "
        + "\(Figures.coordinate(height))\" width=\"\(Figures.coordinate(width))\" aria-label=\"timeline of the run's steps\">\n")
    page.raw(
      "<defs><pattern id=\"wait\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        + "<rect width=\"3\" height=\"6\" class=\"wait-stripe\"/></pattern></defs>\n")
    writeAxis(span: span, scale: scale, height: height, to: &page)
    for (index, (lane, start)) in zip(lanes, starts).enumerated() {
      let y = Timeline.axisHeight + Double(index) * Timeline.laneHeight
      writeLane(lane, start: start, y: y, scale: scale, to: &page)
    }
    page.raw("</svg>\n")
    page.raw(
      "<p class=\"legend\"><span class=\"key ok\"></span> attempt ok <span class=\"key failed\"></span> attempt failed <span class=\"key interrupted\"></span> interrupted "
        + "<span class=\"key wait\"></span> retry wait <span class=\"key resumed\"></span> download resumed "
        + "<span class=\"key skipped\"></span> skipped or not run</p>\n")
  }

  private func writeAxis(span: Double, scale: Double, height: Double, to page: inout HTMLWriter) {
    let step = Timeline.tickStep(span)
    var t = 0.0
    while t <= span + step / 1000 {
      let x = Timeline.labelWidth + t * scale
      page.raw(
        "<line class=\"grid\" x1=\"\(Figures.coordinate(x))\" y1=\"16\" x2=\"\(Figures.coordinate(x))\" "
          + "y2=\"\(Figures.coordinate(height))\"/><text class=\"tick\" x=\"\(Figures.coordinate(x))\" y=\"12\">")
      page.text(Timeline.tickLabel(t, step: step))
      page.raw("</text>\n")
      t += step
    }
  }

  private func writeLane(_ lane: Lane, start: Double?, y: Double, scale: Double, to page: inout HTMLWriter) {
    let step = lane.step
    let label = (lane.depth > 0 ? "↳ " : "") + step.id
    page.raw(
      "<text class=\"lane-label\" x=\"\(Figures.coordinate(4 + Double(lane.depth) * 14))\" y=\"\(Figures.coordinate(y + 16))\">")
    page.text(label.count > 30 ? String(label.prefix(29)) + "…" : label)
    page.raw("<title>")
    page.text("\(step.id) (\(step.kind)): \(step.status)")
    page.raw("</title></text>\n")
    guard let start else {
      page.raw(
        "<text class=\"lane-note \(StatusClass.of(step.status))\" x=\"\(Figures.coordinate(Timeline.labelWidth + 4))\" "
          + "y=\"\(Figures.coordinate(y + 16))\">")
      page.text(step.status + (step.skipReason.map { ": " + $0 } ?? ""))
      page.raw("</text>\n")
      return
    }
    let x0 = Timeline.labelWidth + start * scale
    rect(
      "bar \(StatusClass.of(step.status))", x: x0, y: y + 3, width: step.duration * scale, height: Timeline.laneHeight - 6,
      title: "\(step.id): \(step.status) in \(Figures.seconds(step.duration))", to: &page)
    var callStart = 0.0
    var callEnd = 0.0
    for (index, attempt) in step.attempts.enumerated() {
      if attempt.number == 1 && index > 0 { callStart = callEnd }
      let begin = start + callStart + attempt.startOffset
      let end = begin + attempt.duration
      callEnd = max(callEnd, end - start + (attempt.wait ?? 0))
      let name = "\(attempt.call ?? step.id) attempt \(attempt.number): \(attempt.outcome)"
      let status = attempt.httpStatus.map { " (HTTP \($0))" } ?? ""
      rect(
        "attempt \(StatusClass.ofOutcome(attempt.outcome))", x: Timeline.labelWidth + begin * scale, y: y + 7,
        width: attempt.duration * scale, height: Timeline.laneHeight - 14,
        title: "\(name)\(status), \(Figures.seconds(attempt.duration))" + (attempt.message.map { ": " + $0 } ?? ""), to: &page)
      if let wait = attempt.wait {
        rect(
          "wait", x: Timeline.labelWidth + end * scale, y: y + 7, width: wait * scale, height: Timeline.laneHeight - 14,
          title: "waited \(Figures.seconds(wait)) before attempt \(attempt.number + 1)"
            + (attempt.waitFromRetryAfter ? " (the server's Retry-After)" : ""), to: &page)
      }
      if let offset = attempt.resumedFrom {
        let x = Timeline.labelWidth + begin * scale
        page.raw(
          "<path class=\"resumed\" d=\"M\(Figures.coordinate(x)) \(Figures.coordinate(y + 2))l5 0l-5 8z\"><title>")
        page.text("\(name): resumed from byte \(Figures.count(offset))")
        page.raw("</title></path>\n")
      }
    }
  }

  /// A rectangle at least half a pixel wide, so that a short attempt stays visible.
  private func rect(_ className: String, x: Double, y: Double, width: Double, height: Double, title: String, to page: inout HTMLWriter) {
    page.raw(
      "<rect class=\"\(className)\" x=\"\(Figures.coordinate(x))\" y=\"\(Figures.coordinate(y))\" "
        + "width=\"\(Figures.coordinate(max(width, 0.5)))\" height=\"\(Figures.coordinate(height))\"><title>")
    page.text(title)
    page.raw("</title></rect>\n")
  }

  /// A round tick interval giving four to ten ticks over `span` seconds.
  static func tickStep(_ span: Double) -> Double {
    let factors = [2.0, 2.5, 2.0]
    var step = 0.001
    var index = 0
    while span / step > 10 {
      step *= factors[index % factors.count]
      index += 1
    }
    return step
  }

  static func tickLabel(_ t: Double, step: Double) -> String {
    if step >= 1 { return "\(Int64(t.rounded()))s" }
    if step >= 0.1 { return String(format: "%.1fs", t) }
    if step >= 0.01 { return String(format: "%.2fs", t) }
    return String(format: "%.3fs", t)
  }
}
