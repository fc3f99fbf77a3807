/// The page's only style sheet, inline: light and dark colours (`prefers-color-scheme`), and
/// a print style on white paper that keeps tables and charts whole.
enum PageStyle {
  static let css = """
    :root { --fg: #1d2125; --bg: #ffffff; --muted: #6a737d; --line: #d0d7de; --panel: #f6f8fa;
      --ok: #2e8540; --failed: #c62828; --interrupted: #e08a00; --skipped: #9aa4ad; --other: #6f42c1;
      --wait: #e0a800; --resumed: #1565c0; }
    @media (prefers-color-scheme: dark) {
      :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8b949e; --line: #30363d; --panel: #161b22;
        --ok: #3fb950; --failed: #f85149; --interrupted: #d29922; --skipped: #6e7681; --other: #a371f7;
        --wait: #d29922; --resumed: #58a6ff; }
    }
    body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
      margin: 1.5em auto; max-width: 1000px; padding: 0 1em; }
    h1 { font-size: 1.5em; margin: 0 0 .4em; }
    h2 { font-size: 1.15em; margin: 1.4em 0 .5em; border-bottom: 1px solid var(--line); }
    dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; margin: 0; }
    dt { color: var(--muted); }
    dd { margin: 0; overflow-wrap: anywhere; }
    table { border-collapse: collapse; width: 100%; font-size: .92em; }
    th, td { border-bottom: 1px solid var(--line); padding: .25em .5em; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
    thead th { color: var(--muted); font-weight: 600; white-space: nowrap; }
    table.steps th[scope=row], td.status, table.steps td:nth-child(2) { white-space: nowrap; }
    table.attempts { width: auto; } table.attempts td:not(:last-child) { white-space: nowrap; }
    td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
    td.tables, td.rows { overflow-wrap: break-word; white-space: normal; }
    tr.member > th { padding-left: 1.6em; font-weight: normal; }
    tr.detail > td { background: var(--panel); }
    table.attempts { margin: .3em 0; }
    .status.ok { color: var(--ok); } .status.failed { color: var(--failed); }
    .status.interrupted { color: var(--interrupted); } .status.skipped, .status.other { color: var(--muted); }
    .error, .problem { color: var(--failed); white-space: pre-wrap; overflow-wrap: anywhere; }
    pre.error { font: inherit; margin: .5em 0; }
    .note, .sql { white-space: pre-wrap; }
    .sql { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
    .label { color: var(--muted); }
    .muted { color: var(--muted); font-weight: normal; }
    svg { max-width: 100%; height: auto; display: block; }
    svg text { fill: var(--fg); font: 12px system-ui, sans-serif; }
    svg text.tick { fill: var(--muted); font-size: 10px; text-anchor: middle; }
    svg .grid { stroke: var(--line); stroke-width: .5; }
    svg .axis { stroke: var(--line); }
    svg .lane-note { fill: var(--muted); font-style: italic; }
    svg rect.bar { opacity: .35; } .chart rect.bar { opacity: 1; }
    svg .ok { fill: var(--ok); } svg .failed { fill: var(--failed); } svg .interrupted { fill: var(--interrupted); }
    svg .skipped { fill: var(--skipped); } svg .other { fill: var(--other); }
    svg rect.wait { fill: url(#wait); stroke: var(--wait); stroke-width: .5; } svg .wait-stripe { fill: var(--wait); }
    svg .resumed { fill: var(--resumed); }
    .legend { color: var(--muted); font-size: .85em; }
    .key { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em; margin-left: .8em; }
    .key.ok { background: var(--ok); } .key.failed { background: var(--failed); } .key.wait { background: var(--wait); }
    .key.resumed { background: var(--resumed); } .key.interrupted { background: var(--interrupted); } .key.skipped { background: var(--skipped); }
    figure.chart { margin: .6em 0 1em; }
    figcaption { font-weight: 600; }
    tr.current > td { font-weight: 600; }
    @media print {
      :root { --fg: #000; --bg: #fff; --panel: #f4f4f4; --line: #bbb; }
      body { margin: 0; max-width: none; font-size: 11px; }
      section, figure, tr { break-inside: avoid; }
      * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
    }

    """
}
