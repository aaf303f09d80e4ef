"""`sampled`: the question plus 3 raw documents per collection, one call (the
paper's Sampled-doc Direct). The documents are the backend's deterministic
seeded sample, so a rerun sends the same prompt and replays from the cache.
"""

from __future__ import annotations

from nlq.methods.prompting import PromptedMethod, database, documents_rendering, sample_documents_text


class SampledMethod(PromptedMethod):
    name = "sampled"
    prompt_name = "sampled"
    documents = 3
    channels = ("question", "collection_names", "sample_documents")
    needs_backend = True

    def slots(self, task: dict, context, index: dict) -> dict:
        db = database(task, index)
        rendering = documents_rendering(context)
        text = context.memo((self.name, db, rendering),
                            lambda: sample_documents_text(context.backend, db, index, self.documents, rendering))
        return {"documents": text, "n": self.documents}


METHOD = SampledMethod()
