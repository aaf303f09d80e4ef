"""`schema`: the question plus collection names and document field names in dot
notation (no types, counts, stored values or samples; nothing below a dynamic
map, whose keys are data), one call (the paper's Schema Direct).
"""

from __future__ import annotations

from nlq.methods.prompting import PromptedMethod, field_names_text


class SchemaMethod(PromptedMethod):
    name = "schema"
    prompt_name = "schema"
    channels = ("question", "collection_names", "field_names")

    def slots(self, task: dict, context, index: dict) -> dict:
        return {"fields": context.memo(("schema", index["db"]), lambda: field_names_text(index))}


METHOD = SchemaMethod()
