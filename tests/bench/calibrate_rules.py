"""Fit `rules`' calibration models (nlq/methods/rules/calibration.json): `make calibrate`.

    python -m tests.bench.calibrate_rules          # fit on every TEND v1 split present, write the file

Two logistic regressions (Platt scaling generalized to the few signals
`nlq.methods.rules.confidence` reads off the IR), fitted by Newton's method
with a small L2 penalty on standardized features, to the label "EXC = 1 at
beta 2": `preferred` on rules' predictions, `alternative` on every other
reading `--candidates` chooses from (`candidates.readings`, all of them, so
what is fitted does not depend on the stored model's choice; their
`preferred` signal is recomputed with the new preferred model, as
`generate` will compute it).

The data is every phrasing of every record of each TEND v1 split present
(`bench_rules.SPLITS`: the shared test split and train-a, disjoint
databases). Before the shipped fit on all of them, the fit is validated by
cross-validation grouped by database (FOLDS folds, databases dealt to folds
in name order): every record's confidence comes from a model fitted without
its database, and the out-of-database ECE, precision and coverage at the
recommended threshold are printed per split and stored in the file
(`validation`). Deterministic: the same predictions give the same file
(sorted features, Newton steps from zero, numbers rounded to 10 significant
digits). Refit whenever the rules change what they predict.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import orjson

from nlq.methods.rules import calibration
from nlq.methods.rules.confidence import of_signals
from tests.bench import bench_rules

L2 = 1.0  # penalty on standardized weights (the data has thousands of rows: a light touch)
STEPS = 50
DIGITS = 10
FOLDS = 5
CURVE = (0.7, 0.75, 0.8, 0.85, 0.9)  # thresholds whose out-of-database precision and coverage are printed
WORKERS = 2  # processes: one split each


def features(record: dict) -> dict[str, float]:
    """The calibration signals a scored record's prediction carries."""
    return ((record.get("prediction") or {}).get("ir") or {}).get("signals") or {}


def rows(records: list[dict]) -> list[tuple[dict, int]]:
    """(signals, EXC) of every scored prediction."""
    return [(features(r), r["score"]["exc"]) for r in records if features(r)]


def alternative_rows(records: list[dict], preferred: dict) -> list[tuple[dict, int]]:
    """(signals, EXC) of every scored candidate, its `preferred` signal by the `preferred` model."""
    out = []
    for r in records:
        if not features(r):
            continue
        rival = round(of_signals(preferred, features(r)), 3)
        out += [({**c["signals"], "preferred": rival}, c["exc"]) for c in r.get("candidates", []) if "exc" in c]
    return out


def with_readings(scored: list[dict], backend) -> list[dict]:
    """The scored records, each with `candidates`: every other reading of its question, scored (`exc`)."""
    from nlq import index as grounding
    from nlq import score
    from nlq.methods.rules import candidates, passes, schema

    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({r["db"] for r in scored}))}
    prepared: dict = {}
    out = []
    for record in scored:
        if not features(record):
            out.append(record)
            continue
        index = indexes[record["db"]]
        ground = prepared.setdefault(record["db"], schema.prepare(index))
        witnesses = record.get("witnesses") or []
        state = passes.read(record["question"], witnesses, index, ground)
        found = [c for _, c in candidates.readings(record["question"], witnesses, index, ground, state)]
        out.append({**record, "candidates": found})
    others = [(c, {**r, "prediction": c}) for r in out for c in r.get("candidates", [])]
    for (candidate, _), judged in zip(others, score.run([o for _, o in others], backend)):
        candidate["exc"] = judged["score"]["exc"]
    return out


def logistic(rows_: list[tuple[dict, int]]) -> dict:
    """A logistic model of the label from the signals (standardized, L2-penalized, Newton's method)."""
    names = sorted(rows_[0][0])
    x = np.array([[f[n] for n in names] for f, _ in rows_], dtype=float)
    y = np.array([label for _, label in rows_], dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.diag([0.0] + [L2] * len(names))
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-12:
            break
    return {"features": names, "bias": _round(w[0]), "weights": [_round(v) for v in w[1:]],
            "mean": [_round(v) for v in mean], "scale": [_round(v) for v in scale]}


def fit(records: list[dict]) -> dict:
    """The preferred reading's model, fitted to scored records' predictions."""
    return logistic(rows(records))


def fit_alternative(records: list[dict], preferred: dict) -> dict:
    """The alternatives' model, fitted to scored records' scored candidates."""
    return logistic(alternative_rows(records, preferred))


def folds(dbs) -> dict[str, int]:
    """Each database's fold: databases dealt to FOLDS folds in name order."""
    return {db: i % FOLDS for i, db in enumerate(sorted(set(dbs)))}


def cross_validated(records: list[dict]) -> list[tuple[dict, float]]:
    """(record, out-of-database confidence) of every record with signals: its confidence by the
    preferred model fitted on the other folds' databases (grouped by database)."""
    fold = folds(r["db"] for r in records)
    usable = [r for r in records if features(r)]
    out: dict[int, float] = {}
    for k in range(FOLDS):
        model = fit([r for r in usable if fold[r["db"]] != k])
        for i, r in enumerate(usable):
            if fold[r["db"]] == k:
                out[i] = of_signals(model, features(r))
    return [(r, out[i]) for i, r in enumerate(usable)]


def cross_validated_alternatives(records: list[dict]) -> list[tuple[float, int]]:
    """(out-of-database confidence, EXC) of every scored candidate: both models fitted on the other folds."""
    fold = folds(r["db"] for r in records)
    pairs = []
    for k in range(FOLDS):
        train = [r for r in records if fold[r["db"]] != k]
        preferred = fit(train)
        alternative = fit_alternative(train, preferred)
        pairs += [(of_signals(alternative, f), y)
                  for f, y in alternative_rows([r for r in records if fold[r["db"]] == k], preferred)]
    return pairs


def summary(pairs: list[tuple[float, int]], threshold: float = calibration.RECOMMENDED_THRESHOLD) -> dict:
    """ECE, precision and coverage at `threshold` of (confidence, EXC) pairs."""
    kept = [y for c, y in pairs if c >= threshold]
    return {"n": len(pairs), "ece": round(bench_rules.ece(pairs), 4),
            "precision": round(sum(kept) / len(kept), 4) if kept else None,
            "coverage": round(len(kept) / len(pairs), 4) if pairs else None}


def scored_split(name: str) -> list[dict]:
    """Every phrasing of a split's records predicted, scored, with every other reading scored."""
    backend = bench_rules.backend_of(name)
    predicted = bench_rules.predict(backend, bench_rules.split_tasks(name), strict=False)[0]
    return [{**r, "split": name} for r in with_readings(predicted, backend)]


def _round(value: float) -> float:
    return float(f"{float(value):.{DIGITS}g}")


def main() -> None:
    started = time.perf_counter()
    scored = []
    splits = [name for name in bench_rules.SPLITS if bench_rules.present(name)]
    if not splits:
        raise SystemExit("no TEND v1 split is present (../shared/tend-v1): nothing to fit on")
    # the splits are independent: one process each (results joined in SPLITS order, so deterministic)
    with ProcessPoolExecutor(max_workers=min(WORKERS, len(splits))) as pool:
        for name, records in zip(splits, pool.map(scored_split, splits)):
            scored += records
            print(f"{name}: {len(records)} predictions and their readings scored "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    validated = cross_validated(scored)
    validation = {name: summary([(c, r["score"]["exc"]) for r, c in validated if r["split"] == name])
                  for name in splits}
    validation["alternative"] = summary(cross_validated_alternatives(scored))
    for name in splits:  # where the recommended threshold stands on the out-of-database curve
        pairs = [(c, r["score"]["exc"]) for r, c in validated if r["split"] == name]
        curve = ", ".join(f"{t}: {f['precision'] or 0:.1%} of {f['coverage'] or 0:.1%}"
                          for t in CURVE for f in [summary(pairs, t)])
        print(f"  out-of-database precision of coverage by threshold, {name}: {curve}")
    for name, figures in validation.items():
        print(f"  out-of-database ({FOLDS}-fold by database) {name}: ECE {figures['ece']:.3f}, precision at "
              f"{calibration.RECOMMENDED_THRESHOLD} {figures['precision'] or 0:.1%}, coverage "
              f"{figures['coverage'] or 0:.1%} (n={figures['n']})")
    preferred = fit(scored)
    alternative = fit_alternative(scored, preferred)
    ece = {name: round(bench_rules.ece([(of_signals(model, f), y) for f, y in rows_]), 4)
           for name, model, rows_ in (("preferred", preferred, rows(scored)),
                                      ("alternative", alternative, alternative_rows(scored, preferred)))}
    fitted_on = (f"{len(scored)} scored rules predictions and {len(alternative_rows(scored, preferred))} scored "
                 f"other readings: TEND v1 {' + '.join(splits)}, every phrasing")
    model = {"preferred": preferred, "alternative": alternative, "fitted_on": fitted_on, "fit_ece": ece,
             "validation": {"folds": FOLDS, "grouped_by": "database", **validation}}
    calibration.PATH.write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"wrote {calibration.PATH} ({fitted_on}; fit-set ECE preferred {ece['preferred']:.3f}, "
          f"alternative {ece['alternative']:.3f}) in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
