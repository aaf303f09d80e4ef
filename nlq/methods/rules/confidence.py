"""Confidence of a reading: grounding signals, mapped to a calibrated probability.

    signals(ir)     a few numbers read off the IR (the heuristic score among them)
    confidence(ir)  P(correct) from the signals, by the stored calibration model
                    (`calibration.json`, refitted by `make calibrate`)
"""

from __future__ import annotations

from nlq.methods.rules import calibration
from nlq.methods.rules.ir import AMBIGUOUS, IR


def confidence(ir: IR) -> float:
    """The calibrated probability that the reading is what the question asks."""
    return round(calibration.apply(calibration.model(), signals(ir)), 3)


def signals(ir: IR) -> dict[str, float]:
    """The features the calibration model reads (all from the IR, none from the answer)."""
    misses = len(ir.missed)
    return {
        "heuristic": heuristic(ir),
        "grounded_share": ir.grounded_share,
        "margin": max(0.0, min(1.0, ir.collection_margin)),
        "missed": float(misses),
        "unplaced": float(len(ir.unresolved) - misses),
        "issues": float(len(ir.issues)),
        "arrays": float(len(ir.unwinds) + len(ir.inferred)),
        "witnesses": float(min(3, ir.witnesses_bound)),
        "alternative": float(ir.alternative),
        "clauses": float(len(ir.filters) + len(ir.group_by) + len(ir.aggregates) + len(ir.sort) + bool(ir.count)),
    }


def heuristic(ir: IR) -> float:
    """Additive grounding signals minus penalties, clipped to [0.15, 0.97]."""
    score = 0.36
    score += 0.10 * max(0.0, min(1.0, ir.collection_margin))
    score += 0.35 * ir.grounded_share
    score += min(0.10, 0.05 * ir.witnesses_bound)
    # an unplaced word that names data elsewhere is a missed reference; one that names
    # nothing in the database is mostly the verb of the relation ('produced', 'opened'):
    # a question has one such word for free, more of them mean a looser reading
    misses, others = len(ir.missed), len(ir.unresolved) - len(ir.missed)
    score -= min(0.25, 0.10 * misses + 0.03 * max(0, others - 1)) if misses or others > 1 else -0.05
    for issue in ir.issues:
        # an ambiguous collection matters less (not little: such readings still fail
        # half the time) when every content word found its place
        score -= 0.08 if issue == AMBIGUOUS and not ir.unresolved else 0.12
    score -= 0.03 * min(2, len(ir.unwinds))  # each array level is a grain the question may not mean
    score -= 0.06 * min(2, len(ir.inferred))  # all the more when the question never names the array
    if not ir.mentions:
        score -= 0.05  # nothing in the question named a field: the reading rests on defaults
    if len(ir.outputs) > 3:
        score -= 0.10  # a long projection usually means stray mentions were taken as outputs
    return round(max(0.15, min(0.97, score)), 3)
