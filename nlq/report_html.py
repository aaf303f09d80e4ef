"""`nlq report --format html`: one self-contained page of charts and tables.

    html = report.render(report.build(runs, by=["db"]), "html")

`nlq.report` builds the numbers and the tables and calls :func:`render` with
them (this module imports nothing of nlq: the report depends on it, not the
other way round).

The page needs nothing but itself: no script, no stylesheet or font to fetch,
every chart an inline SVG drawn here (a handful of rectangles, lines and text
per chart; a charting library would add a dependency, and most inject
scripts). Colours are the Okabe-Ito palette, distinguishable with the common
colour-vision deficiencies, and every segment also carries its percentage and
a `<title>` tooltip, so colour is never the only cue.

Sections, each present only when the report has its numbers:

1. the outcome decomposition of each run, one stacked bar per run;
2. EXC per slice value of every `--by` field, the runs side by side, each bar
   with its record count and 95% bootstrap interval;
3. reliability diagrams: confidence bins against EXC, with counts and ECE;
   the coverage-accuracy curve of every run with confidences; which system each
   chosen answer came from (`repair.system`);
4. the cascade: EXC and model calls saved against the threshold (the curves
   of `--cascade-fallback` and the measured points of cascade runs);
5. the tables of the text report (with the McNemar p-values of `--ref`).
"""

from __future__ import annotations

from html import escape

# Okabe & Ito (2008), "Color Universal Design", plus greys for the buckets beyond eight.
COLOURS = {"correct": "#009E73", "no_submission": "#999999", "invalid": "#000000",
           "exec_error": "#D55E00", "empty": "#F0E442", "order_only": "#56B4E9",
           "row_subset": "#0072B2", "row_superset": "#CC79A7", "value_mismatch": "#E69F00",
           "gold_error": "#555555", "unscored": "#DDDDDD"}
_DARK = {"invalid", "row_subset", "gold_error", "exec_error", "correct"}  # white text reads better on these
NAMES = {"correct": "correct", "no_submission": "no submission", "invalid": "invalid",
         "exec_error": "execution error", "empty": "empty", "order_only": "order only",
         "row_subset": "row subset", "row_superset": "row superset", "value_mismatch": "value mismatch",
         "gold_error": "gold error", "unscored": "unscored"}
RUN_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#999999")
WIDTH = 760
LABEL = 150          # the label column of horizontal bar charts
FONT = 'font-family="sans-serif" font-size="12"'

_CSS = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1em; max-width: 900px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; }
th { border-bottom: 1px solid #888; text-align: right; } td { text-align: right; }
th.label, td.label { text-align: left; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
p.note { font-size: 0.85em; color: #555; }
svg { display: block; margin: 0.5em 0; }
"""


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(label)}">'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", fill: str = "#222", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" {FONT}{extra}>'
            f"{escape(text)}</text>")


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str, cls: str = "") -> str:
    css = f' class="{cls}"' if cls else ""
    return (f'<rect{css} x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{fill}">'
            f"<title>{escape(title)}</title></rect>")


def _line(x1, y1, x2, y2, stroke="#222", extra="") -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"{extra}/>'


def decomposition_chart(built: dict) -> str:
    """One stacked bar per run over the outcome buckets (fractions sum to one), with a legend."""
    buckets = built["buckets"]
    bar, plot = 26, WIDTH - LABEL - 10
    runs = built["runs"]
    body = []
    y = 10
    for run in runs:
        body.append(_text(LABEL - 8, y + bar / 2 + 4, _fit(run["name"], LABEL - 12), "end",
                          extra=' class="run-label"'))
        x, small = LABEL, []
        for b in buckets:
            share = run["fractions"][b]
            if not share:
                continue
            w = share * plot
            body.append(_rect(x, y, w, bar, COLOURS[b], f"{run['name']}: {NAMES[b]} {_pct(share)}% "
                              f"({run['counts'][b]} of {run['n']})", "segment"))
            if w >= 34:
                body.append(_text(x + w / 2, y + bar / 2 + 4, f"{_pct(share)}%", "middle",
                                  "#fff" if b in _DARK else "#000"))
            else:  # too narrow for its label: named under the bar
                small.append(f"{NAMES[b]} {_pct(share)}%")
            x += w
        lines = _wrapped([f"n = {run['n']}", *small], WIDTH - LABEL - 4)
        for k, line in enumerate(lines):
            body.append(_text(LABEL, y + bar + 14 + 13 * k, line, fill="#555", extra=' font-size="11" class="caption"'))
        y += bar + 16 + 13 * len(lines)
    body.append(_text(LABEL + plot / 2, y + 4, "share of the run's records", "middle", "#444",
                      ' class="axis-title"'))
    y += 16
    x = LABEL
    for b in buckets:  # legend, wrapping onto a new line when full
        width = 22 + 7 * len(NAMES[b])
        if x + width > WIDTH:
            x, y = LABEL, y + 18
        body.append(_rect(x, y, 12, 12, COLOURS[b], NAMES[b]))
        body.append(_text(x + 16, y + 10, NAMES[b]))
        x += width + 10
    return _svg(WIDTH, y + 22, body, "outcome decomposition per run")


CHAR = 6.6  # a generous width of one 11-12 px sans-serif character, to wrap text before it clips


def _fit(text: str, width: float) -> str:
    """`text` cut to an (estimated) `width`, with an ellipsis when cut."""
    most = max(int(width // CHAR), 2)
    return text if len(text) <= most else text[:most - 1] + "…"


def _wrapped(parts: list[str], width: float) -> list[str]:
    """Parts joined by " · " into lines no wider than `width` (estimated)."""
    lines, line = [], ""
    for part in parts:
        candidate = f"{line} · {part}" if line else part
        if line and len(candidate) * CHAR > width:
            lines.append(line)
            candidate = part
        line = candidate
    return lines + ([line] if line else [])


def slice_chart(built: dict, entry: dict) -> str:
    """EXC per slice value, one bar per run, with the 95% bootstrap interval and the record count."""
    runs = [r["name"] for r in built["runs"]]
    bar, group_gap, plot = 16, 12, WIDTH - LABEL - 90
    body, y = [], 38
    body += _axis_labels(LABEL, plot, 28)
    for value in entry["values"]:
        top = y
        for i, cell in enumerate(value["runs"]):
            colour = RUN_COLOURS[i % len(RUN_COLOURS)]
            title = f"{entry['by']} = {value['value']}, {cell['name']}: EXC {_pct(cell['exc'])}% of {cell['n']}"
            body.append(_rect(LABEL, y, cell["exc"] * plot, bar, colour, title, "slice-bar"))
            ci = cell.get("exc_ci")
            if ci:
                lo, hi = LABEL + ci[0] * plot, LABEL + ci[1] * plot
                mid = y + bar / 2
                body += [_line(lo, mid, hi, mid, extra=' class="ci"'), _line(lo, mid - 4, lo, mid + 4),
                         _line(hi, mid - 4, hi, mid + 4)]
            label = f"{_pct(cell['exc'])}%  n={cell['n']}" if cell["n"] else "n=0"
            body.append(_text(LABEL + plot + 6, y + bar - 4, label))
            y += bar + 2
        body.append(_text(LABEL - 8, (top + y) / 2 + 4, _fit(str(value["value"]), LABEL - 12), "end"))
        y += group_gap
    body.append(_line(LABEL, 20, LABEL, y - group_gap, "#888"))
    body.append(_text(LABEL + plot / 2, 12 - 1, "EXC (execution accuracy)", "middle", "#444",
                      ' class="axis-title" font-weight="bold"'))
    if len(runs) > 1:
        body += _run_legend(runs, y)
        y += 20
    return _svg(WIDTH, y + 4, body, f"EXC by {entry['by']}")


def _axis_labels(x0: float, plot: float, y: float) -> list[str]:
    return [_text(x0 + plot * t / 100, y, f"{t}%", "middle", "#666") for t in (0, 25, 50, 75, 100)]


def _run_legend(runs: list[str], y: float) -> list[str]:
    body, x = [], LABEL
    for i, name in enumerate(runs):
        body.append(_rect(x, y, 12, 12, RUN_COLOURS[i % len(RUN_COLOURS)], name))
        body.append(_text(x + 16, y + 10, name))
        x += 30 + 7 * len(name)
    return body


def reliability_chart(run: dict) -> str:
    """Confidence bins (x) against EXC (y) of one run: bars with counts, the diagonal of perfect calibration."""
    rel = run["reliability"]
    size, left, top = 300, 56, 20
    body = [_rect(left, top, size, size, "#f7f7f7", "plot area")]
    for b in rel["bins"]:
        if not b["n"]:
            continue
        x, w = left + b["lo"] * size, (b["hi"] - b["lo"]) * size
        h = b["exc"] * size
        body.append(_rect(x + 1, top + size - h, w - 2, h, "#0072B2",
                          f"confidence {b['lo']:.1f}-{b['hi']:.1f}: EXC {_pct(b['exc'])}% of {b['n']} "
                          f"(mean confidence {b['confidence']:.2f})", "rel-bar"))
        body.append(_text(x + w / 2, top + size - h - 4, str(b["n"]), "middle", "#222", ' font-size="10"'))
    # drawn over the bars, dark and dashed, so it shows across them and the empty plot alike
    body.append(_line(left, top + size, left + size, top, "#D55E00",
                      ' stroke-width="2" stroke-dasharray="6 4" class="diagonal"'))
    for t in (0, 0.5, 1):
        body.append(_text(left + t * size, top + size + 14, f"{t:g}", "middle", "#666"))
        body.append(_text(left - 4, top + size - t * size + 4, f"{t:g}", "end", "#666"))
    body.append(_text(left + size / 2, top + size + 30, "confidence", "middle", extra=' class="axis-title"'))
    body.append(_text(14, top + size / 2, "EXC of the bin", "middle",
                      extra=f' class="axis-title" transform="rotate(-90 14 {top + size / 2:.1f})"'))
    body.append(_text(left + size + 10, top + 12, f"{run['name']}"))
    body.append(_text(left + size + 10, top + 30, f"ECE {rel['ece']:.3f}"))
    body.append(_text(left + size + 10, top + 48, f"{rel['n']} records with confidence"))
    if rel["without"]:
        body.append(_text(left + size + 10, top + 66, f"{rel['without']} without"))
    return _svg(WIDTH, top + size + 40, body, f"reliability diagram of {run['name']}")


def cascade_chart(built: dict) -> str:
    """EXC (solid) and calls saved (dashed) against the threshold; measured cascade runs as dots."""
    curves = built["cascade_curves"]
    points = [r["cascade"] for r in built["runs"] if r["cascade"]]
    left, top, w, h = 60, 20, 450, 260
    body = [_rect(left, top, w, h, "#f7f7f7", "plot area")]

    def xy(t, v):
        return left + min(max(t, 0), 1) * w, top + h - v * h

    for t in (0, 0.25, 0.5, 0.75, 1):
        body.append(_text(left + t * w, top + h + 14, f"{t:g}", "middle", "#666"))
        body.append(_text(left - 4, top + h - t * h + 4, f"{100 * t:.0f}%", "end", "#666"))
    body.append(_text(left + w / 2, top + h + 30, "threshold", "middle", extra=' class="axis-title"'))
    body.append(_text(12, top + h / 2, "EXC / calls saved", "middle",
                      extra=f' class="axis-title" transform="rotate(-90 12 {top + h / 2:.1f})"'))
    legend_y = top + 10
    for i, curve in enumerate(curves):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        for key, dash in (("exc", ""), ("calls_saved", ' stroke-dasharray="6 4"')):
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(p["threshold"], p[key]) for p in curve["points"]))
            body.append(f'<polyline class="cascade-{key}" points="{path}" fill="none" stroke="{colour}" '
                        f'stroke-width="2"{dash}><title>{escape(curve["run"])} then {escape(curve["fallback"])}: '
                        f'{"EXC" if key == "exc" else "calls saved"}</title></polyline>')
        body.append(_text(left + w + 12, legend_y, f"{curve['run']} → {curve['fallback']}", fill=colour))
        legend_y += 18
    for p in points:
        x, y = xy(p["threshold"], p["exc"])
        body.append(f'<circle class="cascade-point" cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#D55E00">'
                    f"<title>{escape(p['run'])}: threshold {p['threshold']:g}, EXC {_pct(p['exc'])}%, "
                    f"calls saved {_pct(p['calls_saved'])}%</title></circle>")
        x, y = xy(p["threshold"], p["calls_saved"])
        body.append(f'<circle class="cascade-point" cx="{x:.1f}" cy="{y:.1f}" r="5" fill="none" '
                    f'stroke="#D55E00" stroke-width="2"><title>{escape(p["run"])}: calls saved '
                    f"{_pct(p['calls_saved'])}%</title></circle>")
    body.append(_text(left + w + 12, legend_y + 6, "solid: EXC"))
    body.append(_text(left + w + 12, legend_y + 24, "dashed: calls saved"))
    if points:
        body.append(_text(left + w + 12, legend_y + 42, "dots: cascade runs", fill="#D55E00"))
    return _svg(WIDTH, top + h + 40, body, "cascade EXC and calls saved against the threshold")


def coverage_chart(built: dict) -> str:
    """Coverage (x) against the EXC of the answered records (y), one line per run with confidences:
    keeping only answers at or above a confidence threshold, lowered from the left."""
    runs = [(i, r) for i, r in enumerate(built["runs"]) if r.get("coverage")]
    left, top, w, h = 60, 20, 450, 260
    body = [_rect(left, top, w, h, "#f7f7f7", "plot area")]
    low = min(p["exc"] for _, r in runs for p in r["coverage"])
    floor = max(0.0, min(0.5, int(low * 10) / 10))

    def xy(c, v):
        return left + c * w, top + h - (v - floor) / (1 - floor) * h

    for t in (0, 0.25, 0.5, 0.75, 1):
        body.append(_text(left + t * w, top + h + 14, f"{100 * t:.0f}%", "middle", "#666"))
        v = floor + t * (1 - floor)
        body.append(_text(left - 4, top + h - t * h + 4, f"{100 * v:.0f}%", "end", "#666"))
    body.append(_text(left + w / 2, top + h + 30, "coverage (share of records answered)", "middle",
                      extra=' class="axis-title"'))
    body.append(_text(12, top + h / 2, "EXC of the answered", "middle",
                      extra=f' class="axis-title" transform="rotate(-90 12 {top + h / 2:.1f})"'))
    legend_y = top + 10
    for i, run in runs:
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(p["coverage"], p["exc"]) for p in run["coverage"]))
        body.append(f'<polyline class="coverage" points="{path}" fill="none" stroke="{colour}" stroke-width="2">'
                    f"<title>{escape(run['name'])}: EXC against coverage</title></polyline>")
        body.append(_text(left + w + 12, legend_y, run["name"], fill=colour))
        legend_y += 18
    return _svg(WIDTH, top + h + 40, body, "coverage against accuracy")


def sources_table(built: dict) -> str:
    """Which system each chosen answer came from (`repair.system`), per run."""
    rows = "".join(f'<tr><td class="label">{escape(r["name"])}</td><td class="label">{escape(s["system"])}</td>'
                   f'<td>{s["n"]}</td><td>{_pct(s["n"] / r["n"]) if r["n"] else "0.0"}%</td>'
                   f'<td>{_pct(s["exc"])}%</td></tr>'
                   for r in built["runs"] if r.get("sources") for s in r["sources"])
    return ('<table class="sources"><caption>Chosen answers by system</caption><thead><tr>'
            '<th class="label">run</th><th class="label">system</th><th>records</th><th>share</th>'
            f"<th>EXC</th></tr></thead><tbody>{rows}</tbody></table>")


def totals_note(built: dict) -> str | None:
    """A warning when the runs do not cover the same number of records."""
    counts = {r["name"]: r["n"] for r in built["runs"]}
    if len(set(counts.values())) <= 1:
        return None
    listed = "; ".join(f"{escape(name)}: {n:,}" for name, n in counts.items())
    return (f'<p class="note totals"><strong>The runs cover different numbers of records</strong> ({listed}): '
            "their percentages are not over the same records, so compare them with care (score the "
            "runs on the same task file to compare them record for record).</p>")


def _html_table(table) -> str:
    """One `nlq.report.Table` as an HTML table."""
    head = "".join(f'<th class="label">{escape(h)}</th>' if i < table.labels else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(table.header))
    rows = "".join("<tr>" + "".join(f'<td class="label">{escape(c)}</td>' if i < table.labels
                                    else f"<td>{escape(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in table.rows)
    return f"<table><caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def render(built: dict, shown: list, legend: str) -> str:
    """The whole page for a built report (see :func:`nlq.report.build`), with the
    report's tables `shown` (`nlq.report.tables`) and their `legend`."""
    names = ", ".join(r["name"] for r in built["runs"])
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>nlq report: {escape(names)}</title><style>{_CSS}</style></head><body>",
             f"<h1>nlq report</h1><p>{len(built['runs'])} run{'s' if len(built['runs']) != 1 else ''}: "
             f"{escape(names)}. Percentages are of each run's records; EXC = execution accuracy.</p>"]
    note = totals_note(built)
    if note:
        parts.append(note)
    parts += ["<h2>Outcome decomposition</h2>", decomposition_chart(built)]
    for entry in built["slices"]:
        parts += [f"<h2>EXC by {escape(entry['by'])}</h2>", slice_chart(built, entry),
                  '<p class="note">Bars: EXC; whiskers: 95% bootstrap interval; n: records in the slice.</p>']
    with_confidence = [r for r in built["runs"] if r["reliability"]]
    if with_confidence:
        parts.append("<h2>Reliability</h2>")
        parts += [reliability_chart(r) for r in with_confidence]
        parts.append('<p class="note">Bars: EXC of the records in each confidence bin (count above); '
                     "dashed line: perfect calibration. Confidence is <code>repair.confidence</code>, else "
                     "<code>prediction.confidence</code>, else <code>repair.vote_share</code>.</p>")
    with_coverage = [r for r in built["runs"] if r.get("coverage")]
    if with_coverage:
        parts += ["<h2>Coverage and accuracy</h2>", coverage_chart(built),
                  '<p class="note">Each line keeps only the answers at or above a confidence threshold, '
                  "lowered from left to right: the share of records answered against the EXC of those "
                  "answered (the rest abstain, as with <code>--min-confidence</code>).</p>"]
    if any(r.get("sources") for r in built["runs"]):
        parts += ["<h2>Where the chosen answers came from</h2>", sources_table(built)]
    if built["cascade_curves"] or any(r["cascade"] for r in built["runs"]):
        parts += ["<h2>Cascade</h2>", cascade_chart(built),
                  '<p class="note">At threshold t the confident run answers when its confidence is at least '
                  "t and the fallback answers otherwise; calls saved = share of tasks answered without "
                  "the fallback model.</p>"]
    parts.append("<h2>Tables</h2>")
    parts += [_html_table(t) for t in shown]
    parts.append(f'<p class="note">{escape(legend)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


__all__ = ["render", "decomposition_chart", "slice_chart", "reliability_chart", "cascade_chart", "coverage_chart",
           "sources_table", "totals_note", "COLOURS"]
