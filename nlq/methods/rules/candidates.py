"""Other readings of a question: the K best distinct alternatives to rules' answer.

    alternatives(question, witnesses, index, grounding, k, preferred) -> [candidate, ...]
    readings(question, witnesses, index, grounding, preferred)        -> [(kind, candidate), ...]

Each alternative changes one decision of the preferred reading: another
collection (the runner-ups of `resolve_collection`), another field binding
(the words of one bound field read as the next-best field), another grouping
reading ('by X' and the values named before an aggregate not taken as group
keys), or a bare entity shown with its identifier beside its name. Every
alternative is rendered, deduplicated by its pipeline and given the
calibrated confidence of an alternative (`alternative_confidence`: its own
signals, the preferred reading's confidence and the kind of decision it
changes); the most confident of each kind is kept, at most K, most confident
first — for `nlq repair` to gate, execute and vote on, no model (that vote
weighs each result by the probability that one of the readings returning it
is right, their confidences combined as a noisy-OR).

One per kind, because readings that change the same decision agree with each
other for a shared reason (two field bindings that both drop the same filter
return the same rows) and would outvote the preferred reading without being
independent evidence (`make bench` measures `repair` over them against
rules alone).
"""

from __future__ import annotations

from nlq.methods.rules.confidence import alternative_confidence, alternative_signals, confidence
from nlq.methods.rules.ir import IR, Field
from nlq.methods.rules.passes import State, read
from nlq.methods.rules.render import render
from nlq.methods.rules.schema import Grounding

MAX_COLLECTIONS = 2   # runner-up collections tried
MAX_BINDINGS = 4      # bound fields whose words are re-read as another field


def alternatives(question: str, witnesses: list[dict], index: dict, grounding: Grounding, k: int,
                 preferred: State) -> list[dict]:
    """The `k` most confident distinct readings other than `preferred`, one per kind, as
    `{collection, pipeline, confidence, reading, signals}`, most confident first."""
    found = sorted(readings(question, witnesses, index, grounding, preferred),
                   key=lambda c: -c[1]["confidence"])  # stable: ties keep the order readings were tried
    best = {}
    for kind, candidate in found:
        best.setdefault(kind, candidate)  # the most confident reading of each kind
    return sorted(best.values(), key=lambda c: -c["confidence"])[:k]


def readings(question: str, witnesses: list[dict], index: dict, grounding: Grounding,
             preferred: State) -> list[tuple[str, dict]]:
    """Every distinct reading other than `preferred` (kind, candidate), in the order they are
    tried: what `alternatives` chooses from, and what `make calibrate` fits their model on."""
    seen = {_key(preferred.ir.collection, render(preferred.ir))}
    rival = confidence(preferred.ir)
    found = []
    for kind, label, reading in _readings(preferred):
        ir = read(question, witnesses, index, grounding, **reading).ir
        pipeline = render(ir)
        key = _key(ir.collection, pipeline)
        if key in seen:
            continue
        seen.add(key)
        found.append((kind, {"collection": ir.collection, "pipeline": pipeline,
                             "confidence": alternative_confidence(ir, rival, kind), "reading": label,
                             "signals": alternative_signals(ir, rival, kind)}))
    return found


def _readings(preferred: State):
    """(kind, label, State.of keywords) of each alternative reading, in a fixed order."""
    ir = preferred.ir
    for collection, _ in preferred.ranked[1:1 + MAX_COLLECTIONS]:
        yield "collection", f"collection {collection}", {"collection": collection}
    for f in _bound_fields(ir)[:MAX_BINDINGS]:
        yield "binding", f"not {f.mql}", {"collection": ir.collection, "avoid": frozenset({f.mql})}
    if ir.group_by:
        yield "grouping", "ungrouped", {"collection": ir.collection, "variant": frozenset({"ungrouped"})}
    yield "entity", "identified", {"collection": ir.collection, "variant": frozenset({"identified"})}


def _bound_fields(ir: IR) -> list[Field]:
    """The fields the question's words were bound to, in question order."""
    out: list[Field] = []
    for m in ir.mentions:
        if m.field not in out:
            out.append(m.field)
    return out


def _key(collection: str, pipeline: list) -> str:
    return collection + repr(pipeline)
