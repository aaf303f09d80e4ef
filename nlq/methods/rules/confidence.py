"""Confidence of a reading: grounding signals, mapped to a calibrated probability.

    signals(ir)                     a few numbers read off the IR (the heuristic score among them)
    confidence(ir)                  P(correct) of the preferred reading, by the stored calibration
                                    model (`calibration.json`, refitted by `make calibrate`)
    alternative_signals(ir, p, k)   an alternative's signals, beside the preferred reading's
                                    confidence `p` and the kind `k` of decision it changes
    alternative_confidence(...)     P(correct) of an alternative reading, by its own model

A reading that left out a word stating a constraint (`ir.constraints`,
accounting.py) claims at most UNRESOLVED_CAP, below the recommended
threshold, whatever the model says.

The preferred reading and its alternatives are calibrated apart: an
alternative competes with a reading the method already preferred, so how
confident that reading is, and which decision the alternative changes
(another collection, another field binding...), are part of its evidence.
"""

from __future__ import annotations

from nlq.methods.rules import calibration
from nlq.methods.rules.accounting import KINDS as CONSTRAINT_KINDS
from nlq.methods.rules.ir import AMBIGUOUS, IR

KINDS = ("collection", "binding", "grouping", "entity")  # the decisions an alternative reading changes
MAX_RIVALS = 3  # rival collections counted (more make little difference)


# The most a reading that leaves out a word stating a constraint may claim (accounting.py):
# such readings answer another question far more often than not (`make bench` reports how
# often they are right), and one must never pass for a confident answer.
UNRESOLVED_CAP = 0.5


def confidence(ir: IR) -> float:
    """The calibrated probability that the preferred reading is what the question asks."""
    return round(of_signals(calibration.model()["preferred"], signals(ir)), 3)


def alternative_confidence(ir: IR, preferred: float, kind: str) -> float:
    """The calibrated probability that an alternative reading (of `kind`, beside a preferred
    reading of confidence `preferred`) is what the question asks."""
    return round(of_signals(calibration.model()["alternative"], alternative_signals(ir, preferred, kind)), 3)


def of_signals(model: dict, found: dict[str, float]) -> float:
    """One calibration model's probability for a reading's signals, at most UNRESOLVED_CAP
    when the reading left a constraint out (what `make calibrate` validates, too)."""
    p = calibration.apply(model, found)
    return min(p, UNRESOLVED_CAP) if unresolved(found) else p


def unresolved(found: dict[str, float]) -> bool:
    """The signals say a word stating a constraint was left out."""
    return any(found.get(f"unused_{kind}", 0.0) for kind in CONSTRAINT_KINDS)


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
        # no clear winner among the collections: its own signal, beside the count of issues
        "ambiguous": float(AMBIGUOUS in ir.issues),
        # the collections the reading could have chosen instead: more rivals, more ways to be wrong
        "rivals": float(min(MAX_RIVALS, ir.collections - 1)),
        "count": float(ir.count),
        "arrays": float(len(ir.unwinds) + len(ir.inferred)),
        "witnesses": float(min(3, ir.witnesses_bound)),
        "alternative": float(ir.alternative),
        "clauses": float(len(ir.filters) + len(ir.group_by) + len(ir.aggregates) + len(ir.sort) + bool(ir.count)),
        # how much the question says and the collection offers: longer questions over wider
        # collections leave more ways to be wrong
        "words": float(ir.words),
        "content": float(ir.content),
        "filters": float(len(ir.filters)),
        "fields": float(ir.offered),
        "witnessed": float(ir.witnessed),
        # another collection reached through a join edge (joins.py): one more decision that can be wrong
        "joins": float(len(ir.joins)),
        # the words stating a constraint the reading left out (accounting.py), by kind
        **{f"unused_{kind}": float(sum(c["kind"] == kind for c in ir.constraints)) for kind in CONSTRAINT_KINDS},
    }


def alternative_signals(ir: IR, preferred: float, kind: str) -> dict[str, float]:
    """An alternative reading's signals, its preferred rival's confidence and its kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of alternative reading {kind!r} (one of {', '.join(KINDS)})")
    return {**signals(ir), "preferred": float(preferred), **{f"kind_{k}": float(k == kind) for k in KINDS}}


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
