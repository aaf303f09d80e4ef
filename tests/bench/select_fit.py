"""Fit the selection model (nlq/selection.json) and measure it out of database: `make select-fit`.

    python -m tests.bench.select_fit cache --data DIR --index INDEX RUN.jsonl [RUN.jsonl ...] -o EVIDENCE
    python -m tests.bench.select_fit fit EVIDENCE [-o nlq/selection.json] [--without METHOD ...] [--single METHOD [--single-also EVIDENCE ...]]

`cache` executes every candidate of every record once (each run's `prediction`,
and the `candidates` a run carries, e.g. rules --candidates), exactly as `nlq
repair` does (gate, read-only execution, feedback), and writes per record
what selection reads (:class:`nlq.selection.Evidence`) and, from the gold,
which result groups are right (EXC = 1): the CPU-heavy part, done once.
Records are paired by `id`; a run missing a record is no vote.

`fit` fits the logistic model on those features (L2-penalized log loss,
scipy's L-BFGS, standardized features), and reports, with leave-one-database-
out cross-validation (every figure of a database from a model fitted without
it, the per-system reliability table and the Platt scaling included; the
scaling fitted by an inner 5-fold cross-validation grouped by database): EXC of each run alone, of
the plain vote, of the oracle and of selection, per database wins and
losses against the plain vote, the ECE of the confidence, and precision and
coverage at confidence thresholds. `--without METHOD` drops a system (the
same records, its candidates left out). `--single METHOD` also fits, measures
and ships (`Selector.single`) the model of records that METHOD alone answered
with its alternatives (`rules --candidates`). The model written is fitted on all
records. Deterministic.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict

import numpy as np
import orjson
from scipy.optimize import minimize
from scipy.special import expit

from nlq import index as grounding
from nlq import io, repair
from nlq.backends import EmbeddedBackend
from nlq.normexec import exc as exc_of
from nlq.score import Scorer
from nlq.selection import FEATURES, Evidence, Selector, clusters_of, features, logit, representative

L2 = 1.0
# The direction of the features whose meaning fixes it: agreement and a matching shape can only
# raise a group's score, an empty result, a violation or a shape mismatch only lower it (a
# sign-constrained fit: collinear features, a count pipeline's extra stages say, cannot turn a
# feature's effect around). The others are fitted freely.
SIGNS = {"share": 1, "near_share": 1, "set_share": 1, "reliability_in": 1, "reliability_out": -1,
         "confidence_in": 1, "confidence_out": -1, "empty": -1, "leaked_id": -1, "gate": -1, "join": -1,
         "one_value_match": 1, "one_value_mismatch": -1, "top_match": 1, "top_mismatch": -1,
         "single_match": 1, "single_mismatch": -1, "order_missing": -1, "repeated_distinct": -1}


def bounds(extra: int = 0) -> list:
    """L-BFGS-B bounds of the weights (in FEATURES order) after :data:`SIGNS`, then `extra` free ones."""
    side = {1: (0.0, None), -1: (None, 0.0)}
    return [side.get(SIGNS.get(f), (None, None)) for f in FEATURES] + [(None, None)] * extra
CHOICE_L2 = 10.0  # the choice model learns from the few records whose groups disagree: a firmer penalty
MIN_SCALING = 200  # records a per-count Platt scaling needs (fewer: the pooled one)
INNER_FOLDS = 5  # the Platt scaling's folds (databases dealt round-robin)
DIGITS = 6
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


# -- cache ------------------------------------------------------------------------------------------

def cache(runs: list[str], data: str, index_path: str, out: str, limit: int | None = None) -> None:
    backend = EmbeddedBackend(data)
    indexes = grounding.load(index_path)
    scorer = Scorer(backend)
    by_run = [{r["id"]: r for r in io.read_records(path) if r.get("id") is not None} for path in runs]
    ids = list(dict.fromkeys(i for found in by_run for i, r in found.items() if r.get("db") in indexes))
    if limit:
        ids = ids[:limit]
    options = repair.Options()
    with open(out, "wb") as fh:
        for n, rid in enumerate(ids):
            base = next(found[rid] for found in by_run if rid in found)
            submitted, primary = [], []
            for found in by_run:
                other = found.get(rid)
                if other is None:
                    continue
                listed = other.get("candidates") if isinstance(other.get("candidates"), list) else []
                primary.append(len(submitted))
                submitted += [other.get("prediction")] + listed
            candidates = [repair.evaluate(s, i, base, backend, indexes[base["db"]], options)
                          for i, s in enumerate(submitted)]
            evidence = repair.evidence_of(candidates)
            gold = scorer.gold(base)
            right = {}  # by position: a group's members share their rows' multiset, not always their order
            if gold.error is None:
                for c, e in zip(candidates, evidence):
                    if e.cluster is not None:
                        right[e.position] = exc_of(c.rows, gold.prepared, ordered=gold.ordered)
            fh.write(orjson.dumps({"id": rid, "db": base["db"], "question": base.get("question") or "",
                                   "gold_ok": gold.error is None, "primary": primary, "evidence": [e.to_json() for e in evidence],
                                   "right": {str(k): v for k, v in right.items()}}) + b"\n")
            if n % 100 == 0:
                print(f"{n}/{len(ids)}", file=sys.stderr, flush=True)


# -- fit --------------------------------------------------------------------------------------------

def load(path: str, without: tuple = (), alternatives: bool = True, confidences: bool = True,
         only: str | None = None) -> list[dict]:
    """The cached records (those whose gold runs), without the systems in `without` (with `only`,
    every system but that one; a run's empty submission, no vote, stays), unless `alternatives`
    with each run's prediction only (not the `candidates` it carries), and unless `confidences`
    with no candidate's calibrated confidence (an ablation)."""
    out = []
    for line in open(path, "rb"):
        doc = orjson.loads(line)
        if not doc["gold_ok"]:
            continue
        primary = set(doc.get("primary") or ())
        evidence = [Evidence.from_json(e) for e in doc["evidence"]]
        evidence = [e for e in evidence if e.system not in without and (only is None or e.system in ("", only))
                    and (alternatives or e.position in primary)]
        if not confidences:
            for e in evidence:
                e.confidence = None
        by_position = {int(k): v for k, v in doc["right"].items()}
        right = {}
        for key, members in clusters_of(evidence).items():  # labelled by the member repair selects
            right[key] = by_position.get(representative(members, doc["question"]).position, 0)
        out.append({"id": doc["id"], "db": doc["db"], "question": doc["question"], "evidence": evidence,
                    "primary": primary, "right": right, "right_pos": by_position})
    return out


def one_system(paths: list[str], system: str, confidences: bool = True) -> list[dict]:
    """The cached records of `paths` with `system`'s candidates only, its alternatives included
    (what the one-system model, `Selector.single`, is fitted and measured on), groups prepared."""
    records = [r for path in paths for r in load(path, (), True, confidences, only=system)]
    prepare_groups(records)
    return records


def subsets(records: list[dict]) -> list[dict]:
    """Each record once per non-empty subset of the systems that answered it: the model is fitted
    for any set of runs it may be given (one, two, all of them), not only for the full set."""
    from itertools import combinations

    out = []
    for r in records:
        systems = sorted({e.system for e in r["evidence"] if e.system})
        for k in range(1, len(systems) + 1):
            for kept in combinations(systems, k):
                evidence = [e for e in r["evidence"] if e.system in kept]
                right = {}
                for key, members in clusters_of(evidence).items():
                    right[key] = r["right_pos"].get(representative(members, r["question"]).position, 0)
                out.append({**r, "evidence": evidence, "right": right})
    return out


def systems_of(records: list[dict]) -> list[str]:
    return sorted({e.system for r in records for e in r["evidence"] if e.system})


def reliability_table(records: list[dict]) -> tuple[dict, float]:
    """Each system's share of records where its (first) candidate's result is right; a system
    that did not answer a record is not counted there. The default is the mean of the systems."""
    hits, seen = defaultdict(int), defaultdict(int)
    for r in records:
        firsts = {}
        for e in r["evidence"]:
            if e.system:
                firsts.setdefault(e.system, e)
        for system, e in firsts.items():
            seen[system] += 1
            hits[system] += int(e.cluster is not None and r["right_pos"].get(e.position, 0) == 1)
    table = {s: round((hits[s] + 1) / (seen[s] + 2), DIGITS) for s in seen}
    return table, round(sum(table.values()) / len(table), DIGITS) if table else 0.5


REL = (FEATURES.index("reliability_in"), FEATURES.index("reliability_out"))


def prepare_groups(records: list[dict]) -> None:
    """Each record's result groups, features computed once: (cluster, vector, systems in, systems
    out, label, first position, share); the reliability features are filled per table."""
    for r in records:
        vectors = features(r["question"], r["evidence"], lambda s: 0.5)  # logit(0.5) = 0: filled later
        groups = clusters_of(r["evidence"])
        executed = {e.system for e in r["evidence"] if e.cluster is not None}
        r["groups"] = []
        for key, vector in vectors.items():
            inside = {e.system for e in groups[key]}
            r["groups"].append((key, np.array([vector[f] for f in FEATURES], float), tuple(sorted(inside)),
                                tuple(sorted(executed - inside)), r["right"].get(key, 0),
                                min(e.position for e in groups[key]), vector["share"]))


def matrix(records: list[dict], table: dict, default: float) -> tuple[np.ndarray, np.ndarray, list]:
    """The feature rows of every result group of `records` under a reliability table, their labels,
    and (record, group) of each row."""
    rel = {}

    def r_of(system):
        if system not in rel:
            rel[system] = logit(table.get(system, default))
        return rel[system]

    x, y, where = [], [], []
    for n, r in enumerate(records):
        for g, (_, vector, inside, outside, label, _, _) in enumerate(r["groups"]):
            v = vector.copy()
            v[REL[0]] = sum(r_of(s) for s in inside)
            v[REL[1]] = sum(r_of(s) for s in outside)
            x.append(v)
            y.append(label)
            where.append((n, g))
    return np.array(x, float).reshape(len(x), len(FEATURES)), np.array(y, float), where


def winners(records: list[dict], selector: Selector) -> list[tuple[float | None, int]]:
    """(winner's raw probability score, its label) per record, the winner as Selector.choose picks
    it (by the choice weights; None: nothing ran)."""
    x, _, where = matrix(records, selector.reliability, selector.default_reliability)
    w = np.array([selector.weights.get(f, 0.0) for f in FEATURES])
    c = np.array([selector.choice_of(f) for f in FEATURES])
    scores = x @ w + selector.bias if len(x) else np.zeros(0)
    choice = x @ c if len(x) else np.zeros(0)
    best: dict = {}
    for (n, g), score, pick in zip(where, scores, choice):
        group = records[n]["groups"][g]
        rank = (round(float(pick), 9), round(float(score), 9), group[6], -group[5])
        if n not in best or rank > best[n][0]:
            best[n] = (rank, float(score), group[4])
    return [(best[n][1], best[n][2]) if n in best else (None, 0) for n in range(len(records))]


def conditional_logit(x: np.ndarray, y: np.ndarray, where: list, l2: float = L2) -> np.ndarray:
    """Weights of a choice model fitted to which groups of each record are right: the L2-penalized
    log-likelihood that the softmax of the scores within a record falls on a right group (records
    with one group, or no right one, carry no information about the choice)."""
    record = np.array([n for n, _ in where])
    keep = np.zeros(len(record), bool)
    for n in np.unique(record):
        rows = record == n
        if rows.sum() > 1 and 0 < y[rows].sum():
            keep |= rows
    x, y, record = x[keep], y[keep], record[keep]
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = (x - mean) / std
    _, start = np.unique(record, return_index=True)
    ids = np.searchsorted(record[start], record)

    def loss(w):
        s = z @ w
        top = np.maximum.reduceat(s, start)[ids]
        e = np.exp(s - top)
        all_ = np.add.reduceat(e, start)
        right = np.add.reduceat(e * y, start)
        value = -np.sum(np.log(right) - np.log(all_)) + 0.5 * l2 * w @ w
        p_all = e / all_[ids]
        p_right = e * y / right[ids]
        grad = z.T @ (p_all - p_right) + l2 * w
        return value, grad

    w = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B", bounds=bounds()).x
    return w / std


def logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Weights and bias (in the raw feature scale) minimizing the L2-penalized log loss."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = (x - mean) / std

    def loss(theta):
        w, b = theta[:-1], theta[-1]
        s = z @ w + b
        value = np.sum(np.logaddexp(0, s) - y * s) + 0.5 * l2 * w @ w
        p = expit(s)
        grad = np.concatenate([z.T @ (p - y) + l2 * w, [np.sum(p - y)]])
        return value, grad

    theta = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds(1)).x
    w = theta[:-1] / std
    return w, float(theta[-1] - w @ mean)


def platt(scores: list[float], right: list[int]) -> tuple[float, float]:
    """a, b of p = sigmoid(a * score + b) fitted to the winners' correctness."""
    s, y = np.asarray(scores, float), np.asarray(right, float)

    def loss(theta):
        t = theta[0] * s + theta[1]
        p = expit(t)
        return np.sum(np.logaddexp(0, t) - y * t), np.array([np.sum((p - y) * s), np.sum(p - y)])

    a, b = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B").x
    return float(a), float(b)


def fit_selector(records: list[dict], calibrate: bool = True) -> Selector:
    table, default = reliability_table(records)
    x, y, where = matrix(records, table, default)
    w, b = logistic(x, y)
    choice = conditional_logit(x, y, where, CHOICE_L2)
    selector = Selector({f: round(float(v), DIGITS) for f, v in zip(FEATURES, w)}, round(b, DIGITS), table, default,
                        choice={f: round(float(v), DIGITS) for f, v in zip(FEATURES, choice)})
    if calibrate:
        scores, right, answered = [], [], []
        dbs = sorted({r["db"] for r in records})
        for fold in range(INNER_FOLDS):
            out = set(dbs[fold::INNER_FOLDS])
            held = [r for r in records if r["db"] in out]
            inner = fit_selector([r for r in records if r["db"] not in out], calibrate=False)
            for r, (score, ok) in zip(held, winners(held, inner)):
                if score is not None:
                    scores.append(score)
                    right.append(ok)
                    answered.append(len({e.system for e in r["evidence"] if e.system}))
        a, c = platt(scores, right)
        selector.calibration = (round(a, DIGITS), round(c, DIGITS))
        for n in sorted(set(answered)):  # one scaling per number of systems that answered
            kept = [i for i, k in enumerate(answered) if k == n]
            if len(kept) >= MIN_SCALING:
                a, c = platt([scores[i] for i in kept], [right[i] for i in kept])
                selector.by_answered[str(n)] = (round(a, DIGITS), round(c, DIGITS))
    return selector


def plain_vote(record: dict) -> int:
    """The paper's majority (repair.vote without confidences): the largest group of the admissible
    executed candidates (every executed one when none is admissible); ties to fewer violations,
    a non-empty result, the earlier candidate."""
    executed = [e for e in record["evidence"] if e.cluster is not None and e.position in record["primary"]]
    admissible = [e for e in executed if not e.checks]
    voters = admissible or executed
    if not voters:
        return 0
    groups: dict = defaultdict(list)
    for e in voters:
        groups[e.cluster].append(e)
    best = min(groups.values(), key=lambda m: (-len(m), min(len(e.checks) for e in m), m[0].rows == 0,
                                               min(e.position for e in m)))
    chosen = min(best, key=lambda e: (len(e.checks), e.position))
    return record["right_pos"].get(chosen.position, 0)


def ece(pairs: list[tuple[float, int]], bins: int = 10) -> float:
    total = 0.0
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [(c, e) for c, e in pairs if lo <= c < hi or (i == bins - 1 and c >= hi)]
        if inside:
            total += abs(sum(c for c, _ in inside) - sum(e for _, e in inside))
    return total / max(len(pairs), 1)


def evaluate(records: list[dict], trained: list[dict] | None = None) -> dict:
    """Leave-one-database-out figures (see the module docstring); the models are fitted on
    `trained` (the same records with other systems, say), `records` by default."""
    dbs = sorted({r["db"] for r in records})
    trained = records if trained is None else trained
    chosen, pairs, per_db = {}, [], {}
    for db in dbs:
        selector = fit_selector([r for r in trained if r["db"] != db])
        held = [r for r in records if r["db"] == db]
        for r, (score, ok) in zip(held, winners(held, selector)):
            a, b = selector.scaling(r["evidence"])
            chosen[r["id"]] = ok
            pairs.append((round(1 / (1 + math.exp(-(a * score + b))), 4) if score is not None else 0.0, ok))
    n = len(records)
    systems = systems_of(records)
    alone = {}
    for s in systems:
        hits = 0
        for r in records:
            first = next((e for e in r["evidence"] if e.system == s), None)
            hits += int(first is not None and first.cluster is not None and r["right_pos"].get(first.position, 0) == 1)
        alone[s] = hits / n
    vote = {r["id"]: plain_vote(r) for r in records}
    oracle = sum(1 for r in records if any(r["right_pos"].get(e.position, 0) for e in r["evidence"]
                                           if e.cluster is not None)) / n
    for db in dbs:
        ids = [r["id"] for r in records if r["db"] == db]
        per_db[db] = (len(ids), sum(vote[i] for i in ids), sum(chosen[i] for i in ids))
    curve = []
    for t in THRESHOLDS:
        kept = [ok for c, ok in pairs if c >= t]
        curve.append((t, len(kept) / n, sum(kept) / len(kept) if kept else None))
    return {"n": n, "alone": alone, "vote": sum(vote.values()) / n, "oracle": oracle,
            "selection": sum(chosen.values()) / n, "ece": ece(pairs), "per_db": per_db, "curve": curve,
            "mean_confidence": sum(c for c, _ in pairs) / n}


def report(label: str, figures: dict) -> None:
    print(f"{label}: {figures['n']} records, leave-one-database-out")
    for s, v in figures["alone"].items():
        print(f"  {s:<24} EXC {100 * v:5.1f}%")
    print(f"  {'plain vote':<24} EXC {100 * figures['vote']:5.1f}%")
    print(f"  {'selection':<24} EXC {100 * figures['selection']:5.1f}%   (oracle {100 * figures['oracle']:.1f}%)")
    print(f"  confidence: ECE {figures['ece']:.3f}, mean {figures['mean_confidence']:.3f}")
    for t, coverage, precision in figures["curve"]:
        shown = f"{100 * precision:5.1f}%" if precision is not None else "  -  "
        print(f"    confidence >= {t:.2f}: answers {100 * coverage:5.1f}% of records, EXC {shown} of those")
    wins = [db for db, (_, v, s) in figures["per_db"].items() if s > v]
    losses = [db for db, (_, v, s) in figures["per_db"].items() if s < v]
    print(f"  per database vs plain vote: {len(wins)} better, {len(losses)} worse, "
          f"{len(figures['per_db']) - len(wins) - len(losses)} equal")
    for db, (count, v, s) in figures["per_db"].items():
        print(f"    {db:<28} n={count:<4} vote {100 * v / count:5.1f}%  selection {100 * s / count:5.1f}%  "
              f"{s - v:+d}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.select_fit")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cache")
    c.add_argument("runs", nargs="+")
    c.add_argument("--data", required=True)
    c.add_argument("--index", required=True)
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--limit", type=int)
    f = sub.add_parser("fit")
    f.add_argument("evidence")
    f.add_argument("-o", "--output")
    f.add_argument("--without", action="append", default=[])
    f.add_argument("--no-eval", action="store_true")
    f.add_argument("--no-alternatives", action="store_true", help="each run's prediction only")
    f.add_argument("--no-confidences", action="store_true", help="ablation: ignore calibrated confidences")
    f.add_argument("--full-set-only", action="store_true",
                   help="fit on the full set of systems only (not on every subset of them)")
    f.add_argument("--single", metavar="SYSTEM",
                   help="also fit the model of records SYSTEM alone answered with its alternatives (its "
                        "`candidates`), measure it and ship it inside the written model")
    f.add_argument("--single-also", action="append", default=[], metavar="EVIDENCE",
                   help="further caches of --single's system alone (other databases) the one-system model "
                        "is also fitted and measured on")
    f.add_argument("--test-without", action="append", default=[],
                   help="also measure the model fitted with every system on records without this one")
    args = parser.parse_args(argv)
    if args.command == "cache":
        cache(args.runs, args.data, args.index, args.output, args.limit)
        return
    records = load(args.evidence, tuple(args.without), not args.no_alternatives, not args.no_confidences)
    prepare_groups(records)
    trained = records
    if not args.full_set_only:
        trained = subsets(records)
        prepare_groups(trained)
    if not args.no_eval:
        report("selection" + (f" without {', '.join(args.without)}" if args.without else ""),
               evaluate(records, trained))
    if args.test_without:  # fitted with every system, measured on records without some
        tested = load(args.evidence, tuple(args.without) + tuple(args.test_without), not args.no_alternatives,
                      not args.no_confidences)
        prepare_groups(tested)
        report(f"fitted with every system, measured without {', '.join(args.test_without)}",
               evaluate(tested, trained))
    single = None
    if args.single:  # one system's own alternatives: a model of their own
        alone = one_system([args.evidence, *args.single_also], args.single, not args.no_confidences)
        if not args.no_eval:
            report(f"one system ({args.single}) with its alternatives", evaluate(alone, alone))
        single = fit_selector(alone) if args.output else None
        if single is not None:
            single.meta = {"fitted_on": f"{len(alone)} records of {len({r['db'] for r in alone})} databases, "
                                        f"the prediction and alternatives of {args.single}", "systems": [args.single]}
    if args.output:
        selector = fit_selector(trained)
        selector.single = single
        selector.meta = {"fitted_on": f"{len(records)} records of {len({r['db'] for r in records})} databases, "
                                      f"each with every non-empty subset of the systems" if trained is not records
                                      else f"{len(records)} records of {len({r['db'] for r in records})} databases",
                         "systems": systems_of(records)}
        with open(args.output, "wb") as fh:
            fh.write(orjson.dumps(selector.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
