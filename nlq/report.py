"""The `report` stage: the numbers of scored runs (:mod:`nlq.report_stats`) as tables.

    print(render(build([load_run("sag.scored.jsonl")], by=["db"]), "markdown"))

This stage buffers: it reads every record of every run before it writes
anything. What the numbers are (EXC and its bootstrap interval, EXF1, the
outcome buckets, slices, the paired McNemar test, calibration, interaction
economics, cascades) is documented in :mod:`nlq.report_stats`; its names are
re-exported here (`nlq.report.build`, `nlq.report.Run`, ...).

Formats: `table` (rich, plain text), `markdown`, `json` (the numbers, as
fractions), `latex` (booktabs tabulars, escaped, paper-ready) and `html` (one
self-contained page with SVG charts, see :mod:`nlq.report_html`). Layouts:
`full` (every bucket) and `paper` (the compact columns of the TEND paper's
Tables III-V: NoSub, Exec, Empty, Struct. = order-only + subset + superset,
Value, Invalid only when non-zero; the claim-axis slices as one row per run
with the slice values as columns; the interaction economics). The table
format fits `width` columns: when the full bucket set is wider, it falls back
to the compact columns; a legend of the columns follows the tables.
"""

from __future__ import annotations

import io as _io
import sys
import textwrap
from dataclasses import dataclass
from typing import Callable

from nlq import io, report_html
from nlq.errors import InputError
from nlq.text import terminal_safe
from nlq.report_stats import (BUCKETS, EXTRA_BUCKETS, Run, bootstrap_interval,
                              bucket, build, cascade_curve, cascade_point, confidence, economics, field_value,
                              load_run, load_runs, mcnemar, reliability, run_name, run_warnings, slice_warnings,
                              present, summarize)

FORMATS = ("table", "markdown", "json", "latex", "html")
# Column headers of the buckets after EXC (correct is the EXC column itself).
_HEADERS = {"no_submission": "NoSub", "invalid": "Invalid", "exec_error": "Exec", "empty": "Empty",
            "order_only": "Order", "row_subset": "Subset", "row_superset": "Superset",
            "value_mismatch": "Value", "gold_error": "GoldErr", "unscored": "Unscored"}

LAYOUTS = ("full", "paper")
# What each column means, for the legend under a table.
LEGEND = (("EXC", "execution accuracy (column-tolerant, beta-bounded)"), ("EXF1", "result-set F1"),
          ("NoSub", "no submission"), ("Invalid", "does not parse or uses a forbidden operator"),
          ("Exec", "execution error"), ("Empty", "ran, returned no rows"),
          ("Order", "right rows, wrong order"), ("Subset", "fewer rows, all of them gold rows"),
          ("Superset", "every gold row plus extra rows"),
          ("Struct.", "order-only + subset + superset near misses"),
          ("Value", "other wrong rows (values differ)"), ("GoldErr", "the gold itself fails (benchmark defect)"),
          ("Unscored", "a record without score"), ("Inv.", "invalid"), ("Str.", "structural near misses (order-only + subset + superset)"),
          ("Gold", "GoldErr"), ("Unsc.", "unscored"))
# Shorter headers for narrow terminals (the legend spells them out).
_SHORT = {"Invalid": "Inv.", "Struct.": "Str.", "GoldErr": "Gold", "Unscored": "Unsc."}
STRUCT = ("order_only", "row_subset", "row_superset")


@dataclass
class Table:
    """One table of a text report: a title, a header, rows of cells, and how many label columns lead."""

    title: str
    header: list
    rows: list
    labels: int = 1
    narrow: list | None = None  # what replaces this table in a terminal too narrow for it


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _p(x: float) -> str:
    return f"{x:.3g}"


def _p_paper(x: float) -> str:
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def _columns(report: dict, compact: bool) -> list[tuple[str, tuple]]:
    """(header, buckets summed) of the outcome columns after EXC."""
    shown = report["buckets"][1:]  # `correct` is the EXC column
    if not compact:
        return [(_HEADERS[b], (b,)) for b in shown]
    columns = []
    for b in shown:
        if b in STRUCT:
            if b == "order_only":
                columns.append(("Struct.", STRUCT))
        else:
            columns.append((_HEADERS[b], (b,)))
    return columns


def _share(cell: dict, buckets: tuple) -> float:
    return sum(cell["fractions"][b] for b in buckets)


def _run_table(report: dict, compact: bool = False) -> Table:
    columns = _columns(report, compact)
    header = ["Run", "n", "EXC", "95% CI", "EXF1"] + [_SHORT.get(h, h) if compact else h for h, _ in columns]
    paired = report["ref"] is not None and not compact  # compact: the test gets its own table
    if paired:
        header += [f"p vs {report['ref']}", "paired"]
    rows = []
    for run in report["runs"]:
        ci = run["exc_ci"]
        interval = (f"{_pct(ci[0])}-{_pct(ci[1])}" if compact else f"[{_pct(ci[0])}, {_pct(ci[1])}]") if ci else "-"
        row = [run["name"], str(run["n"]), _pct(run["exc"]), interval, _pct(run["exf1"])]
        row += [_pct(_share(run, b)) for _, b in columns]
        if paired:
            test = run["mcnemar"]
            row += [_p(test["p"]), str(test["paired"])] if test else ["ref", "-"]
        rows.append(row)
    title = "EXC, EXF1 and outcome decomposition (% of n)"
    if compact:
        return Table(title, header, rows)
    narrow = [_run_table(report, compact=True)]
    if any(r["mcnemar"] for r in report["runs"]):
        narrow.append(_mcnemar_table(report))
    return Table(title, header, rows, narrow=narrow)


def _mcnemar_table(report: dict) -> Table:
    rows = [[r["name"], str(t["paired"]), str(t["ref_only"]), str(t["run_only"]), _p(t["p"])]
            for r in report["runs"] if (t := r["mcnemar"])]
    return Table(f"Exact McNemar test against {report['ref']} (records paired by id)",
                 ["Run", "paired", "ref only", "run only", "p"], rows)


def _slice_table(report: dict, entry: dict, compact: bool = False) -> Table:
    """One row per slice value (per value and run when there are several runs)."""
    several = len(report["runs"]) > 1
    columns = _columns(report, compact)
    header = [entry["by"]] + (["Run"] if several else []) + ["n", "EXC", "EXF1"]
    header += [_SHORT.get(h, h) if compact else h for h, _ in columns]
    rows = []
    for value in entry["values"]:
        for cell in value["runs"]:
            numbers = [cell["exc"], cell["exf1"]] + [_share(cell, b) for _, b in columns]
            row = [value["value"]] + ([cell["name"]] if several else []) + [str(cell["n"])]
            rows.append(row + [_pct(x) if cell["n"] else "-" for x in numbers])
    table = Table(f"By {entry['by']}", header, rows, 2 if several else 1)
    if not compact:
        table.narrow = [_slice_table(report, entry, compact=True)]
    return table


def _mean(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _economics_table(report: dict) -> Table | None:
    """Model calls, tokens, repair rounds and ReAct steps per run; None when no run recorded any."""
    runs = [r for r in report["runs"] if r["economics"]]
    if not runs:
        return None
    fields = [("Calls/task", "model_calls", 2), ("Tokens/task", "tokens", 0),
              ("Rounds/attempt", "repair_rounds", 2), ("Steps/task", "react_steps", 1)]
    fields = [f for f in fields if any(r["economics"][f[1]] is not None for r in runs)]
    header = ["Run", "n"] + [h for h, _, _ in fields]
    rows = [[r["name"], str(r["n"])] + [_mean(r["economics"][key], digits) for _, key, digits in fields]
            for r in report["runs"] if r["economics"]]
    return Table("Interaction economics (means over the records that record them)", header, rows)


def _calibration_table(report: dict) -> Table | None:
    runs = [r for r in report["runs"] if r["reliability"]]
    if not runs:
        return None
    rows = [[r["name"], str(r["reliability"]["n"]), " / ".join(r["reliability"]["sources"]),
             f"{r['reliability']['ece']:.3f}"] for r in runs]
    return Table("Confidence calibration (expected calibration error over 10 bins)",
                 ["Run", "with conf.", "field", "ECE"], rows)


def _cascade_table(report: dict) -> Table | None:
    points = sorted((r["cascade"] for r in report["runs"] if r["cascade"]), key=lambda c: c["threshold"])
    if not points:
        return None
    rows = [[c["run"], f"{c['threshold']:g}", _pct(c["exc"]), _pct(c["calls_saved"])] for c in points]
    return Table("Cascade runs (% of n; calls saved = tasks answered without a model)",
                 ["Run", "threshold", "EXC", "calls saved"], rows)


def _full_tables(report: dict) -> list[Table]:
    tables = [_run_table(report)]
    tables += [_slice_table(report, entry) for entry in report["slices"]]
    tables += [t for t in (_economics_table(report), _calibration_table(report), _cascade_table(report)) if t]
    return tables


PAPER_SLICES = ("labels.schema_flex", "labels.anti_sql")


def _paper_main(report: dict) -> Table:
    """Table III/V of the paper: EXC, EXF1, the compact decomposition and p vs the reference."""
    columns = [(h, b) for h, b in _columns(report, compact=True)
               if h != "Invalid" or any(r["counts"]["invalid"] for r in report["runs"])]
    header = ["Method", "EXC", "EXF1"] + [h for h, _ in columns]
    if report["ref"] is not None:
        header.append(f"p vs {report['ref']}")
    rows = []
    for run in report["runs"]:
        row = [run["name"], _pct(run["exc"]), _pct(run["exf1"])] + [_pct(_share(run, b)) for _, b in columns]
        if report["ref"] is not None:
            row.append(_p_paper(run["mcnemar"]["p"]) if run["mcnemar"] else "-")
        rows.append(row)
    return Table("Accuracy and outcome decomposition (%)", header, rows)


def _paper_slice(report: dict, entry: dict) -> Table:
    """Table IV of the paper: EXC per slice value, one row per run, record counts in the header.

    Its narrow form turns it around: one row per slice value, one column per run."""
    header, same = ["Method"], []
    for value in entry["values"]:
        counts = {cell["n"] for cell in value["runs"]}
        same.append(len(counts) == 1)
        header.append(f"{value['value']} ({counts.pop()})" if same[-1] else value["value"])

    def cell_text(cell, with_count):
        text = _pct(cell["exc"]) if cell["n"] else "-"
        return f"{text} ({cell['n']})" if with_count else text

    rows = [[run["name"]] + [cell_text(value["runs"][i], not ok) for value, ok in zip(entry["values"], same)]
            for i, run in enumerate(report["runs"])]
    title = f"EXC (%) by {entry['by']} (record counts in parentheses)"
    turned = [[value["value"] + (f" ({value['runs'][0]['n']})" if ok else "")]
              + [cell_text(cell, not ok) for cell in value["runs"]] for value, ok in zip(entry["values"], same)]
    narrow = Table(title, [entry["by"]] + [r["name"] for r in report["runs"]], turned)
    return Table(title, header, rows, narrow=[narrow])


def _paper_tables(report: dict) -> list[Table]:
    tables = [_paper_main(report)]
    tables += [_paper_slice(report, entry) for entry in report["slices"]]
    tables += [t for t in (_economics_table(report), _cascade_table(report)) if t]
    return tables


def tables(report: dict, layout: str = "full") -> list[Table]:
    """The tables of a report in a layout (each may carry its narrow replacement)."""
    if layout not in LAYOUTS:
        raise InputError(f"unknown report layout {layout!r} (choose from {', '.join(LAYOUTS)})")
    return _paper_tables(report) if layout == "paper" else _full_tables(report)


def legend(shown: list[Table]) -> str:
    """One line naming what each outcome column of these tables means."""
    used = {h for t in shown for h in t.header}
    return "; ".join(f"{name} = {text}" for name, text in LEGEND if name in used) + "."


def _rich_table(t: Table, width: int, tight: bool = False) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    buffer = _io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    console.print(Text(t.title))  # not the table's title: rich would wrap it to the table's width
    table = RichTable(box=box.SIMPLE_HEAD, collapse_padding=tight, pad_edge=not tight)
    for i, name in enumerate(t.header):
        # When space is short, headers wrap and long labels are cut with an ellipsis;
        # a number never breaks, so each record stays on one line.
        cells = max((len(row[i]) for row in t.rows), default=1)
        if i < t.labels:
            table.add_column(Text(name), justify="left", no_wrap=True, overflow="ellipsis",
                             min_width=min(cells, 14))
        else:
            table.add_column(Text(name), justify="right", overflow="fold", min_width=cells)
    for row in t.rows:  # Text: a run named "[red]x" is not rich markup
        table.add_row(*map(Text, row))
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).strip("\n")


_UNLIMITED = 1000


def _fit(t: Table, limit: int) -> list[tuple[Table, str]]:
    """The table rendered, or its narrow replacement when it is wider than `limit`.

    Without a narrow form, a wide table first loses its cell padding, then is
    squeezed by rich (headers wrap, labels are cut)."""
    for tight in (False, True):
        text = _rich_table(t, _UNLIMITED, tight)
        if max(map(len, text.splitlines())) <= limit:
            return [(t, text)]
        if t.narrow:
            return [pair for n in t.narrow for pair in _fit(n, limit)]
    return [(t, _rich_table(t, limit, tight=True))]


def render_table(report: dict, layout: str = "full", width: int | None = None) -> str:
    """Plain-text tables (rich) within `width` columns (None: as wide as they need), then a legend.

    A table wider than `width` is replaced by its narrow form (compact columns
    with near misses summed into Struct. and the paired test in a table of its
    own; paper slices turned around), and only then squeezed.
    """
    limit = width or _UNLIMITED
    fitted = [pair for t in tables(report, layout) for pair in _fit(t, limit)]
    note = textwrap.fill(legend([t for t, _ in fitted]), width=min(limit, 100))
    return "\n\n".join(text for _, text in fitted) + f"\n\n{note}\n"


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def render_markdown(report: dict, layout: str = "full") -> str:
    parts = []
    shown = tables(report, layout)
    for t in shown:
        lines = [f"### {_md_cell(t.title)}", "",
                 "| " + " | ".join(_md_cell(h) for h in t.header) + " |",
                 "|" + "|".join([":---"] * t.labels + ["---:"] * (len(t.header) - t.labels)) + "|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
        parts.append("\n".join(lines))
    parts.append(_md_cell(legend(shown)))
    return "\n\n".join(parts) + "\n"


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters in plain text."""
    return "".join(_LATEX_ESCAPES.get(c, c) for c in text)


def _latex_cell(text: str) -> str:
    return r"$<$0.001" if text == "<0.001" else latex_escape(text)


def render_latex(report: dict, layout: str = "full") -> str:
    best = {}
    if len(report["runs"]) > 1:
        offset = 1 if layout == "paper" else 2  # paper: Method, EXC, EXF1; full: Run, n, EXC, CI, EXF1
        for key, column in (("exc", offset), ("exf1", offset + (1 if layout == "paper" else 2))):
            top = max(r[key] for r in report["runs"])
            best[column] = {i for i, r in enumerate(report["runs"]) if r[key] == top}
    parts = []
    for index, t in enumerate(tables(report, layout)):
        head = [latex_escape(h) for h in t.header]
        head = [r"EXF\textsubscript{1}" if h == "EXF1" else h for h in head]
        lines = [r"% " + latex_escape(t.title),
                 r"\begin{tabular}{" + "l" * t.labels + "r" * (len(t.header) - t.labels) + "}",
                 r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
        for i, row in enumerate(t.rows):
            cells = [_latex_cell(c) for c in row]
            if index == 0:
                for column, winners in best.items():
                    if i in winners:
                        cells[column] = r"\textbf{" + cells[column] + "}"
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def render(report: dict, fmt: str = "table", layout: str = "full", width: int | None = None) -> str:
    """The report as text in one of :data:`FORMATS` and :data:`LAYOUTS` (`width`: table format only)."""
    if layout not in LAYOUTS:
        raise InputError(f"unknown report layout {layout!r} (choose from {', '.join(LAYOUTS)})")
    if fmt == "json":
        return io.dumps(report, indent=True).decode() + "\n"
    if fmt == "table":
        return render_table(report, layout, width)
    if fmt == "html":
        shown = tables(report, layout)
        return report_html.render(report, shown, legend(shown))
    renderers = {"markdown": render_markdown, "latex": render_latex}
    if fmt not in renderers:
        raise InputError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    return renderers[fmt](report, layout)


def _stderr(line: str) -> None:
    print(terminal_safe(f"nlq: warning: {line}"), file=sys.stderr)


def run(paths: list[str], *, names: list[str] = (), by: list[str] = (), ref: str | None = None,
        fmt: str = "table", layout: str = "full", bootstrap: int = 1000, seed: int = 0,
        cascade_fallback: str | None = None, width: int | None = None,
        warn: Callable[[str], None] | None = None) -> str:
    """Load the scored files, build the report and render it (the whole `nlq report`).

    `--ref` and `--cascade-fallback` may name a file instead of a run. The
    paper layout with no `by` slices by the claim axes (`labels.schema_flex`,
    `labels.anti_sql`) that the records have. Each line of
    :func:`run_warnings` and :func:`slice_warnings` goes to `warn` (default:
    stderr, as `nlq: warning: ...`).
    """
    runs = load_runs(paths, names)

    def by_file(name):
        return runs[list(paths).index(name)].name if name is not None and name in paths else name

    if layout == "paper" and not by:
        by = [path for path in PAPER_SLICES if present(runs, path)]
    built = build(runs, by=by, ref=by_file(ref), bootstrap=bootstrap, seed=seed,
                  cascade_fallback=by_file(cascade_fallback))
    for line in run_warnings(runs) + slice_warnings(built):
        (warn or _stderr)(line)
    return render(built, fmt, layout, width)


def explain(paths: list[str], record_id: str, *, names: list[str] = ()) -> str:
    """Why record `record_id` got its verdict, in each run that holds it (`nlq report --explain ID`):
    the outcome, then its `score.diff` as readable lines (row counts, gold values with no partner,
    surplus values, the first order mismatch) or the error of an outcome decided before rows were
    compared. InputError when no run holds the id."""
    runs = load_runs(paths, names)
    out = []
    for run in runs:
        for record in run.records:
            if str(record.get("id")) != record_id:
                continue
            out.extend(_explained(run.name, record) + [""])
    if not out:
        raise InputError(f"no record with id {record_id!r} in {', '.join(r.name for r in runs)}",
                         hint="ids are the records' `id` fields, e.g. clinic/7")
    return "\n".join(out)


def _explained(run_name_: str, record: dict) -> list[str]:
    score = record.get("score")
    head = f"{record.get('id')} in run {run_name_}"
    if not isinstance(score, dict):
        return [f"{head}: not scored (run `nlq score` first)"]
    near = f" ({score['near_miss']})" if score.get("near_miss") else ""
    lines = [f"{head}: {score.get('outcome')}{near}, EXC {score.get('exc')}, EXF1 {score.get('exf1', 0):.2f}"]
    if record.get("question"):
        lines.append(f"  question: {record['question']}")
    diff = score.get("diff")
    if score.get("outcome") == "correct" or not isinstance(diff, dict):
        return lines
    lines.append(f"  why: {diff.get('summary')}")
    rows = diff.get("rows")
    if rows:
        lines.append(f"  rows: gold {rows['gold']}, prediction {rows['pred']}, aligned one-to-one {rows['aligned']}")
    for key, label in (("missing", "gold values with no partner"), ("surplus", "surplus values")):
        part = diff.get(key)
        if part and part.get("count"):
            shown = ", ".join(io.dumps(v).decode() for v in part["values"])
            more = f" (first {len(part['values'])} shown)" if part["count"] > len(part["values"]) else ""
            lines.append(f"  {label} ({part['count']}){more}: {shown}")
    order = diff.get("order")
    if order:
        lines.append(f"  first order mismatch at row {order['position']}: gold {io.dumps(order['gold']).decode()}, "
                     f"prediction {io.dumps(order['pred']).decode()}")
    return lines


__all__ = ["explain", "Run", "Table", "load_run", "load_runs", "run_name", "bucket", "summarize", "bootstrap_interval",
           "mcnemar", "field_value", "confidence", "reliability", "economics", "cascade_point", "present",
           "cascade_curve", "run_warnings", "slice_warnings", "build", "tables", "legend", "render",
           "render_table", "render_markdown", "render_latex", "latex_escape", "run", "FORMATS", "LAYOUTS",
           "BUCKETS", "EXTRA_BUCKETS"]
