"""Fit `rules`' calibration model (nlq/methods/rules/calibration.json): `make calibrate`.

    python -m tests.bench.calibrate_rules          # fit on TEND v1 (every phrasing) + the fixtures, write the file

The model is a logistic regression (Platt scaling generalized to the few
signals `nlq.methods.rules.confidence.signals` reads off the IR), fitted by
Newton's method with a small L2 penalty on standardized features, to the
label "EXC = 1 at beta 2". Deterministic: the same predictions give the same
file. Refit whenever the rules change what they predict.
"""

from __future__ import annotations

import numpy as np
import orjson

from nlq.backends import EmbeddedBackend
from nlq.methods.rules import calibration
from tests.bench import bench_rules

CANDIDATES = 3  # other readings per question scored too: their confidence is calibrated as well
L2 = 1.0  # penalty on standardized weights (the data has thousands of rows: a light touch)


def features(record: dict) -> dict[str, float]:
    """The calibration signals a scored record's prediction carries."""
    return ((record.get("prediction") or {}).get("ir") or {}).get("signals") or {}


def rows(records: list[dict]) -> list[tuple[dict, int]]:
    """(signals, EXC) of every scored reading: each prediction and each scored candidate."""
    out = [(features(r), r["score"]["exc"]) for r in records if features(r)]
    out += [(c["signals"], c["exc"]) for r in records for c in r.get("candidates", []) if "exc" in c]
    return out


def fit(records: list[dict]) -> dict:
    """A calibration model fitted to scored records (their predictions and scored candidates)."""
    rows_ = rows(records)
    names = sorted(rows_[0][0])
    x = np.array([[f[n] for n in names] for f, _ in rows_], dtype=float)
    y = np.array([label for _, label in rows_], dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.diag([0.0] + [L2] * len(names))
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return {"features": names, "bias": float(w[0]), "weights": [float(v) for v in w[1:]],
            "mean": [float(v) for v in mean], "scale": [float(v) for v in scale]}


def main() -> None:
    corpora = []
    if bench_rules.TEND_V1.exists():
        corpora.append(("TEND v1, every phrasing", EmbeddedBackend(bench_rules.TEND_V1 / "mongodb_data"),
                        bench_rules.tend_v1_tasks()))
    corpora.append(("the fixtures", EmbeddedBackend(bench_rules.WORLDS), bench_rules.fixture_tasks()))
    scored = []
    for _, backend, tasks in corpora:
        scored += bench_rules.predict(backend, tasks, candidates=CANDIDATES)[0]
    model = fit(scored)
    pairs = [(calibration.apply(model, f), y) for f, y in rows(scored)]
    model["fitted_on"] = (f"{len(pairs)} scored rules readings ({len(scored)} predictions and their scored "
                          f"candidates, K={CANDIDATES}): " + " + ".join(name for name, _, _ in corpora))
    model["fit_ece"] = round(bench_rules.ece(pairs), 4)
    calibration.PATH.write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"wrote {calibration.PATH} ({model['fitted_on']}; fit-set ECE {model['fit_ece']:.3f})")


if __name__ == "__main__":
    main()
