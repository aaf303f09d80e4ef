"""nlq generate: add a `prediction` to each task record."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click, io_options, question_limit, with_progress
from nlq import generate, io, methods
from nlq import index as grounding


@click.command("generate", epilog="""\b
Example:
  nlq index --data fixtures/worlds --db racing -o out/racing.index.jsonl
  nlq witness --index out/racing.index.jsonl fixtures/tasks/racing.jsonl \\
    | nlq generate --method rules --index out/racing.index.jsonl | head -1
""")
@io_options
@question_limit
@click.option("-m", "--method", type=click.Choice(methods.names()), default="rules", show_default=True,
              help="Generation method.")
@click.option("--index", "index_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Grounding index (JSONL from `nlq index`), one document per database.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None,
              help="Abstain (typed `abstained` failure) below this confidence.")
def cli(input, output, append, strict, progress, limits, max_question_chars, method, index_path, min_confidence):
    """Add `prediction = {collection, pipeline, method, confidence, ir, disclosure}`.

    Methods never see `gold`, `gold_mql` or `labels`; the prediction records the
    channels it observed in `disclosure`. A question the method cannot answer
    gets a typed `failure` and flows on. A record without `witnesses` gets
    them first, as `nlq witness` would compute them.
    """
    with errors_as_click():
        indexes = grounding.load(index_path)
        context = generate.Context(indexes, min_confidence=min_confidence)
        records = with_progress(io.read_records(input, strict=strict, stage="generate", **limits), progress, "generate")
        io.write_records(generate.run(records, method, context, max_question_chars=max_question_chars), output,
                         append=append)
