"""Fit `rules`' calibration models (nlq/methods/rules/calibration.json): `make calibrate`.

    python -m tests.bench.calibrate_rules          # fit on TEND v1 (every phrasing) + the fixtures, write the file

Two logistic regressions (Platt scaling generalized to the few signals
`nlq.methods.rules.confidence` reads off the IR), fitted by Newton's method
with a small L2 penalty on standardized features, to the label "EXC = 1 at
beta 2": `preferred` on rules' predictions, `alternative` on every other
reading `--candidates` chooses from (`candidates.readings`, all of them, so
what is fitted does not depend on the stored model's choice; their
`preferred` signal is recomputed with the new preferred model, as
`generate` will compute it). Deterministic: the same predictions give the
same file (sorted features, Newton steps from zero, numbers rounded to 10
significant digits). Refit whenever the rules change what they predict.
"""

from __future__ import annotations

import numpy as np
import orjson

from nlq.backends import EmbeddedBackend
from nlq.methods.rules import calibration
from tests.bench import bench_rules

L2 = 1.0  # penalty on standardized weights (the data has thousands of rows: a light touch)
STEPS = 50
DIGITS = 10


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
        rival = round(calibration.apply(preferred, features(r)), 3)
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


def _round(value: float) -> float:
    return float(f"{float(value):.{DIGITS}g}")


def main() -> None:
    corpora = []
    if bench_rules.TEND_V1.exists():
        corpora.append(("TEND v1, every phrasing", EmbeddedBackend(bench_rules.TEND_V1 / "mongodb_data"),
                        bench_rules.tend_v1_tasks()))
    corpora.append(("the fixtures", EmbeddedBackend(bench_rules.WORLDS), bench_rules.fixture_tasks()))
    scored = []
    for _, backend, tasks in corpora:
        scored += with_readings(bench_rules.predict(backend, tasks)[0], backend)
    preferred = fit(scored)
    alternative = fit_alternative(scored, preferred)
    ece = {name: round(bench_rules.ece([(calibration.apply(model, f), y) for f, y in rows_]), 4)
           for name, model, rows_ in (("preferred", preferred, rows(scored)),
                                      ("alternative", alternative, alternative_rows(scored, preferred)))}
    fitted_on = (f"{len(scored)} scored rules predictions and {len(alternative_rows(scored, preferred))} scored "
                 f"other readings: " + " + ".join(name for name, _, _ in corpora))
    model = {"preferred": preferred, "alternative": alternative, "fitted_on": fitted_on, "fit_ece": ece}
    calibration.PATH.write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"wrote {calibration.PATH} ({fitted_on}; fit-set ECE preferred {ece['preferred']:.3f}, "
          f"alternative {ece['alternative']:.3f})")


if __name__ == "__main__":
    main()
