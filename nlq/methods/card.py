"""`card`: the induced path card plus value-witness lines, one decode, no gate (SAG's
"Path Card" arm, Table V). The decoder instructions of SAG III-C are part of its prompt.

Sees: the question, the path card (`nlq card`: collections, every induced path
with types and presence, dynamic maps collapsed to <*> with example keys) and
the record's value witnesses. One model call (plus at most two repair turns
when the reply does not decode).
"""

from __future__ import annotations

from nlq.methods.prompting import PromptedMethod, card_text, witness_text


class CardMethod(PromptedMethod):
    name = "card"
    prompt_name = "card"
    channels = ("question", "path_card", "value_witnesses")

    def slots(self, task: dict, context, index: dict) -> dict:
        card = context.memo(("card", index["db"]), lambda: card_text(index))
        return {"card": card, "witnesses": witness_text(task.get("witnesses"))}


METHOD = CardMethod()
