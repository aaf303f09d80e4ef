"""The `score` stage: execute gold and prediction, and add EXC, EXF1 and the outcome.

    for record in run(io.read_records("tasks.jsonl"), EmbeddedBackend("fixtures/worlds")):
        record["score"]["outcome"]   # 'correct', 'empty', ...

Each record gains `score`:

    {"exc": 0|1, "exf1": float, "outcome": str, "near_miss": str|null,
     "order_sensitive": bool|null, "gold_rows": int|null, "pred_rows": int|null,
     "ms": float|null, "error": {"stage", "type", "message"}|null, "diff": object|null}

`diff` explains every verdict but `correct` (null): for an executed
prediction, `nlq.normexec.diff` (row counts, gold values with no partner,
surplus values, the first order mismatch, a `summary` line); for an outcome
decided before rows are compared, `{summary}` naming the error.

Input: `gold` (`{collection, pipeline}`) or `gold_mql` (mongosh or JSON text),
`db`, and `prediction`: `{collection, pipeline}`, `{mql}` (mongosh or JSON
text) or a bare query string. `ms` is the prediction's execution time.

Outcome, exactly one per record (metric rules: :mod:`nlq.normexec`):

- `no_submission`: the prediction is absent, null, carries a typed
  `failure` (the method abstained, ran out of budget, the model failed), or
  holds no query. A typed solver failure is not a submission (paper §IV-A3).
  `error` is that failure (the prediction's, else the record's own
  `failure`) when there is one. A record that failed at an earlier stage
  (a malformed input line included) and has no gold is `no_submission`
  too, with `error` = its failure: it stays in the denominator as a
  failure of the run, not as a benchmark defect.
- `invalid`: the prediction does not parse, is neither an object nor a
  query string, or uses a forbidden operator; a forbidden query
  is never executed.
- `exec_error`: the prediction failed while running (incl. timeout, row or
  byte cap, an unknown operator, which MongoDB reports when it runs the
  query, an operator the embedded engine does not implement, and an
  unexpected engine error, typed `internal_error`).
- `correct`, `empty`, `wrong_rows` (with `near_miss`): the executed
  prediction compared with the gold result.
- `gold_error`: a task record that did not fail before scoring cannot be
  judged because its gold is absent, unparseable, forbidden or fails to run,
  or it names no `db` or a database the backend does not hold
  (`unknown_db`). This is a benchmark defect, not a system outcome: it
  scores 0, stays in the denominator, carries `error.stage == "gold"`, and
  is listed by `--self-check`. A valid benchmark has none, so the six
  system outcomes sum to one. An unexpected internal error of the evaluator
  itself on a record also lands here (`error.stage == "score"`, type
  `internal_error`): the record cannot be judged, and the stream goes on.

Environment errors are not outcomes: a BackendError (the database cannot be
reached or read: server down, unreadable data files) stops the run with that
error instead of being charged to the gold or the prediction.

Gold results are cached per (db, gold query) for the whole run.

`self_check=True` scores every gold against itself and, at the end, reports
to `summary` a count line, then each gold that does not earn EXC = 1 (a
benchmark defect: `defect <id>: <type>: <message>`), then each gold whose
result is empty (`empty <id>: ...`: it earns EXC = 1, as an empty prediction
against an empty gold is correct, but it cannot tell systems apart).

`beta_sweep=True` runs the surplus probes of :data:`PROBES` on each non-empty
gold result, beside the record's usual score (the prediction is scored as
without the flag), adds `score.probes` (probe ->
the smallest beta at which it earns EXC, null = never up to
:data:`MAX_PROBE_BETA`) and reports a JSON summary line to `summary`: for
every beta the number of golds it separates (all accept probes accepted, all
reject probes rejected), the smallest beta that separates every gold (null
when none does), the smallest beta that separates the most (`best_beta`),
and the golds the run's own beta leaves unseparated.

Probes, each built row by row from the gold result (so an order-sensitive
gold keeps its order): `leftover_id` (+1 value, an ObjectId) and
`two_helpers` (+2 values) must be accepted; `three_surplus` (+3 values),
`document_dump` (each row merged into a document of the gold's collection,
as a pipeline without its final projection returns it), `empty` (no rows) and
`constant` (one constant value per row) must be rejected. A narrow collection
makes a dump with at most beta surplus values: such a gold is reported as
unseparated, which is a finding about the metric, not about the gold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from nlq import io
from nlq.errors import (BackendError, ExecutionError, InputError, NlqError,
                        UnknownDatabaseError, UnknownOperatorError, UnsupportedOperatorError, failure,
                        json_type)
from nlq.execute import CollectionCheck, gold_source, unknown_database
from nlq.mql.limits import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.mql import analyze
from nlq.mql.mongosh import parse_query
from nlq.mql.values import ObjectId
from nlq.normexec import DEFAULT_BETA, Rows, compare, diff, exc, prepare

NO_SUBMISSION, INVALID, EXEC_ERROR, GOLD_ERROR = "no_submission", "invalid", "exec_error", "gold_error"
OUTCOMES = ("correct", NO_SUBMISSION, INVALID, EXEC_ERROR, "empty", "wrong_rows")

# Errors of a submitted prediction that make it `exec_error` (what a server
# reports when it runs the query); every other NlqError (parse error, bad
# Extended JSON, forbidden operator) is `invalid`, except BackendError, which
# is the environment's and escapes.
_EXEC_ERRORS = (ExecutionError, UnknownOperatorError, UnsupportedOperatorError)
INTERNAL_ERROR = "internal_error"

MAX_PROBE_BETA = 16
ACCEPT_PROBES = ("leftover_id", "two_helpers")
REJECT_PROBES = ("three_surplus", "document_dump", "empty", "constant")
PROBES = ACCEPT_PROBES + REJECT_PROBES


@dataclass
class GoldResult:
    """A gold query's execution, cached per (db, query) within a run."""

    query: object = None          # the parsed Query
    rows: list | None = None      # raw result rows
    prepared: Rows | None = None  # canonical rows for comparison
    ordered: bool | None = None   # root $sort/$limit/$skip/$setWindowFields
    error: dict | None = None     # typed failure with stage "gold"


class Scorer:
    """Scores records against one backend, caching gold results."""

    def __init__(self, backend, *, beta: int = DEFAULT_BETA, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, warn: Callable[[str], None] | None = None):
        self.backend, self.beta, self.timeout, self.max_rows = backend, beta, timeout, max_rows
        self.check_collections = CollectionCheck(backend, warn)
        self._gold: dict = {}
        self._databases: dict = {}  # db -> None (usable) or why it is unknown

    # -- databases -------------------------------------------------------------------
    def check_database(self, db: str) -> None:
        """Raise UnknownDatabaseError when the backend holds no database `db`.

        A BackendError while listing or loading a database the backend does
        hold (server down, unreadable files) escapes: it is no fault of the record.
        """
        if db not in self._databases:
            self._databases[db] = unknown_database(self.backend, db)
        if self._databases[db] is not None:
            raise UnknownDatabaseError(self._databases[db])

    # -- gold ------------------------------------------------------------------------
    def gold(self, record: dict) -> GoldResult:
        source = gold_source(record)
        db = record.get("db")
        if source is None:
            return GoldResult(error=failure("gold", InputError.type, "the record has no gold or gold_mql"))
        if db is None or db == "":
            return GoldResult(error=failure("gold", InputError.type,
                                            "the record has no db: add \"db\": NAME, the database it is about"))
        if not isinstance(db, str):
            return GoldResult(error=failure("gold", InputError.type,
                                            f"the record's db must be a string, not {json_type(db)}"))
        try:
            query = parse_query(source)
        except BackendError:
            raise
        except NlqError as exc_:
            return GoldResult(error=exc_.to_failure("gold"))
        except Exception as exc_:  # noqa: BLE001 - a parser bug must not lose the record
            return GoldResult(error=_internal("gold", exc_))
        key = (db, io.dumps(query.to_json()))
        cached = self._gold.get(key)
        if cached is None:
            cached = self._run_gold(db, query)
            self._gold[key] = cached
        return cached

    def _run_gold(self, db: str, query) -> GoldResult:
        try:
            ordered = analyze.order_sensitive(query)
            analyze.check_forbidden(query)
            self.check_database(db)
            rows = self.execute(db, query)
            prepared = prepare(rows)
        except BackendError:
            raise
        except NlqError as exc_:
            return GoldResult(query=query, error=exc_.to_failure("gold"))
        except Exception as exc_:  # noqa: BLE001 - an engine bug must not lose the record
            return GoldResult(query=query, error=_internal("gold", exc_))
        return GoldResult(query, rows, prepared, ordered)

    # -- execution -------------------------------------------------------------------
    def execute(self, db: str, query) -> list:
        self.check_collections(db, query)
        return self.backend.aggregate(db, query.collection, query.pipeline,
                                      timeout=self.timeout, max_rows=self.max_rows)

    # -- one record ------------------------------------------------------------------
    def score(self, record: dict, submission=None) -> dict:
        """The `score` object of a record; `submission` overrides its prediction."""
        earlier = record.get("failure")
        if earlier and gold_source(record) is None:
            return _score(NO_SUBMISSION, error=_as_failure(earlier, "input"))
        gold = self.gold(record)
        if gold.error is not None:
            return _score(GOLD_ERROR, error=gold.error, order_sensitive=gold.ordered)
        base = {"order_sensitive": gold.ordered, "gold_rows": len(gold.rows)}
        prediction = record.get("prediction")
        if submission is None:
            if prediction is not None and not isinstance(prediction, (dict, str)):
                return _score(INVALID, error=failure("prediction", InputError.type,
                                                     "a prediction must be an object, a query string or null, "
                                                     f"not {json_type(prediction)}"), **base)
            submission = submitted_query(prediction)
            if submission is None:
                if isinstance(prediction, dict) and prediction.get("failure"):
                    return _score(NO_SUBMISSION, error=_as_failure(prediction["failure"], "prediction"), **base)
                return _score(NO_SUBMISSION, error=_as_failure(earlier, "input") if earlier else None, **base)
        try:
            query = parse_query(submission)
            analyze.check_forbidden(query)
        except BackendError:
            raise
        except NlqError as exc_:
            return _score(INVALID, error=exc_.to_failure("prediction"), **base)
        except Exception as exc_:  # noqa: BLE001 - a parser bug must not lose the record
            return _score(INVALID, error=_internal("prediction", exc_), **base)
        started = time.perf_counter()
        try:
            rows = self.execute(record["db"], query)
        except BackendError:
            raise
        except _EXEC_ERRORS as exc_:
            ms = _ms(started)
            return _score(EXEC_ERROR, error=exc_.to_failure("prediction"), ms=ms, **base)
        except NlqError as exc_:
            return _score(INVALID, error=exc_.to_failure("prediction"), **base)
        except Exception as exc_:  # noqa: BLE001 - an engine bug must not lose the record
            return _score(EXEC_ERROR, error=_internal("prediction", exc_), ms=_ms(started), **base)
        ms = _ms(started)
        verdict = compare(rows, gold.prepared, ordered=gold.ordered, beta=self.beta)
        explained = None if verdict.exc else diff(rows, gold.rows, ordered=gold.ordered, beta=self.beta)
        return {"exc": verdict.exc, "exf1": verdict.exf1, "outcome": verdict.outcome,
                "near_miss": verdict.near_miss, "order_sensitive": gold.ordered,
                "gold_rows": len(gold.rows), "pred_rows": len(rows), "ms": ms, "error": None,
                "diff": explained}

    # -- metric validation -----------------------------------------------------------
    def probes(self, record: dict) -> dict | None:
        """The smallest beta at which each surplus probe of a gold result earns EXC."""
        gold = self.gold(record)
        if gold.error is not None or not gold.rows:
            return None
        rows = gold.rows
        documents = self.backend.sample(record["db"], gold.query.collection, len(rows), seed=0)
        results = {
            "leftover_id": [_with_surplus(r, i, 1) for i, r in enumerate(rows)],
            "two_helpers": [_with_surplus(r, i, 2) for i, r in enumerate(rows)],
            "three_surplus": [_with_surplus(r, i, 3) for i, r in enumerate(rows)],
            "empty": [],
            "constant": [{"constant": "__nlq_constant__"} for _ in rows],
        }
        if documents:  # an empty collection (a $documents gold) has nothing to dump
            results["document_dump"] = [{**documents[i % len(documents)], **_as_document(r)}
                                        for i, r in enumerate(rows)]
        return {name: _smallest_beta(results[name], gold) for name in PROBES if name in results}


def _smallest_beta(probe: list, gold: GoldResult) -> int | None:
    """Binary search for the smallest beta <= MAX_PROBE_BETA at which a probe passes (EXC is
    monotone in beta: a larger bound only adds alignments)."""
    prepared = prepare(probe)
    if not exc(prepared, gold.prepared, ordered=gold.ordered, beta=MAX_PROBE_BETA):
        return None
    lo, hi = 0, MAX_PROBE_BETA
    while lo < hi:
        mid = (lo + hi) // 2
        if exc(prepared, gold.prepared, ordered=gold.ordered, beta=mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _as_document(row) -> dict:
    return row if isinstance(row, dict) else {"value": row}


def _with_surplus(row, i: int, n: int) -> dict:
    """A gold row plus `n` surplus values: a leftover `_id`-like key, then helper columns."""
    extra = [ObjectId(f"{i:024x}"), i, f"__nlq_helper_{i}"][:n]
    probe = dict(_as_document(row))
    for k, value in enumerate(extra):
        probe[f"__nlq_probe_{k}"] = value
    return probe


def separated(probes: dict, beta: int) -> bool:
    """True when `beta` accepts every accept probe and rejects every reject probe that was run."""
    accepted = all(probes[p] is not None and probes[p] <= beta for p in ACCEPT_PROBES)
    rejected = all(probes.get(p) is None or probes[p] > beta for p in REJECT_PROBES)
    return accepted and rejected


def _internal(stage: str, exc_: Exception) -> dict:
    """The typed failure of an unexpected exception (a bug), naming it."""
    return failure(stage, INTERNAL_ERROR, f"{type(exc_).__name__}: {exc_}")


def _as_failure(value, stage: str) -> dict:
    """An earlier failure as a typed failure object, completing a partial one (`stage` by default)."""
    given = value if isinstance(value, dict) else {}

    def text(key: str, default: str) -> str:
        found = given.get(key)
        return found if isinstance(found, str) and found else default

    return failure(text("stage", stage), text("type", InputError.type),
                   text("message", f"failed before scoring: {io.dumps(value).decode()[:200]}"))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _score(outcome: str, *, error=None, order_sensitive=None, gold_rows=None, ms=None) -> dict:
    """The score of an outcome decided without comparing rows; its `diff` only says why."""
    return {"exc": 0, "exf1": 0.0, "outcome": outcome, "near_miss": None,
            "order_sensitive": order_sensitive, "gold_rows": gold_rows, "pred_rows": None,
            "ms": ms, "error": error, "diff": {"summary": _reason(outcome, error)}}


def _reason(outcome: str, error: dict | None) -> str:
    if error is None:
        return "no prediction was submitted" if outcome == NO_SUBMISSION else outcome
    message = str(error.get("message") or "").split("\n", 1)[0]
    return f"{outcome}: {error.get('stage')} {error.get('type')}: {message}"


def submitted_query(prediction):
    """The query a prediction submits (JSON object or text), or None for no submission."""
    if isinstance(prediction, str):
        return prediction if prediction.strip() else None
    if not isinstance(prediction, dict) or prediction.get("failure"):
        return None
    if prediction.get("mql") is not None:
        return prediction["mql"]
    if "pipeline" in prediction or "collection" in prediction:
        return {k: prediction[k] for k in ("collection", "pipeline") if k in prediction}
    return None


def run(records: Iterable[dict], backend, *, beta: int = DEFAULT_BETA, timeout: float = DEFAULT_TIMEOUT,
        max_rows: int = DEFAULT_MAX_ROWS, self_check: bool = False,
        beta_sweep: bool = False, summary: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None) -> Iterator[dict]:
    """Yield each record with its `score` added (see the module docstring).

    With `self_check` the prediction is the record's own gold; `beta_sweep` probes
    the gold results and leaves the predictions' scores as they are. Their
    findings are passed line by line to `summary` once the input ends.
    `warn` is told (once each) about collections a gold or a prediction names that
    its database does not hold; they read as empty, as in MongoDB.
    """
    scorer = Scorer(backend, beta=beta, timeout=timeout, max_rows=max_rows, warn=warn)
    defects: list[str] = []
    empties: list[str] = []
    sweep: list[tuple[str, dict]] = []
    total = 0
    skipped: list[str] = []
    for record in records:
        total += 1
        try:
            if self_check:
                submission = gold_source(record)
                score = scorer.score(record, submission if submission is not None else "")
            else:
                score = scorer.score(record)
        except BackendError:
            raise
        except Exception as exc_:  # noqa: BLE001 - the evaluator's own bug must not lose the record
            score = _score(GOLD_ERROR, error=_internal("score", exc_))
        if self_check:
            defect = _defect(score)
            if score["outcome"] == NO_SUBMISSION:
                skipped.append(f"skipped {_name(record, total)}: failed before scoring: {defect}")
            elif defect:
                defects.append(f"defect {_name(record, total)}: {defect}")
            elif score["gold_rows"] == 0:
                empties.append(f"empty {_name(record, total)}: the gold returns no rows")
        if beta_sweep:
            try:
                probes = scorer.probes(record)
            except BackendError:
                raise
            except Exception as exc_:  # noqa: BLE001 - a probe's bug must not lose the record
                probes = None
                score["probes_error"] = _internal("score", exc_)
            if probes is not None:
                score["probes"] = probes
                sweep.append((_name(record, total), probes))
        yield {**record, "score": score}
    if summary is None:
        return
    if self_check:
        golds = total - len(skipped)
        line = (f"self-check: {golds - len(defects)} of {golds} golds earn EXC = 1 against themselves; "
                f"{len(defects)} defect{'s' if len(defects) != 1 else ''}; {len(empties)} empty "
                f"gold{'s' if len(empties) != 1 else ''} (EXC = 1, but any empty prediction would be too)")
        if skipped:
            line += f"; {len(skipped)} record{'s' if len(skipped) != 1 else ''} failed before scoring"
        summary(line)
        for line in defects + empties + skipped:
            summary(line)
    if beta_sweep:
        summary(io.dumps({"beta_sweep": sweep_summary(sweep, beta, total)}).decode())


def _name(record: dict, position: int) -> str:
    return str(record.get("id") or f"record {position}")


def _defect(score: dict) -> str | None:
    """Why a gold scored against itself does not earn EXC = 1, or None."""
    error = score["error"]
    if error is not None:
        return f"{error['type']}: {error['message'].splitlines()[0]}"
    if score["outcome"] != "correct":
        near = f" ({score['near_miss']})" if score["near_miss"] else ""
        return f"not reproducible: {score['outcome']}{near} against itself"
    return None


def sweep_summary(sweep: list[tuple[str, dict]], beta: int, total: int) -> dict:
    """Per beta, how many probed golds it separates; the smallest beta separating all."""
    betas = range(MAX_PROBE_BETA + 1)
    counts = {str(b): sum(separated(p, b) for _, p in sweep) for b in betas}
    everywhere = [b for b in betas if counts[str(b)] == len(sweep)] if sweep else []
    return {
        "golds": total,
        "probed": len(sweep),
        "separated_at": counts,
        "smallest_separating_beta": everywhere[0] if everywhere else None,
        "best_beta": max(betas, key=lambda b: (counts[str(b)], -b)) if sweep else None,
        "beta": beta,
        "unseparated_at_beta": [name for name, p in sweep if not separated(p, beta)],
    }


__all__ = ["run", "Scorer", "GoldResult", "OUTCOMES", "PROBES", "ACCEPT_PROBES", "REJECT_PROBES",
           "MAX_PROBE_BETA", "gold_source", "submitted_query", "unknown_database", "separated",
           "sweep_summary"]
