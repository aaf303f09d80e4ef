"""`rules`: LLM-free generation over an intermediate representation.

Question -> IR -> pipeline, using only the grounding index (lattice, value
index) and the task's witnesses — the induced index replaces text2ql's
hand-written schema configuration. The package follows the flow:

    schema.py       fields of every collection, with the words that name them
    question.py     the question's words (the tokenizer shared with witness) and the spans naming fields
    grounding.py    the collection, witnessed literals bound to stored forms, attribute bags
    joins.py        another collection a question reaches through a join edge, as a virtual array
    filters.py      comparisons, text patterns, null vs missing, empty arrays, flags, anti-joins, $or
    dates.py        dates in the question compared with a field of dates, in the form it stores them
    aggregation.py  count, sum, average, min, max, coordinated statistics, rounding, HAVING
    grouping.py     'for each', 'by X', date parts, the top document per group
    ordering.py     order phrases, superlatives, top N, the default order
    outputs.py      what is shown, arrays unwound, maps expanded, issues
    passes.py       PASSES: the ordered tuple of passes over one State -> IR
    render.py       the IR as an aggregation pipeline
    confidence.py   the reading's confidence

General English patterns only: no per-database or per-question rules.
"""

from __future__ import annotations

from nlq.errors import AbstainedError, NlqError
from nlq.methods.rules.accounting import describe
from nlq.methods.rules.confidence import confidence, signals
from nlq.methods.rules.ir import IR, Field, Filter, Mention
from nlq.methods.rules.candidates import alternatives
from nlq.methods.rules.passes import PASSES, build_ir, read
from nlq.methods.rules.render import physical, render
from nlq.methods.rules.schema import join_edge, prepare, schema_of, split_name


class RulesMethod:
    name = "rules"
    channels = ("question", "witnesses", "grounding_index")
    calibrated = True  # `confidence` is a calibrated probability of being right (`make calibrate`)

    def generate(self, task: dict, context) -> dict:
        question = task.get("question")
        if not isinstance(question, str) or not question.strip():
            raise NlqError("the task has no question")
        index = context.index_for(task.get("db"))
        grounding = context.memo(("rules", task.get("db")), lambda: prepare(index))
        witnesses = task.get("witnesses") or []
        state = read(question, witnesses, index, grounding)
        ir = state.ir
        pipeline = render(ir)
        conf = confidence(ir)
        unresolved = [{"word": c["word"], "kind": c["kind"]} for c in ir.constraints]
        minimum = context.options.get("min_confidence")
        if minimum is not None and conf < minimum:
            left = f" (left out: {describe(unresolved)})" if unresolved else ""
            raise AbstainedError(f"confidence {conf:.2f} is below --min-confidence {minimum:.2f}{left}",
                                 unresolved=unresolved)
        prediction = {"collection": ir.collection, "pipeline": pipeline, "method": self.name,
                      "confidence": conf, "unresolved": unresolved, "ir": {**ir.to_json(), "signals": signals(ir)}}
        k = context.options.get("candidates") or 0
        others = [{**c, "method": self.name} for c in alternatives(question, witnesses, index, grounding, k, state)] \
            if k else []
        memory = context.options.get("memory")
        if memory is not None:
            prediction, others = remembered(memory, task, index, prediction, others, context)
        if k:
            prediction["candidates"] = others[:k] if memory is None else others[:k + 1]
        return prediction


# The memory's candidate replaces rules' own reading only when it is the more probable of the two and
# more likely right than wrong: between two answers that are both probably wrong, rules keeps its own,
# whose shortcomings its `unresolved` words already say.
MEMORY_FLOOR = 0.5


def remembered(memory, task: dict, index: dict, prediction: dict, others: list, context) -> tuple[dict, list]:
    """Rules' reading beside the memory's candidate (the nearest verified entry adapted to the
    question): the more probable answers (the memory's only from MEMORY_FLOOR on), the other becomes
    a candidate; the prediction records the memory consulted (`memory = {file, entries, chosen}`)."""
    from nlq.memory import candidate

    found = candidate(memory, task, index, reading=prediction, own_confidence=prediction["confidence"],
                      cache=context.memo(("memory", memory.name), dict))
    record = {"file": memory.name, "entries": [found["memory"]["entry"]] if found else [], "chosen": False}
    if found is None:
        return {**prediction, "memory": record}, others
    found = {**found, "method": prediction["method"]}
    if found["confidence"] > prediction["confidence"] and found["confidence"] >= MEMORY_FLOOR:
        own = {k: prediction[k] for k in ("collection", "pipeline", "confidence", "method")}
        chosen = {k: v for k, v in found.items() if k not in ("reading", "signals")}
        # what the adapted query leaves out of this question is said as rules says its own
        left_out = [{"word": word, "kind": "value"} for word in found["memory"]["unplaced"]]
        return {**chosen, "ir": prediction["ir"], "memory": {**record, "chosen": True, **found["memory"]},
                "signals": found["signals"], "unresolved": left_out}, [{**own, "reading": "rules"}, *others]
    return {**prediction, "memory": record}, [found, *others]


METHOD = RulesMethod()

__all__ = ["METHOD", "IR", "Field", "Filter", "Mention", "PASSES", "build_ir", "render", "confidence", "physical",
           "prepare", "schema_of", "split_name", "join_edge"]
