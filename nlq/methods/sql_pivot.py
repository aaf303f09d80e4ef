"""`sql-pivot`: the `sampled` channel (3 raw documents per collection), two calls:
first the model writes a SQL sketch of the question, then translates its own
sketch into MQL in the same conversation (the paper's SQL Pivot: no gold SQL,
relational schema, converter or execution feedback). The sketch is kept in the
prediction's `sql`.
"""

from __future__ import annotations

from nlq.errors import ModelBadOutputError
from nlq.methods.prompting import (collection_names, database, decode_answer, documents_rendering, load,
                                   prediction, sample_documents_text)
from nlq.witness import question_of


class SqlPivotMethod:
    name = "sql-pivot"
    prompt_name = "sql-pivot"
    documents = 3
    channels = ("question", "collection_names", "sample_documents")
    needs_model = True
    needs_backend = True

    def generate(self, task: dict, context) -> dict:
        index = context.index_for(task.get("db"))
        db = database(task, index)
        rendering = documents_rendering(context)
        documents = context.memo(("sampled", db, rendering),
                                 lambda: sample_documents_text(context.backend, db, index, self.documents, rendering))
        prompt = load(self.prompt_name)
        messages = prompt.messages(question=question_of(task), documents=documents, n=self.documents)
        sketch = context.model.chat(messages).text.strip()
        if not sketch:
            raise ModelBadOutputError("the model wrote no SQL sketch (empty reply to step 1)")
        translate = {"role": "user", "content": prompt.render("translate")}
        conversation = messages + [{"role": "assistant", "content": sketch}, translate]
        decoded = decode_answer(context.model, conversation, collection_names(index))
        return prediction(decoded, prompt, sql=sketch)


METHOD = SqlPivotMethod()
