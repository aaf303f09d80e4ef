"""NormExec: canonical BSON values, row identity, and the EXC / EXF1 comparison.

This module is the metric core of `nlq score` (paper §II-D). It works
on plain lists of result rows (dicts of BSON values); executing queries is the
caller's job.

Canonical values (:func:`canonical`) are hashable and compare as the paper's
normalized executor does:

- int, long, double and decimal of equal value are equal (`1 == 1.0 ==
  Decimal128("1")`). Non-integral numbers are compared at 15 significant
  digits, the precision a double guarantees, so the last-bit noise of a
  different summation order (`$avg` versus `$sum`/`$count`) is not a
  different value; NaN equals NaN.
- dates and ObjectIds keep their identity: a date never equals its ISO
  string or its milliseconds, an ObjectId never equals its hex string.
- booleans are not numbers (`true != 1`); null and missing stay distinct.
- a nested object compares as a mapping: key names significant, key order not.
- array order is significant.

Row identity: a result row is the multiset of its top-level canonical values
(:func:`row_values`). Top-level column names are cosmetic; a retained `_id`
is a value like any other; a top-level field whose value is missing does not
exist.

EXC of a predicted result P against a gold result G (:func:`exc`) is 1 iff
`len(P) == len(G)` and every gold row aligns one-to-one with a predicted row
whose value multiset contains all the gold row's values with at most `beta`
(= 2) surplus values. When the gold is order-sensitive (a root `$sort`,
`$limit`, `$skip` or `$setWindowFields`) gold row i must align with
predicted row i; otherwise the alignment is a maximum bipartite matching.
Equal rows are grouped and the matching is solved as a maximum flow over the
groups (scipy.sparse.csgraph.maximum_flow), which is the maximum bipartite
matching of the expanded row graph without materializing the n x m edges of
duplicated rows. A greedy pass is wrong: see tests/test_normexec.py.

EXF1 (:func:`exf1`): multiset F1 between predicted and gold rows under the
same row identity, with no surplus tolerance and no order: overlap =
sum over identities of min(count in P, count in G); precision = overlap/|P|,
recall = overlap/|G|, F1 = 2PR/(P+R), and 0 when the overlap is 0. Two empty
results have EXF1 = 1.

Outcome of an executed prediction (:func:`compare`), exactly one of:

- `correct`: EXC = 1 (an empty prediction against an empty gold is correct:
  the definition holds vacuously; `nlq score --self-check` flags empty golds
  as benchmark defects because they cannot discriminate).
- `empty`: the prediction returned no rows and the gold did not.
- `wrong_rows`, with one near-miss subtype:
  - `order_only`: same row count, the gold is order-sensitive, and the rows
    align as a multiset but not position by position;
  - `row_subset`: fewer rows than gold, and every predicted row aligns
    one-to-one with a distinct gold row (same containment and surplus rule);
  - `row_superset`: more rows than gold, and every gold row aligns one-to-one
    with a distinct predicted row (so any non-empty prediction against an
    empty gold); subset and superset ignore order;
  - `value_mismatch`: anything else.

Outcomes that need no comparison (`no_submission`, `invalid`, `exec_error`)
are decided by :mod:`nlq.score` before execution results exist.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

import orjson

from nlq.io import to_extjson
from nlq.mql.values import (MISSING, Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex,
                            Timestamp, date_to_millis)

DEFAULT_BETA = 2

CORRECT, EMPTY, WRONG_ROWS = "correct", "empty", "wrong_rows"
ORDER_ONLY, ROW_SUBSET, ROW_SUPERSET, VALUE_MISMATCH = (
    "order_only", "row_subset", "row_superset", "value_mismatch")
NEAR_MISSES = (ORDER_ONLY, ROW_SUBSET, ROW_SUPERSET, VALUE_MISMATCH)

_NAN = ("nan",)
_NULL = ("null",)
_MISSING = ("missing",)
_MINKEY = ("minKey",)
_MAXKEY = ("maxKey",)
_SIGNIFICANT = 15


# ---------------------------------------------------------------------------
# canonical values


def _float(value: float):
    if value != value:
        return _NAN
    if math.isinf(value) or value.is_integer():
        return value  # equal ints hash and compare equal to integral floats
    return float(f"{value:.{_SIGNIFICANT}g}")


def _decimal(value: Decimal):
    if value.is_nan():
        return _NAN
    if value.is_infinite():
        return math.inf if value > 0 else -math.inf
    if value == value.to_integral_value():
        return int(value)
    return float(f"{value:.{_SIGNIFICANT}g}")


def canonical(value):
    """The hashable canonical form of a BSON value.

        >>> canonical(1) == canonical(1.0) == canonical(Decimal128("1"))
        True
        >>> canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1})
        True

    Strings and numbers stand for themselves; every other value is a tuple
    whose first item names its type, so values of different types never
    collide (`True` is not `1`, a date is not its milliseconds).
    """
    t = type(value)
    if t is str:
        return value
    if t is int or t is Int64:
        return int(value)
    if t is float:
        return _float(value)
    if t is dict:
        return ("object", frozenset((k, canonical(v)) for k, v in value.items() if v is not MISSING))
    if t is list or t is tuple:
        return ("array", tuple(canonical(v) for v in value))
    if t is bool:
        return ("bool", value)
    if value is None:
        return _NULL
    if value is MISSING:
        return _MISSING
    if isinstance(value, _dt.datetime):
        return ("date", date_to_millis(value))
    if isinstance(value, ObjectId):
        return ("objectId", value.binary)
    if isinstance(value, Decimal128):
        return _decimal(value.to_decimal())
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, Regex):
        flags = value.flags if isinstance(value.flags, str) else Regex.from_native(value).flags
        return ("regex", value.pattern, "".join(sorted(flags)))
    if isinstance(value, (Binary, bytes)):
        return ("binData", getattr(value, "subtype", 0), bytes(value))
    if isinstance(value, Timestamp):
        return ("timestamp", value.time, value.inc)
    if isinstance(value, MinKey):
        return _MINKEY
    if isinstance(value, MaxKey):
        return _MAXKEY
    if isinstance(value, dict):
        return canonical(dict(value))
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"not a BSON value: {type(value).__name__}")


def row_values(row) -> Counter:
    """The multiset of a row's top-level canonical values (column names dropped).

    A row that is not a document (a bare value) is the multiset of that one value.
    """
    if isinstance(row, dict):
        return Counter(canonical(v) for v in row.values() if v is not MISSING)
    return Counter((canonical(row),))


def row_identity(values: Counter) -> frozenset:
    """A hashable identity of a row's value multiset (equal multisets, equal identities)."""
    return frozenset(values.items())


# ---------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Rows:
    """A result prepared for comparison: per-row value multisets and their identities.

    Prepare a gold result once (:func:`prepare`) and compare many predictions to it.
    """

    values: tuple          # Counter per row, in result order
    sizes: tuple           # number of values per row
    identities: tuple      # row_identity per row
    counts: Counter        # identity -> number of rows

    def __len__(self) -> int:
        return len(self.values)


def prepare(rows) -> Rows:
    """Canonicalize a result (a list of rows) for :func:`exc`, :func:`exf1`, :func:`compare`."""
    values = tuple(row_values(r) for r in rows)
    identities = tuple(row_identity(v) for v in values)
    return Rows(values, tuple(sum(v.values()) for v in values), identities, Counter(identities))


def _as_rows(result) -> Rows:
    return result if isinstance(result, Rows) else prepare(result)


def contains(pred: Counter, pred_size: int, gold: Counter, gold_size: int, beta: int) -> bool:
    """True when a predicted row holds every gold value with at most `beta` surplus values."""
    surplus = pred_size - gold_size
    if surplus < 0 or surplus > beta:
        return False
    return all(pred[v] >= c for v, c in gold.items())


def _representatives(rows: Rows) -> tuple[list, list, list]:
    """Distinct identities of a result: (identity, values, size) lists, first-seen order."""
    seen: dict = {}
    for identity, values, size in zip(rows.identities, rows.values, rows.sizes):
        if identity not in seen:
            seen[identity] = (values, size)
    ids = list(seen)
    return ids, [seen[i][0] for i in ids], [seen[i][1] for i in ids]


def max_alignment(gold, pred, *, beta: int = DEFAULT_BETA) -> int:
    """The size of a maximum one-to-one alignment of gold rows with predicted rows.

    A gold row may align with a predicted row that contains all its values with
    at most `beta` surplus values (:func:`contains`). Order is ignored.
    """
    gold, pred = _as_rows(gold), _as_rows(pred)
    if not len(gold) or not len(pred):
        return 0
    g_ids, g_values, g_sizes = _representatives(gold)
    p_ids, p_values, p_sizes = _representatives(pred)
    # Inverted index: canonical value -> distinct predicted rows holding it.
    holders: dict = {}
    for j, values in enumerate(p_values):
        for v in values:
            holders.setdefault(v, []).append(j)
    small = [j for j, size in enumerate(p_sizes) if size <= beta]
    edges: list[tuple[int, int]] = []
    for i, values in enumerate(g_values):
        if values:
            pools = [holders.get(v, ()) for v in values]
            candidates = min(pools, key=len)
        else:
            candidates = small
        for j in candidates:
            if contains(p_values[j], p_sizes[j], values, g_sizes[i], beta):
                edges.append((i, j))
    if not edges:
        return 0
    n_g, n_p = len(g_ids), len(p_ids)
    source, sink = 0, n_g + n_p + 1
    g_count = [gold.counts[i] for i in g_ids]
    p_count = [pred.counts[j] for j in p_ids]
    tails = [source] * n_g + [1 + i for i, _ in edges] + [1 + n_g + j for j in range(n_p)]
    heads = [1 + i for i in range(n_g)] + [1 + n_g + j for _, j in edges] + [sink] * n_p
    caps = g_count + [min(g_count[i], p_count[j]) for i, j in edges] + p_count
    import numpy as np  # imported here: most scoring runs never need a maximum flow (0.3 s of startup)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    graph = csr_matrix((np.asarray(caps, dtype=np.int32), (tails, heads)), shape=(sink + 1, sink + 1))
    return int(maximum_flow(graph, source, sink).flow_value)


def aligned_in_order(gold, pred, *, beta: int = DEFAULT_BETA) -> bool:
    """True when both results have the same length and gold row i aligns with predicted row i."""
    gold, pred = _as_rows(gold), _as_rows(pred)
    if len(gold) != len(pred):
        return False
    return all(contains(pv, ps, gv, gs, beta)
               for gv, gs, pv, ps in zip(gold.values, gold.sizes, pred.values, pred.sizes))


def exc(pred, gold, *, ordered: bool = False, beta: int = DEFAULT_BETA) -> int:
    """EXC of an executed prediction against the gold result: 1 or 0 (see module docstring)."""
    gold, pred = _as_rows(gold), _as_rows(pred)
    if len(gold) != len(pred):
        return 0
    if ordered:
        return int(aligned_in_order(gold, pred, beta=beta))
    if gold.counts == pred.counts:  # identical multisets of rows: the identity alignment
        return 1
    return int(max_alignment(gold, pred, beta=beta) == len(gold))


def exf1(pred, gold) -> float:
    """Multiset F1 between predicted and gold rows under row identity (no surplus, no order)."""
    gold, pred = _as_rows(gold), _as_rows(pred)
    if not len(gold) and not len(pred):
        return 1.0
    overlap = sum((gold.counts & pred.counts).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def near_miss(pred, gold, *, ordered: bool = False, beta: int = DEFAULT_BETA) -> str:
    """The near-miss subtype of a wrong, non-empty prediction (see module docstring)."""
    gold, pred = _as_rows(gold), _as_rows(pred)
    n_gold, n_pred = len(gold), len(pred)
    if n_pred < n_gold:
        return ROW_SUBSET if max_alignment(gold, pred, beta=beta) == n_pred else VALUE_MISMATCH
    if n_pred > n_gold:
        return ROW_SUPERSET if max_alignment(gold, pred, beta=beta) == n_gold else VALUE_MISMATCH
    if ordered and exc(pred, gold, ordered=False, beta=beta):
        return ORDER_ONLY
    return VALUE_MISMATCH


@dataclass(frozen=True)
class Comparison:
    """The verdict on one executed prediction."""

    exc: int
    exf1: float
    outcome: str            # correct | empty | wrong_rows
    near_miss: str | None   # set for wrong_rows only


def compare(pred, gold, *, ordered: bool = False, beta: int = DEFAULT_BETA) -> Comparison:
    """EXC, EXF1, outcome and near-miss of an executed prediction against the gold result.

        >>> compare([{"n": 1.0, "_id": None}], [{"total": 1}]).outcome
        'correct'
    """
    gold, pred = _as_rows(gold), _as_rows(pred)
    score = exc(pred, gold, ordered=ordered, beta=beta)
    f1 = exf1(pred, gold)
    if score:
        return Comparison(1, f1, CORRECT, None)
    if not len(pred):
        return Comparison(0, f1, EMPTY, None)
    return Comparison(0, f1, WRONG_ROWS, near_miss(pred, gold, ordered=ordered, beta=beta))


# ---------------------------------------------------------------------------
# why a verdict is not `correct`

DIFF_VALUES = 5  # values listed per side of a diff (the counts are always complete)


def _value_pool(rows) -> tuple[Counter, dict]:
    """The multiset of every top-level value of a result, and one original per canonical value."""
    pool: Counter = Counter()
    shown: dict = {}
    for row in rows:
        values = [v for v in row.values() if v is not MISSING] if isinstance(row, dict) else [row]
        for value in values:
            key = canonical(value)
            pool[key] += 1
            shown.setdefault(key, value)
    return pool, shown


def _listed(extra: Counter, shown: dict) -> dict:
    values = [shown[key] for key in shown if extra[key] > 0]
    return {"count": sum(extra.values()), "values": values[:DIFF_VALUES]}


def diff(pred_rows: list, gold_rows: list, *, ordered: bool = False, beta: int = DEFAULT_BETA) -> dict:
    """What differs between an executed prediction and the gold result, short and machine-readable.

        >>> d = diff([{"total": 5}], [{"_id": None, "total": 5}])
        >>> d["missing"], d["surplus"]["count"], d["summary"]
        ({'count': 1, 'values': [None]}, 0, '1 gold value with no partner: null')

    - `rows`: `{gold, pred, aligned}` row counts; `aligned` is the size of a maximum
      one-to-one alignment (the same containment and beta rule as EXC, order ignored);
    - `missing`: the gold values (all rows pooled, as a multiset) that no predicted
      value equals, `{count, values}` with the first DIFF_VALUES of them;
    - `surplus`: the predicted values that equal no gold value, likewise;
    - `order`: for an order-sensitive gold, the first position whose rows do not
      align `{position, gold, pred}` (0-based), else null;
    - `summary`: one line saying the above.
    """
    gold, pred = prepare(gold_rows), prepare(pred_rows)
    gold_pool, gold_shown = _value_pool(gold_rows)
    pred_pool, pred_shown = _value_pool(pred_rows)
    missing, surplus = _listed(gold_pool - pred_pool, gold_shown), _listed(pred_pool - gold_pool, pred_shown)
    order = None
    if ordered:
        for i, (gv, gs, pv, ps) in enumerate(zip(gold.values, gold.sizes, pred.values, pred.sizes)):
            if not contains(pv, ps, gv, gs, beta):
                order = {"position": i, "gold": gold_rows[i], "pred": pred_rows[i]}
                break
    rows = {"gold": len(gold), "pred": len(pred), "aligned": max_alignment(gold, pred, beta=beta)}
    return {"rows": rows, "missing": missing, "surplus": surplus, "order": order,
            "summary": _diff_summary(rows, missing, surplus, order, beta)}


def _shown(values: list, count: int) -> str:
    texts = (orjson.dumps(to_extjson(v)).decode() for v in values)
    text = ", ".join(t if len(t) <= 40 else t[:39] + "…" for t in texts)
    return text + (", ..." if count > len(values) else "")


def _diff_summary(rows: dict, missing: dict, surplus: dict, order: dict | None, beta: int) -> str:
    parts = []
    if rows["pred"] != rows["gold"]:
        parts.append(f"{rows['pred']} row{'s' if rows['pred'] != 1 else ''} instead of {rows['gold']}")
    if missing["count"]:
        n = missing["count"]
        parts.append(f"{n} gold value{'s' if n != 1 else ''} with no partner: {_shown(missing['values'], n)}")
    if surplus["count"]:
        n = surplus["count"]
        parts.append(f"{n} surplus value{'s' if n != 1 else ''}: {_shown(surplus['values'], n)} "
                     f"(a row may carry {beta})")
    if order is not None:
        parts.append(f"first order mismatch at row {order['position']}")
    if not parts:
        unaligned = rows["gold"] - rows["aligned"]
        parts.append(f"the same values, grouped into rows differently ({unaligned} gold "
                     f"row{'s' if unaligned != 1 else ''} without a predicted row holding all its values "
                     f"with at most {beta} more)")
    return "; ".join(parts)


__all__ = ["diff", "DIFF_VALUES", "canonical", "row_values", "row_identity", "Rows", "prepare", "contains", "max_alignment",
           "aligned_in_order", "exc", "exf1", "near_miss", "compare", "Comparison", "DEFAULT_BETA",
           "CORRECT", "EMPTY", "WRONG_ROWS", "ORDER_ONLY", "ROW_SUBSET", "ROW_SUPERSET",
           "VALUE_MISMATCH", "NEAR_MISSES"]
