"""The numbers of `nlq report`: EXC, EXF1 and the outcome decomposition of scored runs.

    numbers = build([load_run("sag.scored.jsonl")], by=["db"])

:mod:`nlq.report` lays them out as tables and renders them (text, markdown,
LaTeX, HTML); this module computes them and knows nothing of layout.

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

- confidence: `repair.confidence` (the selection model's, after `nlq repair`),
  else `prediction.confidence`, else `repair.vote_share` (a number in [0, 1])
  -> `reliability`: ten equal-width confidence bins with their record count,
  mean confidence and EXC, and the expected calibration error; `coverage`:
  the share answered and its EXC when only answers at or above a confidence
  are kept.
- `repair.system` -> `sources`: records and EXC per system the chosen answer
  came from.
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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nlq import io
from nlq.errors import InputError
from nlq.mql.values import MISSING

NEAR_MISS_BUCKETS = ("order_only", "row_subset", "row_superset", "value_mismatch")
BUCKETS = ("correct", "no_submission", "invalid", "exec_error", "empty") + NEAR_MISS_BUCKETS
EXTRA_BUCKETS = ("gold_error", "unscored")
_OUTCOMES = {"correct", "no_submission", "invalid", "exec_error", "empty", "gold_error"}
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


CONFIDENCE_FIELDS = ("repair.confidence", "prediction.confidence", "repair.vote_share")


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


def coverage_curve(records: list, points: int = 40) -> list[dict] | None:
    """Coverage against accuracy when only answers at or above a confidence are kept: for each
    threshold (the records' own confidences, at most `points` of them, evenly by rank), the share
    of all records answered and the EXC of those answered. None without confidences."""
    pairs = sorted(((c, _exc(r)) for r in records if (c := confidence(r)) is not None), key=lambda p: -p[0])
    if not pairs:
        return None
    n, out, hits = len(records), [], 0
    step = max(1, len(pairs) // points)
    for i, (c, e) in enumerate(pairs, start=1):
        hits += e
        last = i == len(pairs) or pairs[i][0] != c
        if last and (i % step == 0 or i == len(pairs) or i < step):
            out.append({"threshold": c, "coverage": i / n, "exc": hits / i})
    return out


def sources(records: list) -> list[dict] | None:
    """Which system each chosen answer came from (`repair.system`): records and EXC per system,
    most records first. None when no record names one."""
    by: dict = {}
    for r in records:
        system = _get(r, "repair.system")
        if isinstance(system, str):
            by.setdefault(system, []).append(_exc(r))
    if not by:
        return None
    return [{"system": k, "n": len(v), "exc": sum(v) / len(v)} for k, v in
            sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


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


def present(runs: list[Run], path: str) -> bool:
    """Whether any record of `runs` has the dotted field `path`."""
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
        entry["coverage"] = coverage_curve(run.records)
        entry["sources"] = sources(run.records)
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
        slices.append({"by": path, "present": present(runs, path), "values": values})
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


__all__ = ["Run", "load_run", "load_runs", "run_name", "bucket", "summarize", "bootstrap_interval", "mcnemar",
           "field_value", "confidence", "reliability", "coverage_curve", "sources", "economics", "cascade_point", "cascade_curve", "present",
           "run_warnings", "slice_warnings", "build", "BUCKETS", "EXTRA_BUCKETS", "NEAR_MISS_BUCKETS", "MISSING_VALUE"]
