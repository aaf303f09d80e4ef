"""The `report` stage: EXC, EXF1 and the outcome decomposition of scored runs.

    print(render(build([load_run("sag.scored.jsonl")], by=["db"]), "markdown"))

Each scored JSONL file is one run (a system's predictions scored by
`nlq score`). This stage buffers: it reads every record of every run before
it writes anything.

Per run: `n`, EXC (the mean of `score.exc`), its 95% bootstrap interval
(percentile method over `bootstrap` resamples of the records, numpy
generator seeded with `seed`, so a report is reproducible), EXF1 (the mean of
`score.exf1`) and the outcome decomposition: the fraction of records in each
of `correct` (= EXC), `no_submission`, `invalid`, `exec_error`, `empty`, and
`wrong_rows` split by near miss into `order_only`, `row_subset`,
`row_superset` and `value_mismatch`. The fractions sum to one. Two more
buckets appear only when a run has such records: `gold_error` (a benchmark
defect, see :mod:`nlq.score`) and `unscored` (a record without `score`, e.g.
a malformed line); both stay in the denominator with EXC = 0.

Slices (`by`): any dotted field of the records (`db`, `labels.schema_flex`,
`prediction.method`); each value gets, per run, the same summary as a whole
run: its record count `n`, EXC, EXF1 and the outcome decomposition (bucket
counts and fractions of the slice, near-miss subtypes included); an absent
field is the value `(missing)`. In the text formats a slice table has one
row per value (one per value and run when there are several runs).

Nothing to report is said, not silently rendered as zeros: a run with no
record (n = 0) or with records that carry no `score` gets a warning (see
:func:`run_warnings`; `run` passes them to `warn`, stderr by default), and when
no run holds a single scored record the report is an InputError.

Paired test (`ref`): each other run against the reference run on the records
they share by `id` (ids that occur exactly once in both; the report says how
many were paired). With b = records only the reference gets right and c =
records only the run gets right, the exact McNemar p-value is the two-sided
binomial test of c successes in b + c trials at 1/2
(scipy.stats.binomtest); it is 1 when b + c = 0.

Formats: `table` (rich, plain text), `markdown`, `json` (the numbers, as
fractions), `latex` (booktabs tabulars, escaped, paper-ready).
"""

from __future__ import annotations

import io as _io
import sys
from dataclasses import dataclass
from typing import Callable
from pathlib import Path

import numpy as np

from nlq import io
from nlq.errors import InputError
from nlq.mql.values import MISSING

FORMATS = ("table", "markdown", "json", "latex")
NEAR_MISS_BUCKETS = ("order_only", "row_subset", "row_superset", "value_mismatch")
BUCKETS = ("correct", "no_submission", "invalid", "exec_error", "empty") + NEAR_MISS_BUCKETS
EXTRA_BUCKETS = ("gold_error", "unscored")
_OUTCOMES = {"correct", "no_submission", "invalid", "exec_error", "empty", "gold_error"}
# Column headers of the buckets after EXC (correct is the EXC column itself).
_HEADERS = {"no_submission": "NoSub", "invalid": "Invalid", "exec_error": "Exec", "empty": "Empty",
            "order_only": "Order", "row_subset": "Subset", "row_superset": "Superset",
            "value_mismatch": "Value", "gold_error": "GoldErr", "unscored": "Unscored"}
MISSING_VALUE = "(missing)"


@dataclass
class Run:
    """One scored file: a name and its records."""

    name: str
    records: list


def load_run(path: str, name: str | None = None) -> Run:
    """Read a scored JSONL file ('-' = stdin) as a run named after the file by default."""
    return Run(name or run_name(path), list(io.read_records(path, stage="report")))


def run_name(path: str) -> str:
    """`out/sag.scored.jsonl` -> `sag`; '-' -> `stdin`."""
    if path == "-":
        return "stdin"
    name = Path(path).name
    for suffix in (".jsonl", ".json", ".scored"):
        name = name.removesuffix(suffix)
    return name


def load_runs(paths: list[str], names: list[str] = ()) -> list[Run]:
    """The runs of `paths` (stdin when empty), named by `names` or by their files."""
    paths = list(paths) or ["-"]
    names = list(names)
    if names and len(names) != len(paths):
        raise InputError(f"{len(names)} --name for {len(paths)} scored file{'s' if len(paths) > 1 else ''}",
                         hint="give one --name per file, in the same order")
    runs = [load_run(p, names[i] if names else None) for i, p in enumerate(paths)]
    seen: set[str] = set()
    for run in runs:
        if run.name in seen:
            raise InputError(f"two runs are named {run.name!r}", hint="name them with --name")
        seen.add(run.name)
    return runs


# ---------------------------------------------------------------------------
# numbers


def bucket(record: dict) -> str:
    """The decomposition bucket of a scored record."""
    score = record.get("score")
    if not isinstance(score, dict):
        return "unscored"
    outcome = score.get("outcome")
    if outcome == "wrong_rows":
        near = score.get("near_miss")
        if near not in NEAR_MISS_BUCKETS:
            raise InputError(f"record {record.get('id', '?')}: wrong_rows with near_miss {near!r}")
        return near
    if outcome not in _OUTCOMES:
        raise InputError(f"record {record.get('id', '?')}: unknown score outcome {outcome!r}")
    return outcome


def _exc(record: dict) -> int:
    score = record.get("score")
    return int(score.get("exc") or 0) if isinstance(score, dict) else 0


def _exf1(record: dict) -> float:
    score = record.get("score")
    return float(score.get("exf1") or 0.0) if isinstance(score, dict) else 0.0


def summarize(records: list) -> dict:
    """n, EXC, EXF1, bucket counts and fractions of a list of scored records."""
    n = len(records)
    counts = {b: 0 for b in BUCKETS + EXTRA_BUCKETS}
    for record in records:
        counts[bucket(record)] += 1
    return {
        "n": n,
        "exc": sum(map(_exc, records)) / n if n else 0.0,
        "exf1": sum(map(_exf1, records)) / n if n else 0.0,
        "counts": counts,
        "fractions": {b: c / n if n else 0.0 for b, c in counts.items()},
    }


def bootstrap_interval(values: list[int], resamples: int, seed: int, level: float = 0.95):
    """Percentile bootstrap interval of the mean of `values` ([lo, hi]), None when impossible."""
    if not values or resamples <= 0:
        return None
    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=float)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return [float(lo), float(hi)]


def _by_unique_id(records: list) -> dict:
    seen: dict = {}
    for record in records:
        key = record.get("id")
        if key is None:
            continue
        key = str(key)
        seen[key] = None if key in seen else _exc(record)
    return {k: v for k, v in seen.items() if v is not None}


def mcnemar(run: Run, ref: Run) -> dict:
    """Exact paired McNemar test of a run's EXC against a reference run (records paired by id)."""
    from scipy.stats import binomtest

    ours, theirs = _by_unique_id(run.records), _by_unique_id(ref.records)
    paired = sorted(set(ours) & set(theirs))
    ref_only = sum(1 for k in paired if theirs[k] and not ours[k])
    run_only = sum(1 for k in paired if ours[k] and not theirs[k])
    discordant = ref_only + run_only
    p = binomtest(run_only, discordant, 0.5).pvalue if discordant else 1.0
    return {"ref": ref.name, "paired": len(paired), "ref_only": ref_only, "run_only": run_only,
            "p": float(p)}


def field_value(record: dict, path: str) -> str:
    """The value of a dotted field as a slice label."""
    value = record
    for part in path.split("."):
        value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
    if value is MISSING:
        return MISSING_VALUE
    if isinstance(value, str):
        return value
    return io.dumps(value).decode()


def _scored(record: dict) -> bool:
    return isinstance(record.get("score"), dict)


def run_warnings(runs: list[Run]) -> list[str]:
    """What a reader must know before trusting the numbers: empty or (partly) unscored runs."""
    out = []
    for run in runs:
        n = len(run.records)
        unscored = sum(not _scored(r) for r in run.records)
        if n == 0:
            out.append(f"run {run.name} is empty (n = 0): its numbers are not defined")
        elif unscored == n:
            out.append(f"run {run.name} has no scored record ({n} record{'s' if n != 1 else ''} without "
                       "`score`): score it with `nlq score` first")
        elif unscored:
            out.append(f"run {run.name}: {unscored} of {n} records have no `score` "
                       "(counted as unscored, EXC = 0)")
    return out


def build(runs: list[Run], *, by: list[str] = (), ref: str | None = None, bootstrap: int = 1000,
          seed: int = 0) -> dict:
    """The report of several runs: per-run numbers, slices and paired tests (the `json` format)."""
    if not runs:
        raise InputError("no runs to report")
    if not any(_scored(r) for run in runs for r in run.records):
        which = "the run holds no" if len(runs) == 1 else f"none of the {len(runs)} runs holds a"
        raise InputError(f"nothing to report: {which} scored record",
                         hint="report reads the output of `nlq score` (records with a `score` field)")
    reference = None
    if ref is not None:
        reference = next((r for r in runs if r.name == ref), None)
        if reference is None:
            raise InputError(f"--ref {ref}: no such run (runs: {', '.join(r.name for r in runs)})")
    report_runs = []
    for run in runs:
        entry = {"name": run.name, **summarize(run.records)}
        entry["exc_ci"] = bootstrap_interval([_exc(r) for r in run.records], bootstrap, seed)
        entry["mcnemar"] = mcnemar(run, reference) if reference is not None and run is not reference else None
        report_runs.append(entry)
    slices = []
    for path in by:
        labels = sorted({field_value(r, path) for run in runs for r in run.records})
        values = []
        for label in labels:
            per_run = []
            for run in runs:
                records = [r for r in run.records if field_value(r, path) == label]
                per_run.append({"name": run.name, **summarize(records)})
            values.append({"value": label, "runs": per_run})
        slices.append({"by": path, "values": values})
    extra = [b for b in EXTRA_BUCKETS if any(r["counts"][b] for r in report_runs)]
    return {"runs": report_runs, "ref": reference.name if reference is not None else None,
            "buckets": list(BUCKETS) + extra,
            "bootstrap": {"resamples": bootstrap, "seed": seed, "level": 0.95},
            "slices": slices}


# ---------------------------------------------------------------------------
# rendering


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _p(x: float) -> str:
    return f"{x:.3g}"


def _run_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table, shared by every text format."""
    shown = report["buckets"][1:]  # `correct` is the EXC column
    header = ["Run", "n", "EXC", "95% CI", "EXF1"] + [_HEADERS[b] for b in shown]
    if report["ref"] is not None:
        header += [f"p vs {report['ref']}", "paired"]
    rows = []
    for run in report["runs"]:
        ci = run["exc_ci"]
        row = [run["name"], str(run["n"]), _pct(run["exc"]),
               f"[{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "-", _pct(run["exf1"])]
        row += [_pct(run["fractions"][b]) for b in shown]
        if report["ref"] is not None:
            test = run["mcnemar"]
            row += [_p(test["p"]), str(test["paired"])] if test else ["ref", "-"]
        rows.append(row)
    return header, rows


def _slice_table(report: dict, entry: dict) -> tuple[list[str], list[list[str]]]:
    """One row per slice value (per value and run when there are several runs)."""
    several = len(report["runs"]) > 1
    shown = report["buckets"][1:]
    header = [entry["by"]] + (["Run"] if several else []) + ["n", "EXC", "EXF1"] + [_HEADERS[b] for b in shown]
    rows = []
    for value in entry["values"]:
        for cell in value["runs"]:
            numbers = [cell["exc"], cell["exf1"]] + [cell["fractions"][b] for b in shown]
            row = [value["value"]] + ([cell["name"]] if several else []) + [str(cell["n"])]
            rows.append(row + [_pct(x) if cell["n"] else "-" for x in numbers])
    return header, rows


def _labels(header: list[str]) -> int:
    """How many leading columns hold labels (left-aligned) rather than numbers."""
    return 2 if header[1:2] == ["Run"] else 1


def _tables(report: dict):
    yield "EXC, EXF1 and outcome decomposition (% of n)", _run_table(report)
    for entry in report["slices"]:
        yield f"By {entry['by']}", _slice_table(report, entry)


def render_table(report: dict) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = _io.StringIO()
    console = Console(file=buffer, width=400, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    for title, (header, rows) in _tables(report):
        table = Table(title=Text(title), box=box.SIMPLE_HEAD, title_justify="left")
        for i, name in enumerate(header):
            table.add_column(Text(name), justify="left" if i < _labels(header) else "right", no_wrap=True)
        for row in rows:  # Text: a run named "[red]x" is not rich markup
            table.add_row(*map(Text, row))
        console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).strip("\n") + "\n"


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def render_markdown(report: dict) -> str:
    parts = []
    for title, (header, rows) in _tables(report):
        lines = [f"### {_md_cell(title)}", "",
                 "| " + " | ".join(_md_cell(h) for h in header) + " |",
                 "|" + "|".join([":---"] * _labels(header) + ["---:"] * (len(header) - _labels(header))) + "|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters in plain text."""
    return "".join(_LATEX_ESCAPES.get(c, c) for c in text)


def render_latex(report: dict) -> str:
    best = {}
    if len(report["runs"]) > 1:
        for key, column in (("exc", 2), ("exf1", 4)):
            top = max(r[key] for r in report["runs"])
            best[column] = {i for i, r in enumerate(report["runs"]) if r[key] == top}
    parts = []
    for index, (title, (header, rows)) in enumerate(_tables(report)):
        head = [latex_escape(h) for h in header]
        head = [r"EXF\textsubscript{1}" if h == "EXF1" else h for h in head]
        labels = _labels(header)
        lines = [r"% " + latex_escape(title), r"\begin{tabular}{" + "l" * labels + "r" * (len(header) - labels) + "}",
                 r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
        for i, row in enumerate(rows):
            cells = [latex_escape(c) for c in row]
            if index == 0:
                for column, winners in best.items():
                    if i in winners:
                        cells[column] = r"\textbf{" + cells[column] + "}"
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def render(report: dict, fmt: str = "table") -> str:
    """The report as text in one of :data:`FORMATS`."""
    if fmt == "json":
        return io.dumps(report, indent=True).decode() + "\n"
    renderers = {"table": render_table, "markdown": render_markdown, "latex": render_latex}
    if fmt not in renderers:
        raise InputError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    return renderers[fmt](report)


def _stderr(line: str) -> None:
    print(f"nlq: warning: {line}", file=sys.stderr)


def run(paths: list[str], *, names: list[str] = (), by: list[str] = (), ref: str | None = None,
        fmt: str = "table", bootstrap: int = 1000, seed: int = 0,
        warn: Callable[[str], None] | None = None) -> str:
    """Load the scored files, build the report and render it (the whole `nlq report`).

    Each line of :func:`run_warnings` goes to `warn` (default: stderr, as `nlq: warning: ...`).
    """
    runs = load_runs(paths, names)
    if ref is not None and ref in paths:  # --ref may name the file instead of the run
        ref = runs[list(paths).index(ref)].name
    built = build(runs, by=by, ref=ref, bootstrap=bootstrap, seed=seed)
    for line in run_warnings(runs):
        (warn or _stderr)(line)
    return render(built, fmt)


__all__ = ["Run", "load_run", "load_runs", "run_name", "bucket", "summarize", "bootstrap_interval",
           "mcnemar", "field_value", "run_warnings", "build", "render", "render_table", "render_markdown",
           "render_latex", "latex_escape", "run", "FORMATS", "BUCKETS", "EXTRA_BUCKETS"]
