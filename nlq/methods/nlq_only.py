"""`nlq-only`: the question alone, one call (TEND's channel-purity floor and
contamination probe). No collection or field name reaches the model: not in
the prompt, not in the response schema (the collection is a free string), not
in the repair feedback. A reply naming a collection the database lacks is a
typed `model_bad_output`, never mapped to a real one.
"""

from __future__ import annotations

from nlq.methods.prompting import PromptedMethod


class NlqOnlyMethod(PromptedMethod):
    name = "nlq-only"
    prompt_name = "nlq-only"
    channels = ("question",)
    disclose_collections = False

    def slots(self, task: dict, context, index: dict) -> dict:
        return {}


METHOD = NlqOnlyMethod()
