"""The calibration models of `rules`' confidence: logistic (Platt-style) maps of a few signals.

    p = 1 / (1 + exp(-(bias + sum(weight[f] * (x[f] - mean[f]) / scale[f]))))

`calibration.json` beside this module holds two such models, `preferred`
(the reading rules answers with) and `alternative` (its other readings,
`--candidates`), fitted by `make calibrate` (tests/bench/calibrate_rules.py)
on scored readings: which were right (EXC at beta 2), over every phrasing
of each question of both TEND v1 splits (disjoint databases). The file
records what it was fitted on, each model's fit-set ECE and, under
`validation`, the out-of-database figures of a cross-validation grouped by
database (what to expect on a database nobody fitted on). A missing or
malformed file is an error, not a silent default.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import orjson

from nlq.errors import NlqError

PATH = Path(__file__).with_name("calibration.json")
# The confidence at or above which docs/RULES.md recommends trusting a rules answer
# without a fallback (its out-of-database precision is reported by `make bench`).
RECOMMENDED_THRESHOLD = 0.8
MODELS = ("preferred", "alternative")


@functools.lru_cache(maxsize=1)
def model() -> dict:
    """The stored calibration models, `{"preferred": model, "alternative": model, ...}` (read once)."""
    try:
        stored = orjson.loads(PATH.read_bytes())
        for part in MODELS:
            check(stored[part], part)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NlqError(f"the rules calibration model {PATH.name} cannot be read: {exc}",
                       hint="reinstall nlq, or refit it with `make calibrate`") from None
    return stored


def check(stored: dict, part: str | None = None) -> None:
    """ValueError (KeyError, TypeError) unless `stored` is one logistic model `apply` can read;
    `part` names it in the message."""
    if not (len(stored["features"]) == len(stored["weights"]) == len(stored["mean"]) == len(stored["scale"])):
        raise ValueError((f"{part}: " if part else "") + "features, weights, mean and scale differ in length")
    float(stored["bias"])


def apply(stored: dict, signals: dict[str, float]) -> float:
    """The calibrated probability for one reading's signals, by one model (`model()["preferred"]`, say)."""
    z = float(stored["bias"])
    for name, weight, mean, scale in zip(stored["features"], stored["weights"], stored["mean"], stored["scale"]):
        z += weight * (float(signals[name]) - mean) / scale
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
