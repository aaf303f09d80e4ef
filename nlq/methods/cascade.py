"""`cascade`: rules first; a model method answers only what rules cannot answer with confidence.

    nlq generate --method cascade --fallback M --threshold 0.8 --index INDEX tasks.jsonl

`rules` runs first (no model, about a millisecond). Its answer stands when
its calibrated confidence is at least the threshold and the admissibility
gate (`nlq.gate`) finds no violation; otherwise the fallback method M
answers (text2ql's deterministic-first routing, with an honest confidence and
a gate in place of a fixed score). The prediction is the answering method's,
with `method: "cascade"` and `cascade = {path, reason, rules_confidence,
threshold, fallback}`: `path` is "rules" or "fallback", so `nlq report --by
prediction.cascade.path` slices a run by who answered.
"""

from __future__ import annotations

from nlq import gate, methods
from nlq.errors import InputError, NlqError
from nlq.methods.rules import METHOD as RULES


class CascadeMethod:
    name = "cascade"

    channels = RULES.channels  # the fallback's are added to the prediction's disclosure when it answers

    @staticmethod
    def delegates(options: dict) -> tuple[str, ...]:
        """The methods this one may hand a task to (so it needs their model or backend)."""
        return (options["fallback"],) if options.get("fallback") else ()

    def generate(self, task: dict, context) -> dict:
        options = context.options
        fallback_name, threshold = options.get("fallback"), options.get("threshold")
        if not fallback_name or threshold is None:
            raise InputError("the cascade needs --fallback METHOD and --threshold T")
        if fallback_name == self.name:
            raise InputError("the cascade cannot fall back to itself")
        fallback = methods.get(fallback_name)
        try:
            answer = RULES.generate(task, context)
            reason = _rejection(answer, threshold, context.index_for(task.get("db")), task.get("question", ""))
        except NlqError as exc:  # rules abstained or failed: the fallback answers
            answer, reason = None, f"rules failed: {exc.type}"
        route = {"threshold": threshold, "fallback": fallback_name,
                 "rules_confidence": answer.get("confidence") if answer else None}
        if reason is None:
            return {**answer, "method": self.name, "cascade": {**route, "path": "rules", "reason": "confident"}}
        prediction = fallback.generate(task, context)
        return {**prediction, "method": self.name, "answered_by": prediction.get("method", fallback.name),
                "cascade": {**route, "path": "fallback", "reason": reason}, "disclosure": list(fallback.channels)}


def _rejection(answer: dict, threshold: float, index: dict, question: str) -> str | None:
    """Why rules' answer does not stand (None when it does)."""
    if answer["confidence"] < threshold:
        return f"confidence {answer['confidence']:.3f} below {threshold}"
    violations = gate.run({"collection": answer["collection"], "pipeline": answer["pipeline"]}, index, question)
    if violations:
        return f"gate: {violations[0].check}: {violations[0].message}"
    return None


METHOD = CascadeMethod()
