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

What predictions carry, when they carry it (each part is absent from the
report when no record has its fields):

- confidence: `prediction.confidence`, else `repair.vote_share` (a number in
  [0, 1]) -> `reliability`: ten equal-width confidence bins with their record
  count, mean confidence and EXC, and the expected calibration error.
- interaction economics -> `economics`: model calls and tokens per task from
  `prediction.usage = {model_calls, prompt_tokens, completion_tokens, ...}`
  (plus `repair.usage` when a repair stage called a model), repair rounds per
  attempt from `repair.rounds` / `repair.attempts` (each an integer, or a list
  with one entry per attempt), ReAct steps per task from `prediction.steps`
  (an integer); each mean is over the records that carry the field.
- cascade: a run whose predictions carry `prediction.cascade = {threshold,
  answered_by}` (`answered_by` is `"rules"` when the LLM-free method's answer
  was kept, anything else when the fallback model answered) is one measured
  point: its threshold, EXC and the share of tasks answered without a model
  call ("calls saved"). `cascade_fallback` names a run to fall back on: every
  run with confidence then gets the curve a cascade would trace over all
  thresholds (records paired by id; below the threshold the fallback run's
  outcome counts), see :func:`cascade_curve`.

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
from pathlib import Path

import numpy as np

from nlq import io, report_html
from nlq.errors import InputError
from nlq.mql.values import MISSING

FORMATS = ("table", "markdown", "json", "latex", "html")
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
    value = _lookup(record, path)
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


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _lookup(record: dict, path: str):
    """The value at a dotted path, MISSING when a part is absent."""
    value = record
    for part in path.split("."):
        value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
    return value


def _get(record: dict, path: str):
    value = _lookup(record, path)
    return None if value is MISSING else value


CONFIDENCE_FIELDS = ("prediction.confidence", "repair.vote_share")


def confidence(record: dict) -> float | None:
    """The record's confidence: `prediction.confidence`, else `repair.vote_share`; None when neither."""
    for path in CONFIDENCE_FIELDS:
        value = _number(_get(record, path))
        if value is not None:
            return value
    return None


def reliability(records: list, bins: int = 10) -> dict | None:
    """Confidence bins against EXC (a reliability diagram's numbers) and the expected calibration error.

    Bins are equal-width over [0, 1] (a confidence of 1 falls in the last);
    records without a confidence are left out and counted in `without`.
    """
    pairs = [(c, _exc(r)) for r in records if (c := confidence(r)) is not None]
    if not pairs:
        return None
    sources = [path for path in CONFIDENCE_FIELDS if any(_number(_get(r, path)) is not None for r in records)]
    table = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [(c, e) for c, e in pairs if lo <= c < hi or (i == bins - 1 and c >= hi)]
        table.append({"lo": lo, "hi": hi, "n": len(inside),
                      "confidence": sum(c for c, _ in inside) / len(inside) if inside else None,
                      "exc": sum(e for _, e in inside) / len(inside) if inside else None})
    ece = sum(b["n"] * abs(b["exc"] - b["confidence"]) for b in table if b["n"]) / len(pairs)
    return {"sources": sources, "n": len(pairs), "without": len(records) - len(pairs), "bins": table,
            "ece": ece}


def _usage(record: dict) -> list[dict]:
    return [u for u in (_get(record, "prediction.usage"), _get(record, "repair.usage")) if isinstance(u, dict)]


def _rounds_attempts(record: dict) -> tuple[float, float] | None:
    rounds, attempts = _get(record, "repair.rounds"), _get(record, "repair.attempts")
    if isinstance(rounds, list):
        rounds = [_number(r) for r in rounds]
        return (sum(rounds), len(rounds)) if rounds and None not in rounds else None
    rounds = _number(rounds)
    if rounds is None:
        return None
    attempts = len(attempts) if isinstance(attempts, list) else _number(attempts)
    return (rounds, attempts) if attempts else None


def economics(records: list) -> dict | None:
    """Model calls, tokens and ReAct steps per task, repair rounds per attempt; None when nothing is recorded.

    Each figure is a mean over the records that carry its field (their count
    is given beside it), None when no record does.
    """
    usage = [u for r in records if (u := _usage(r))]
    calls = [sum(_number(u.get("model_calls")) or 0 for u in us) for us in usage]
    tokens = [sum((_number(u.get("prompt_tokens")) or 0) + (_number(u.get("completion_tokens")) or 0) for u in us)
              for us in usage]
    repairs = [ra for r in records if (ra := _rounds_attempts(r)) is not None]
    steps = [s for r in records if (s := _number(_get(r, "prediction.steps"))) is not None]
    if not (usage or repairs or steps):
        return None
    attempts = sum(a for _, a in repairs)
    return {"tasks_with_usage": len(usage),
            "model_calls": sum(calls) / len(calls) if calls else None,
            "tokens": sum(tokens) / len(tokens) if tokens else None,
            "tasks_with_repair": len(repairs),
            "repair_rounds": sum(r for r, _ in repairs) / attempts if attempts else None,
            "tasks_with_steps": len(steps),
            "react_steps": sum(steps) / len(steps) if steps else None}


def cascade_point(run: Run) -> dict | None:
    """A cascade run's measured point (threshold, EXC, share answered without a model), None if not a cascade."""
    marks = [_get(r, "prediction.cascade") for r in run.records]
    marks = [m for m in marks if isinstance(m, dict)]
    if not marks:
        return None
    thresholds = sorted({t for m in marks if (t := _number(m.get("threshold"))) is not None})
    if len(thresholds) != 1:
        raise InputError(f"run {run.name}: cascade records carry {len(thresholds) or 'no'} distinct thresholds "
                         "(expected one per run)")
    n = len(run.records)
    saved = sum(1 for m in marks if m.get("answered_by") == "rules")
    return {"run": run.name, "threshold": thresholds[0], "exc": sum(map(_exc, run.records)) / n,
            "calls_saved": saved / n, "n": n}


def cascade_curve(cheap: Run, fallback: Run) -> dict | None:
    """EXC and model calls saved of a cascade over every threshold: `cheap` answers at or above it.

    Records are paired by unique id; a cheap record without a confidence
    always falls back. At threshold t a paired task scores the cheap run's EXC
    when its confidence is >= t, the fallback run's otherwise; calls saved is
    the share answered by the cheap run. Thresholds are 0, every distinct
    confidence, and 1 (everything below 1 falls back).
    """
    fb = _by_unique_id(fallback.records)
    counts: dict = {}
    for record in cheap.records:
        key = record.get("id")
        if key is not None:
            counts[str(key)] = counts.get(str(key), 0) + 1
    pairs = [(confidence(r), _exc(r), fb[str(r["id"])]) for r in cheap.records
             if r.get("id") is not None and counts[str(r["id"])] == 1 and str(r["id"]) in fb]
    if not pairs or all(c is None for c, _, _ in pairs):
        return None
    known = {c for c, _, _ in pairs if c is not None}
    points = []
    for t in sorted(known | {0.0} | ({1.0} if max(known) < 1.0 else set())):
        kept = [(c is not None and c >= t) for c, _, _ in pairs]
        exc = sum(e if k else f for k, (_, e, f) in zip(kept, pairs)) / len(pairs)
        points.append({"threshold": t, "exc": exc, "calls_saved": sum(kept) / len(pairs)})
    return {"run": cheap.name, "fallback": fallback.name, "paired": len(pairs), "points": points}


def _present(runs: list[Run], path: str) -> bool:
    return any(_lookup(r, path) is not MISSING for run in runs for r in run.records)


def build(runs: list[Run], *, by: list[str] = (), ref: str | None = None, bootstrap: int = 1000,
          seed: int = 0, cascade_fallback: str | None = None) -> dict:
    """The report of several runs: per-run numbers, slices and paired tests (the `json` format)."""
    if not runs:
        raise InputError("no runs to report")
    if not any(_scored(r) for run in runs for r in run.records):
        which = "the run holds no" if len(runs) == 1 else f"none of the {len(runs)} runs holds a"
        raise InputError(f"nothing to report: {which} scored record",
                         hint="report reads the output of `nlq score` (records with a `score` field)")
    reference = _named(runs, ref, "--ref")
    fallback = _named(runs, cascade_fallback, "--cascade-fallback")
    report_runs = []
    for run in runs:
        entry = {"name": run.name, **summarize(run.records)}
        entry["exc_ci"] = bootstrap_interval([_exc(r) for r in run.records], bootstrap, seed)
        entry["mcnemar"] = mcnemar(run, reference) if reference is not None and run is not reference else None
        entry["reliability"] = reliability(run.records)
        entry["economics"] = economics(run.records)
        entry["cascade"] = cascade_point(run)
        report_runs.append(entry)
    slices = []
    for path in by:
        labels = sorted({field_value(r, path) for run in runs for r in run.records})
        values = []
        for label in labels:
            per_run = []
            for run in runs:
                records = [r for r in run.records if field_value(r, path) == label]
                per_run.append({"name": run.name, **summarize(records),
                                "exc_ci": bootstrap_interval([_exc(r) for r in records], bootstrap, seed)})
            values.append({"value": label, "runs": per_run})
        slices.append({"by": path, "present": _present(runs, path), "values": values})
    curves = []
    if fallback is not None:
        curves = [c for run in runs if run is not fallback and (c := cascade_curve(run, fallback))]
    extra = [b for b in EXTRA_BUCKETS if any(r["counts"][b] for r in report_runs)]
    return {"runs": report_runs, "ref": reference.name if reference is not None else None,
            "buckets": list(BUCKETS) + extra,
            "bootstrap": {"resamples": bootstrap, "seed": seed, "level": 0.95},
            "slices": slices, "cascade_curves": curves}


def _named(runs: list[Run], name: str | None, option: str) -> Run | None:
    if name is None:
        return None
    found = next((r for r in runs if r.name == name), None)
    if found is None:
        raise InputError(f"{option} {name}: no such run (runs: {', '.join(r.name for r in runs)})")
    return found


def slice_warnings(report: dict) -> list[str]:
    """A `--by` field that no record has: every record lands in `(missing)`, say so."""
    return [f"--by {entry['by']}: no record has this field (every record is {MISSING_VALUE})"
            for entry in report["slices"] if not entry["present"]]


# ---------------------------------------------------------------------------
# rendering

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
    print(f"nlq: warning: {line}", file=sys.stderr)


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
        by = [path for path in PAPER_SLICES if _present(runs, path)]
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
           "mcnemar", "field_value", "confidence", "reliability", "economics", "cascade_point",
           "cascade_curve", "run_warnings", "slice_warnings", "build", "tables", "legend", "render",
           "render_table", "render_markdown", "render_latex", "latex_escape", "run", "FORMATS", "LAYOUTS",
           "BUCKETS", "EXTRA_BUCKETS"]
