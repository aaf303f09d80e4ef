"""Other readings of a question: the K best distinct alternatives to rules' answer.

    alternatives(question, witnesses, index, grounding, k) -> [candidate, ...]

Each alternative changes one decision of the preferred reading: another
collection (the runner-ups of `resolve_collection`), another field binding
(the words of one bound field read as the next-best field), another grouping
reading ('by X' and the values named before an aggregate not taken as group
keys), or a bare entity shown with its identifier beside its name. Every
alternative is rendered, deduplicated by its pipeline and scored by the same
calibrated confidence (its `alternative` signal set); the most confident of
each kind is kept, at most K, most confident first — for `nlq repair` to
gate, execute and vote on, no model.

One per kind, because readings that change the same decision agree with each
other for a shared reason (two field bindings that both drop the same filter
return the same rows) and would outvote the preferred reading without being
independent evidence: on TEND v1 (every phrasing), `repair` over the 3 most
confident readings of any kind lost 0.7 points of EXC against rules alone;
over one per kind it gains 0.1 (`make bench`).
"""

from __future__ import annotations

from nlq.methods.rules.confidence import confidence, signals
from nlq.methods.rules.ir import IR, Field
from nlq.methods.rules.passes import State, read
from nlq.methods.rules.render import render
from nlq.methods.rules.schema import Grounding

MAX_COLLECTIONS = 2   # runner-up collections tried
MAX_BINDINGS = 4      # bound fields whose words are re-read as another field


def alternatives(question: str, witnesses: list[dict], index: dict, grounding: Grounding, k: int,
                 preferred: State) -> list[dict]:
    """The `k` most confident distinct readings other than `preferred`, as
    `{collection, pipeline, confidence, reading, signals}`, most confident first."""
    seen = {_key(preferred.ir.collection, render(preferred.ir))}
    found = []
    for kind, label, reading in _readings(preferred):
        ir = read(question, witnesses, index, grounding, **reading).ir
        pipeline = render(ir)
        key = _key(ir.collection, pipeline)
        if key in seen:
            continue
        seen.add(key)
        found.append((kind, {"collection": ir.collection, "pipeline": pipeline, "confidence": confidence(ir),
                             "reading": label, "signals": signals(ir)}))
    found.sort(key=lambda c: -c[1]["confidence"])  # stable: ties keep the order readings were tried
    best = {}
    for kind, candidate in found:
        best.setdefault(kind, candidate)  # the most confident reading of each kind
    return sorted(best.values(), key=lambda c: -c["confidence"])[:k]


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
