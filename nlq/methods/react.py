"""`react`: the collection names, then a bounded thought/action/observation loop
(the paper's ReAct baseline). Each model turn is one JSON action:

- `execute` runs a read-only pipeline on a named collection; the observation
  is `rows=N; first 5: <rows>` (at most 2,000 characters) or `ERROR: <message>`;
- `submit` ends the loop with the answer.

The budget (`--max-steps`, default 50) counts model turns, repair turns
included; using it up without a submission is a typed `budget_exhausted`
failure, never a forced answer (also when the last turns were garbled: the
budget cut their repair turns short). The prediction records `steps` (model turns)
and `trace` (each action and its observation).

With the profile element `react` = `paper` (nlq.profiles), the loop follows
the paper's reference: the system prompt also states how answers are graded
and the output conventions, the observations of the last NUDGE_STEPS turns
say how many are left and ask for a submission, and the turns that repair an
undecodable reply do not count toward the budget.
"""

from __future__ import annotations

from nlq import io
from nlq.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, BudgetExhaustedError, ModelBadOutputError, NlqError
from nlq.llm import chat_decoded, decode_json
from nlq.llm.decode import REPAIR_TURNS
from nlq.methods.prompting import collection_names, collections_text, database, load, with_shots
from nlq.text import escape_invisible
from nlq.witness import question_of

DEFAULT_MAX_STEPS = 50
OBSERVATION_CHARS = 2000
FIRST_ROWS = 5
ACTIONS = ("execute", "submit")
NUDGE_STEPS = 3


def action_schema(collections) -> dict:
    return {"type": "object",
            "properties": {"thought": {"type": "string"}, "action": {"type": "string", "enum": list(ACTIONS)},
                           "collection": {"type": "string", "enum": sorted(collections)},
                           "pipeline": {"type": "array", "items": {"type": "object"}}},
            "required": ["thought", "action", "collection", "pipeline"], "additionalProperties": False}


def decode_action(text: str) -> dict:
    """`{thought, action, collection, pipeline}` from a reply (ModelBadOutputError otherwise)."""
    action = decode_json(text)
    if action.get("action") not in ACTIONS:
        raise ModelBadOutputError(f"\"action\" must be \"execute\" or \"submit\", not {action.get('action')!r}")
    if not isinstance(action.get("collection"), str):
        raise ModelBadOutputError("\"collection\" must be a collection name (a string)")
    pipeline = action.get("pipeline")
    if not isinstance(pipeline, list) or not all(isinstance(stage, dict) for stage in pipeline):
        raise ModelBadOutputError("\"pipeline\" must be an array of stage documents")
    return {"thought": action.get("thought") if isinstance(action.get("thought"), str) else "",
            "action": action["action"], "collection": action["collection"], "pipeline": pipeline}


def observe(rows: list) -> str:
    """`rows=N; first 5: <rows>`, cut at OBSERVATION_CHARS."""
    shown = " ".join(escape_invisible(io.dumps(row).decode()) for row in rows[:FIRST_ROWS])  # keys are data
    text = f"rows={len(rows)}; first {FIRST_ROWS}: {shown or '(none)'}"
    cut = " ...(cut)"
    return text if len(text) <= OBSERVATION_CHARS else text[:OBSERVATION_CHARS - len(cut)] + cut


class ReactMethod:
    name = "react"
    prompt_name = "react"
    channels = ("question", "collection_names", "execution_observations")
    needs_model = True
    needs_backend = True

    def generate(self, task: dict, context) -> dict:
        index = context.index_for(task.get("db"))
        db = database(task, index)
        names = collection_names(index)
        budget = context.options.get("max_steps") or DEFAULT_MAX_STEPS
        paper = (context.options.get("profile") or {}).get("react") == "paper"
        prompt = load(self.prompt_name)
        messages = prompt.messages(question=question_of(task), collections=collections_text(index),
                                   max_steps=budget, conventions=prompt.render("conventions") if paper else "")
        messages, shown = with_shots(messages, task, context, index, answer=lambda collection, pipeline: {
            "thought": "A verified answer to this question.", "action": "submit", "collection": collection,
            "pipeline": pipeline})
        schema = action_schema(names)
        trace, turns = [], 0
        while turns < budget:
            allowed = REPAIR_TURNS if paper else min(REPAIR_TURNS, budget - turns - 1)
            try:
                decoded = chat_decoded(context.model, messages, decode_action, schema=schema, repairs=allowed)
            except ModelBadOutputError as exc:
                if allowed < REPAIR_TURNS:  # the budget, not the model, cut the repair turns short
                    raise BudgetExhaustedError(f"react: no pipeline submitted within {budget} model turns "
                                               f"({len(trace)} actions; the last reply was not a valid action: "
                                               f"{exc.message})") from None
                raise
            turns += 1 if paper else 1 + decoded.repairs
            action, messages = decoded.value, decoded.messages
            if action["collection"] not in names:
                observation = (f"ERROR: no collection {action['collection']!r} in this database "
                               f"(collections: {', '.join(names)})")
            elif action["action"] == "submit":
                trace.append({**action, "observation": None})
                return {"collection": action["collection"], "pipeline": action["pipeline"], "prompt": prompt.ref,
                        "steps": turns, "trace": trace, **shown}
            else:
                observation = self._execute(context, db, action)
            trace.append({**action, "observation": observation})
            content = prompt.render("observation", observation=observation)
            if paper and 0 < budget - turns <= NUDGE_STEPS:
                content += "\n" + prompt.render("nudge", left=budget - turns)
            messages = messages + [{"role": "user", "content": content}]
        raise BudgetExhaustedError(f"react: no pipeline submitted within {budget} model turns "
                                   f"({len(trace)} actions)")

    @staticmethod
    def _execute(context, db: str, action: dict) -> str:
        try:
            rows = context.backend.aggregate(db, action["collection"], action["pipeline"],
                                             timeout=context.options.get("timeout") or DEFAULT_TIMEOUT,
                                             max_rows=context.options.get("max_rows") or DEFAULT_MAX_ROWS)
        except BackendError:  # the database is gone: that stops the run, it is not an observation
            raise
        except NlqError as exc:
            return f"ERROR: {exc.message.splitlines()[0][:OBSERVATION_CHARS - 7]}"
        return observe(rows)


METHOD = ReactMethod()
