"""`sag`: the SAG solver (the paper's Algorithm 1): the path card and value witnesses, then
decode, gate, execute and repair, `attempts` times, and a vote in result space.

Each attempt decodes an answer from the card prompt; the admissibility gate
(:mod:`nlq.gate`) and the read-only execution feedback (:mod:`nlq.feedback`)
list its violations, and the next round shows the model its previous answer
and those violations, up to `rounds` rounds; an attempt keeps its best
candidate and the attempts' candidates vote by result (:mod:`nlq.repair`).
The paper's settings are the defaults: k = 3 attempts, R = 6 rounds, the
400-entry card of a 400-document sample (`nlq index`), 20 s per query.

The ablations of the paper's Table V are :class:`Settings`:

- `ladder`, the cumulative rungs of its §IV-D: `card` (the card alone, one
  ungated decode), `gated-repair` (+ the path gate and execution repair with
  plain empty-result feedback), `value-bisection` (+ value witnesses, the
  value and limit checks, prefix bisection; one attempt), `sag` (+ three
  attempts voted in result space);
- knockouts of one mechanism each: `gate=False`, `witnesses=False`,
  `bisection=False`, `card="top-level"` or `"no-collapse"`;
- `contract=True` (an ablation arm, off by default): the model declares an
  output contract `{columns, rows, order}` before the pipeline, and the
  result is checked against it (the DIA paper's shape declaration).

The prediction records `sag = {ladder, knockouts, rounds, attempts, checks,
witnesses, bisection, card, contract}` (the settings in effect), `confidence`
(the vote share) and `repair` (the stage's report, which `generate` moves to
the record: `rounds` per attempt, `attempts`, `clusters`, `vote_share`...).
No candidate that runs is a typed `no_valid_candidate` failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nlq import io, profiles, repair
from nlq.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq import card as path_card
from nlq.errors import InputError, ModelBadOutputError
from nlq.llm import decode_json, decode_pipeline, pipeline_schema
from nlq.methods.prompting import database, load, shot_turns, witness_text
from nlq.witness import database_of, question_of
from nlq.witness import find as find_witnesses

LADDER = ("card", "gated-repair", "value-bisection", "sag")
CARDS = ("full", "top-level", "no-collapse")
PROMPT = "sag"
CONTRACT_ROWS = ("one", "few", "many")


@dataclass(frozen=True)
class Settings:
    """What the solver does: a rung of the ladder, minus the knocked-out mechanisms.

    `rounds` and `attempts` default to the rung's (`card`: 1 and 1; `gated-repair` and
    `value-bisection`: 6 and 1; `sag`: 6 and 3)."""

    ladder: str = "sag"
    gate: bool = True
    witnesses: bool = True
    bisection: bool = True
    card: str = "full"
    contract: bool = False
    rounds: int | None = None
    attempts: int | None = None
    fail_closed: bool = False
    max_entries: int = path_card.DEFAULT_MAX_ENTRIES
    # every profile element's value (nlq.profiles.resolve), `name` the profile in effect
    profile: dict = field(default_factory=lambda: {**profiles.resolve(), "name": profiles.profile_name()})

    def __post_init__(self):
        if "name" not in self.profile:
            object.__setattr__(self, "profile", {**profiles.resolve(None, self.profile),
                                                 "name": profiles.profile_name()})
        if self.ladder not in LADDER:
            raise InputError(f"unknown ladder rung {self.ladder!r}; choose one of: {', '.join(LADDER)}")
        if self.card not in CARDS:
            raise InputError(f"unknown card {self.card!r}; choose one of: {', '.join(CARDS)}")
        for name in ("rounds", "attempts"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InputError(f"{name} must be at least 1, not {value}")

    @property
    def rung(self) -> int:
        return LADDER.index(self.ladder)

    @property
    def paper_knockouts(self) -> bool:
        """The paper's knockout scopes: --no-gate drops the path check only, --no-witnesses also the
        value and limit checks, the synthetic-_id check and bisection (its reference's switches)."""
        return self.profile.get("knockouts") == "paper"

    @property
    def checks(self) -> tuple:
        """The gate checks in effect."""
        if self.rung == 0:
            return ()
        if not self.gate and not self.paper_knockouts:
            return ()
        checks = ("path",) if self.rung == 1 else repair.GATE_CHECKS
        if self.paper_knockouts:
            if not self.gate:
                checks = tuple(c for c in checks if c != "path")
            if not self.witnesses:
                checks = tuple(c for c in checks if c not in ("value", "limit"))
        return checks

    @property
    def uses_witnesses(self) -> bool:
        return self.witnesses and self.rung >= 2

    @property
    def uses_bisection(self) -> bool:
        if self.paper_knockouts and not self.witnesses:
            return False
        return self.bisection and self.rung >= 2

    @property
    def id_leak(self) -> str:
        """The leaked-_id check in effect: the profile's, off below the value rung and with the
        paper's --no-witnesses (its reference ties the check to value grounding)."""
        if self.paper_knockouts and not self.uses_witnesses:
            return "off"
        return self.profile["id_leak"]

    @property
    def round_budget(self) -> int:
        return self.rounds or (1 if self.rung == 0 else repair.DEFAULT_ROUNDS)

    @property
    def attempt_budget(self) -> int:
        return self.attempts or (repair.DEFAULT_ATTEMPTS if self.rung == 3 else 1)

    def knockouts(self) -> list[str]:
        """The mechanisms removed from the rung, by their flag names."""
        out = [name for name, on in (("no-gate", self.gate), ("no-witnesses", self.witnesses),
                                     ("no-bisection", self.bisection)) if not on]
        return out + ([f"card:{self.card}"] if self.card != "full" else [])

    def options(self, *, timeout: float, max_rows: int, min_vote: float | None = None) -> repair.Options:
        checks = self.checks
        p = self.profile
        return repair.Options(timeout=timeout, max_rows=max_rows, gate=bool(checks), checks=checks,
                              bisection=self.uses_bisection, contract=self.contract, fail_closed=self.fail_closed,
                              min_vote=min_vote, execute=p["execute"], voters=p["voters"],
                              value_check=p["value_check"], check_order=p["check_order"],
                              join_probe=p["join_probe"], id_leak=self.id_leak,
                              literals=p["literals"], hard_max=p["hard_max"],
                              profile=profiles.describe(p.get("name"), p, [e.name for e in profiles.for_command("repair")]))

    def describe(self) -> dict:
        """`prediction.sag`: the settings in effect."""
        return {"ladder": self.ladder, "knockouts": self.knockouts(), "rounds": self.round_budget,
                "attempts": self.attempt_budget, "checks": list(self.checks), "witnesses": self.uses_witnesses,
                "bisection": self.uses_bisection, "card": self.card, "contract": self.contract,
                "fail_closed": self.fail_closed, "id_leak": self.id_leak}


# -- the prompt and the answer format ---------------------------------------------------------

def render_card(index: dict, settings: Settings) -> str:
    """The path card the settings show: full, top-level fields only, or without dynamic-key collapse."""
    p = settings.profile
    return path_card.render(index, max_entries=settings.max_entries, collapse=settings.card != "no-collapse",
                            top_level=settings.card == "top-level", card_cap=p["card_cap"], map_line=p["map_line"],
                            underscore_paths=p["underscore_paths"])


def has_presence(index: dict) -> bool:
    """Whether the index holds presence-wrapped leaves (a path ending in `.presence_state`)."""
    return any(e["path"].endswith(".presence_state") or e["path"] == "presence_state"
               for e in index.get("lattice") or [])


def messages(record: dict, index: dict, settings: Settings, card: str) -> list[dict]:
    """`[system, user]`: the instructions, the card, the witnesses (unless knocked out), the question.

    The card is in the user turn, or with the profile's `card_turn` `system` in the system prompt
    (Algorithm 1's `[SystemPrompt(I_D), Question(x, W_x)]`); `presence_line` adds the instruction
    for presence-wrapped leaves when the index has any. A record without `witnesses` gets them as
    `nlq witness` computes them under the settings' profile."""
    prompt = load(PROMPT)
    question = question_of(record)
    p = settings.profile
    presence = prompt.render("presence") if p["presence_line"] and has_presence(index) else ""
    in_system = p["card_turn"] == "system"
    section = ("system_contract" if settings.contract else "system") + ("_card" if in_system else "")
    system = prompt.render(section, presence=presence, card=card)
    if settings.uses_witnesses:
        witnesses = record.get("witnesses")
        if witnesses is None:
            witnesses = find_witnesses(question, index, hard_max=p["hard_max"], literals=p["literals"])
        user = prompt.render("user_question" if in_system else "user", card=card, witnesses=witness_text(witnesses),
                             question=question)
    else:
        user = prompt.render("user_question_without_witnesses" if in_system else "user_without_witnesses", card=card,
                             question=question)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def contract_schema(collections) -> dict:
    """The response schema of an answer that declares its output contract first."""
    answer = pipeline_schema(collections)
    contract = {"type": "object",
                "properties": {"columns": {"type": "array", "items": {"type": "string"}},
                               "rows": {"type": "string", "enum": list(CONTRACT_ROWS)},
                               "order": {"type": "string"}},
                "required": ["columns", "rows", "order"], "additionalProperties": False}
    return {**answer, "properties": {"contract": contract, **answer["properties"]},
            "required": ["contract", *answer["required"]]}


def decode_with_contract(text: str, collections) -> dict:
    """`{contract, collection, pipeline}` from a reply (ModelBadOutputError when the contract is missing)."""
    answer = decode_json(text)
    declared = answer.get("contract")
    if not isinstance(declared, dict):
        raise ModelBadOutputError('the reply declares no "contract" object before the pipeline')
    rest = {k: v for k, v in answer.items() if k != "contract"}
    return {**decode_pipeline(io.dumps(rest).decode(), collections), "contract": declared}


def feedback_turn(candidate: repair.Candidate) -> str:
    """The repair turn: the previous answer and its violations."""
    return load(PROMPT).render("repair", candidate=repair.shown(candidate), problems=repair.problems(candidate))


def repair_loop(model, settings: Settings | None = None, *, start_from_prediction: bool = False,
                memo=None, examples: list[dict] = ()) -> repair.Loop:
    """The model loop of `settings` over `model` (a ChatClient). `memo(key, build)` caches the
    rendered card per database (a dict-backed one is made when none is given); `examples` are
    example turns (`prompting.shot_turns`) shown after the system message."""
    settings = settings or Settings()
    if memo is None:
        cards: dict = {}

        def memo(key, build):
            if key not in cards:
                cards[key] = build()
            return cards[key]

    def prompt(record: dict, index: dict) -> list[dict]:
        p = settings.profile
        card = memo(("sag-card", index.get("db"), settings.card, settings.max_entries, p["card_cap"], p["map_line"],
                     p["underscore_paths"]), lambda: render_card(index, settings))
        shown = messages(record, index, settings, card)
        return shown[:1] + list(examples) + shown[1:]

    return repair.Loop(model, prompt, decode_with_contract if settings.contract else decode_pipeline,
                       feedback_turn, rounds=settings.round_budget, attempts=settings.attempt_budget,
                       schema=contract_schema if settings.contract else pipeline_schema,
                       start_from_prediction=start_from_prediction,
                       transport_retry=settings.profile["transport_retry"])


# -- the method -------------------------------------------------------------------------------

class SagMethod:
    name = "sag"
    prompt_name = PROMPT
    channels = ("question", "path_card", "execution_feedback")  # + value_witnesses, unless knocked out
    needs_model = True
    needs_backend = True

    def generate(self, task: dict, context) -> dict:
        settings = context.options.get("sag") or Settings()
        index = context.index_for(database_of(task))
        record = {**task, "db": database(task, index)}
        examples, used = shot_turns(task, context, index)
        loop = repair_loop(context.model, settings, memo=context.memo, examples=examples)
        options = settings.options(timeout=context.options.get("timeout") or DEFAULT_TIMEOUT,
                                   max_rows=context.options.get("max_rows") or DEFAULT_MAX_ROWS)
        out = loop(record, context.backend, index, options)
        if out.get("failure"):
            raise repair.NoValidCandidateError(out["failure"]["message"])
        report = out["repair"]
        prediction = {**out["prediction"], "prompt": load(self.prompt_name).ref, "confidence": report["vote_share"],
                      "sag": settings.describe(), "repair": report}
        if settings.uses_witnesses:
            prediction["disclosure"] = ["value_witnesses"]
        if used is not None:
            from nlq.memory.stage import learn

            learned = learn(context.options["memory"], record, report.get("lessons") or [])
            prediction["memory"] = {**used, **({"learned": learned} if learned else {})}
            prediction["disclosure"] = [*prediction.get("disclosure", []), *(["verified_examples"] if examples else [])]
        return prediction


METHOD = SagMethod()
